"""A stand-in for a chat service's incoming webhook: prints each message it is sent."""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Stub(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        print("stub chat got:", json.loads(body)["text"], flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(os.environ.get("STUB_PORT", "8788"))), Stub).serve_forever()
    sys.exit(0)
