#!/usr/bin/env python3
"""pgbench scripts of one suggest/observe round's writes, as tvbo commits them on
PostgreSQL (src/store/commit.rs: the version bump, the suggestion, the response-time
sample, its summary and bucket, the call and its bucket; then the bump, the suggestion's
status, the observation, its bucket, the call and its bucket), to measure what
PostgreSQL itself allows on this machine without tvbo (docs/performance.md, "What bounds
PostgreSQL"). The timeline-bucket upsert is read from commit.rs, so the scripts follow
it; the other statements are written here against the same tables, keys and indexes
with representative values (the version bump sets the counters a round changes and
finds the row by its key, without commit.rs's `version = $2` predicate, which the same
index lookup answers). Writes three files into the directory given (default: the current one):

- round.sql: one round, a statement per round trip (what tvbo does today);
- round-pipelined.sql: the same statements, each transaction in one round trip
  (pgbench's pipeline, what data-modifying CTEs or a pipeline would give);
- batch.sql: ten sessions' rounds in one transaction, one multi-row statement per
  table, pipelined (what a writer that commits the changes queued from many sessions
  together would give). One pgbench transaction is ten rounds.
- batch-savepoints.sql: ten sessions' suggests in one transaction and their observes in
  the next, each change's statements as round.sql's, one per round trip, under a
  savepoint of its own (what such a writer gives with commit.rs's statements unchanged,
  each change rolled back alone on failure). One pgbench transaction is ten rounds.

Session `pgb-<k>` is pgbench's client k (batch.sql: clients own ten sessions each).
Standard library only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

COMMIT_RS = Path(__file__).resolve().parents[2] / "src" / "store" / "commit.rs"
BATCH = 10
NOW = "1795968339710869"


def record_in_bucket() -> tuple[str, str, str]:
    """commit.rs's RECORD_IN_BUCKET: its head, its VALUES and its ON CONFLICT clause
    (BUCKET_COLUMNS and MERGE_INTO_BUCKET filled in)."""
    text = COMMIT_RS.read_text()

    def literal(pattern: str) -> str:
        found = re.search(pattern, text, re.S)
        if found is None:
            sys.exit(f"{pattern!r} not found in {COMMIT_RS}")
        return re.sub(r"\\\n\s*", "", found.group(1)).replace('\\"', '"')

    columns = literal(r'const BUCKET_COLUMNS: &str = "(.*?)";')
    values = literal(r'static RECORD_IN_BUCKET.*?VALUES (.*?) \{MERGE_INTO_BUCKET\}"')
    conflict = literal(r'const MERGE_INTO_BUCKET: &str = "ON CONFLICT (.*?)";')
    return f"INSERT INTO timeline_buckets ({columns})", values, conflict


def session(j: int | None) -> str:
    return "('pgb-' || :k)" if j is None else f"('pgb-' || (:base + {j}))"


def suggestion(j: int | None) -> str:
    return f"({session(j)[1:-1]} || '-' || :seq)"


def statements(members: list[int | None]) -> tuple[list[str], list[str]]:
    """The suggest's and the observe's transactions for these sessions."""
    head, values, conflict = record_in_bucket()

    def rows(row) -> str:
        return ", ".join(row(j) for j in members)

    def bucket(series: str, value: str) -> str:
        def row(j):
            args = [session(j), f"'{series}'", "0", ":seq", value,
                    "NULL::double precision", "NULL::bigint", "0", "0"]
            v = values
            for i in range(9, 0, -1):
                v = v.replace(f"${i}", args[i - 1])
            return v
        return f"{head} VALUES {rows(row)} ON CONFLICT {conflict};"

    ids = rows(session)

    def bump(samples: int, seq: str) -> str:
        return (
            "UPDATE sessions SET version = version + 1, state = COALESCE(NULL, state), "
            f"suggest_count = suggest_count + 1, call_count = call_count + 1, "
            f"sample_count = sample_count + {samples}, observation_count = CASE WHEN "
            f"{seq} > observation_count THEN {seq} ELSE observation_count END, "
            f"last_activity_micros = {NOW}, last_activity_t = 1.0 "
            f"WHERE id IN ({ids}) RETURNING call_count, sample_count;"
        )

    def call(kind: str) -> str:
        return (
            "INSERT INTO calls (session_id, kind, t, dataset_size, compute_seconds, "
            "recorded_micros, snapshot) VALUES "
            + rows(lambda j: f"({session(j)}, '{kind}', 1.0, 3, 0.00005, {NOW}, "
                   "'{\"dataset_size\":3}')")
            + " RETURNING id;"
        )

    suggest = [
        "BEGIN;",
        bump(1, "0"),
        "INSERT INTO suggestions (id, session_id, ordinal, params, unit, arm, issued_t, t, "
        "created_micros, status) VALUES "
        + rows(lambda j: f"({suggestion(j)}, {session(j)}, :seq, '{{\"x\":0.2016}}', "
               f"'[0.2016]', NULL, 1.0, 1.0, {NOW}, 'pending')") + ";",
        "INSERT INTO response_times (session_id, n, seconds, recorded_micros) VALUES "
        + rows(lambda j: f"({session(j)}, 2, 0.15, {NOW})") + " RETURNING id;",
        "INSERT INTO response_time_summaries (session_id, n, count, total_seconds) VALUES "
        + rows(lambda j: f"({session(j)}, 2, 1, 0.15)")
        + " ON CONFLICT (session_id, n) DO UPDATE SET count = response_time_summaries.count"
        " + 1, total_seconds = response_time_summaries.total_seconds"
        " + excluded.total_seconds;",
        bucket("s", "0.15"),
        call("suggest"),
        bucket("c", "3"),
        "COMMIT;",
    ]
    observe = [
        "BEGIN;",
        bump(0, ":seq"),
        f"UPDATE suggestions SET status = 'observed' WHERE id IN ({rows(suggestion)});",
        "INSERT INTO observations (session_id, seq, suggestion_id, params, unit, value, t, "
        "measured_micros, regret, active, removed_micros, removed_reason, created_micros, "
        "removed_t, regret_estimate, metadata) VALUES "
        + rows(lambda j: f"({session(j)}, :seq, {suggestion(j)}, '{{\"x\":0.2016}}', "
               f"'[0.2016]', 0.5, 1.0, NULL, NULL, TRUE, NULL, NULL, {NOW}, NULL, NULL, "
               "NULL)") + ";",
        bucket("o", "0.5"),
        call("observe"),
        bucket("c", "3"),
        "COMMIT;",
    ]
    return suggest, observe


def pipelined(*transactions: list[str]) -> list[str]:
    out: list[str] = []
    for t in transactions:
        out += ["\\startpipeline", *t, "\\endpipeline"]
    return out


def savepointed(members: list[int]) -> list[str]:
    """The suggests of `members` in one transaction, then their observes in another,
    each change under a savepoint."""
    out: list[str] = []
    for which in (0, 1):
        out.append("BEGIN;")
        for j in members:
            change = statements([j])[which][1:-1]
            out += ["SAVEPOINT change;", *change, "RELEASE change;"]
        out.append("COMMIT;")
    return out


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    seq = "\\set seq random(1, 1000000000000)"
    one = statements([None])
    many = statements(list(range(BATCH)))
    files = {
        "round.sql": ["\\set k :client_id", seq, *one[0], *one[1]],
        "round-pipelined.sql": ["\\set k :client_id", seq, *pipelined(*one)],
        "batch.sql": [f"\\set base :client_id * {BATCH}", seq, *pipelined(*many)],
        "batch-savepoints.sql": [
            f"\\set base :client_id * {BATCH}",
            seq,
            *savepointed(list(range(BATCH))),
        ],
    }
    for name, lines in files.items():
        (out / name).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
