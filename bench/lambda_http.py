"""An in-memory Lambda `Invoke` endpoint over HTTP for the benchmarks, beside bench/sqs_http.py:
Lambda's REST protocol (`POST /2015-03-31/functions/<name>/invocations`, what boto3 speaks to
Lambda), every request held a fixed latency before it is answered, as through a network round
trip.

An asynchronous invocation (`X-Amz-Invocation-Type: Event`) is answered as Lambda answers one
it accepted: 202, no body, and the request id in `x-amzn-RequestId`. Nothing runs: the server
only keeps the books a benchmark checks (invocations by function, payload bytes received).
Any other invocation type is refused (400), so a benchmark cannot measure the wrong call.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

_INVOCATIONS = "/2015-03-31/functions/"


class FakeLambda(ThreadingHTTPServer):
    """The server: `invocations` counts what it accepted, by function name or ARN."""

    daemon_threads = True
    request_queue_size = 128  # as FakeSqs: a burst of connections must not lose SYNs

    def __init__(self, latency: float) -> None:
        super().__init__(("127.0.0.1", 0), _Request)
        self.endpoint_url = f"http://127.0.0.1:{self.server_port}"
        self.latency = latency
        self.lock = threading.Lock()
        self.invocations: dict[str, int] = {}
        self.payload_bytes = 0
        self.connections = 0
        self._ids = itertools.count()

    def accept(self, function: str, payload: bytes) -> str:
        """Book an accepted asynchronous invocation; its request id."""
        with self.lock:
            self.invocations[function] = self.invocations.get(function, 0) + 1
            self.payload_bytes += len(payload)
            number = next(self._ids)
        return f"00000000-0000-4000-8000-{number:012d}"

    def start(self) -> None:
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Request(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects
    server: FakeLambda

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        payload = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path).path
        time.sleep(self.server.latency)
        if not (path.startswith(_INVOCATIONS) and path.endswith("/invocations")):
            self._answer(404, b'{"Type":"User","message":"no such resource"}')
            return
        if self.headers.get("X-Amz-Invocation-Type") != "Event":
            self._answer(400, b'{"Type":"User","message":"the fake takes Event invocations"}')
            return
        function = unquote(path[len(_INVOCATIONS) : -len("/invocations")])
        request_id = self.server.accept(function, payload)
        self._answer(202, b"", {"x-amzn-RequestId": request_id})

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status >= 400:
            self.send_header("x-amzn-ErrorType", "InvalidRequestContentException")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args
