"""What the benchmarks' in-memory AWS endpoints share (bench/sqs_http.py, bench/lambda_http.py,
bench/events_http.py): a threading HTTP server on a free local port that holds every request a
fixed latency, counts the TCP connections its clients open, and answers keep-alive HTTP/1.1
without logging."""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeServer(ThreadingHTTPServer):
    """The server: `endpoint_url` to point a client at, `connections` opened so far."""

    daemon_threads = True
    # socketserver's default backlog is 5: a burst of connections (a pool filling up) would
    # lose SYNs, and each loss costs the client a 1 s retransmission, a delay AWS never adds.
    request_queue_size = 128

    def __init__(self, handler: type[BaseHTTPRequestHandler], latency: float) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.endpoint_url = f"http://127.0.0.1:{self.server_port}"
        self.latency = latency
        self.lock = threading.Lock()
        self.connections = 0

    def start(self) -> None:
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class FakeRequest(BaseHTTPRequestHandler):
    """One connection: counted when it opens, answered without delay on the wire."""

    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects
    server: FakeServer

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1
        # Headers and body go out in two writes: without this, Nagle holds the second until
        # the client's delayed ACK (40 ms), which would be measured as latency.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args
