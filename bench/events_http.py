"""An in-memory EventBridge `ListTargetsByRule` endpoint over HTTP for the benchmarks, beside
bench/sqs_http.py and bench/lambda_http.py: EventBridge's JSON protocol (`POST /` with
`X-Amz-Target: AWSEvents.ListTargetsByRule`, what boto3 speaks to EventBridge), every request
held a fixed latency before it is answered.

The replay reads the rule of every EventBridge record it delivers (the target's input settings
and group id), once per rule: the server answers the targets it was given for a rule and keeps
the books (reads by rule). Any other action, or an unknown rule, is refused (400).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_LIST_TARGETS = "AWSEvents.ListTargetsByRule"


class FakeEvents(ThreadingHTTPServer):
    """The server: `rules` maps a rule's name to its targets (as `ListTargetsByRule` lists
    them); `reads` counts the reads by rule name."""

    daemon_threads = True
    request_queue_size = 128  # as FakeSqs: a burst of connections must not lose SYNs

    def __init__(self, latency: float, rules: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        super().__init__(("127.0.0.1", 0), _Request)
        self.endpoint_url = f"http://127.0.0.1:{self.server_port}"
        self.latency = latency
        self.rules = {name: list(targets) for name, targets in rules.items()}
        self.lock = threading.Lock()
        self.reads: dict[str, int] = {}
        self.connections = 0

    def start(self) -> None:
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Request(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects
    server: FakeEvents

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        time.sleep(self.server.latency)
        if self.headers.get("X-Amz-Target") != _LIST_TARGETS:
            self._answer(400, {"__type": "UnknownOperationException", "message": "not faked"})
            return
        rule = request.get("Rule", "")
        if rule not in self.server.rules:
            self._answer(400, {"__type": "ResourceNotFoundException", "message": f"{rule}?"})
            return
        with self.server.lock:
            self.server.reads[rule] = self.server.reads.get(rule, 0) + 1
        self._answer(200, {"Targets": self.server.rules[rule]})

    def _answer(self, status: int, answer: Mapping[str, Any]) -> None:
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args
