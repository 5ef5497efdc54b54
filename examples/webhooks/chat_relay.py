"""A webhook receiver that posts tvbo's drift events to a chat channel (docs/events.md,
"A worked example"): it verifies each delivery's signature, drops duplicates by
`Tvbo-Event-Id`, and posts a line for each `optimum-moved` and `tracking-lost` to a
chat's incoming webhook (Slack, Mattermost and Teams take `{"text": ...}`).

    TVBO_SECRET=whsec_... CHAT_URL=https://chat.example/hooks/... python chat_relay.py
"""

from __future__ import annotations

import json
import os
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import tvbo

SECRET = os.environ["TVBO_SECRET"]
CHAT_URL = os.environ["CHAT_URL"]
PORT = int(os.environ.get("RELAY_PORT", "8787"))
# Event ids already relayed. Keep them in a table with a unique key when more than one
# relay runs.
seen: set[str] = set()


def line(event: dict) -> str | None:
    """The chat line for an event, or None for kinds this relay does not post."""
    if event["kind"] == "optimum-moved":
        to = event["data"]["to"]
        return (
            f"Session {event['session']}: best setting moved to {to['params']} "
            f"(predicted {to['mean']:.3g})"
        )
    if event["kind"] == "tracking-lost":
        return f"Session {event['session']} is no longer keeping up with its optimum"
    return None


class Relay(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            tvbo.verify_signature(SECRET, body, self.headers.get("Tvbo-Signature", ""))
        except tvbo.SignatureError:
            self.send_response(401)
            self.end_headers()
            return
        event_id = self.headers["Tvbo-Event-Id"]
        if event_id not in seen:
            text = line(json.loads(body))
            if text:
                request = urllib.request.Request(
                    CHAT_URL,
                    json.dumps({"text": text}).encode(),
                    {"Content-Type": "application/json"},
                )
                # An error here answers 500: tvbo retries the delivery later.
                urllib.request.urlopen(request, timeout=5)
            seen.add(event_id)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", PORT), Relay).serve_forever()
