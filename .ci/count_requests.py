"""Count the requests of a schemathesis NDJSON report: prints the total on stdout and the
answers by status on stderr (for the CI log)."""

import collections
import json
import sys

statuses = collections.Counter()
with open(sys.argv[1]) as report:
    for line in report:
        event = json.loads(line)
        scenario = event.get("ScenarioFinished")
        if not scenario:
            continue
        for interaction in scenario["recorder"].get("interactions", {}).values():
            response = interaction.get("response")
            statuses[response["status_code"] if response else "no answer"] += 1
print(", ".join(f"{status}: {count}" for status, count in sorted(statuses.items(), key=str)),
      file=sys.stderr)
print(sum(statuses.values()))
