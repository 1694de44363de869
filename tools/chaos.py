"""A fault-injecting HTTP proxy in front of an SQS emulator, on 127.0.0.1.

Each request draws, from a seeded random source, one of: a 500 `InternalError` (not
forwarded), a throttle in SQS's own error shape (botocore parses it as `RequestThrottled`; not
forwarded), a connection reset before forwarding, a reset after forwarding (the call took
effect, the client sees an error: the ambiguous failure), a latency spike, or nothing.
Successful answers are passed through byte for byte. The proxy stops itself after
`max_seconds`, so a forgotten one never outlives its run.

    proxy = ChaosProxy("http://127.0.0.1:5000", Faults(server_error=0.05), seed=1)
    endpoint = proxy.start()     # http://127.0.0.1:<free port>
    ...
    proxy.stop(); print(proxy.injected)
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# Hop-by-hop headers are the proxy's own business; every other header passes unchanged.
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


@dataclass(frozen=True)
class Faults:
    """The chance, per request, of each fault (their sum at most 1)."""

    server_error: float = 0.0
    throttle: float = 0.0
    reset_before: float = 0.0
    reset_after: float = 0.0
    spike: float = 0.0
    spike_seconds: float = 1.0

    def __post_init__(self) -> None:
        chances = [getattr(self, f.name) for f in fields(self) if f.name != "spike_seconds"]
        if any(c < 0 for c in chances) or sum(chances) > 1:
            raise ValueError(f"fault chances must be >= 0 and sum to at most 1: {self}")

    @classmethod
    def evenly(cls, total: float, spike_seconds: float = 1.0) -> Faults:
        """`total` of the requests faulted, shared equally by the five kinds."""
        each = total / 5
        return cls(each, each, each, each, each, spike_seconds)

    def draw(self, rng: random.Random) -> str | None:
        roll = rng.random()
        for kind in FAULT_KINDS:
            chance: float = getattr(self, kind)
            if roll < chance:
                return kind
            roll -= chance
        return None


FAULT_KINDS = ("server_error", "throttle", "reset_before", "reset_after", "spike")

# SQS's JSON-protocol errors: `__type` names the error; the query-compatible header gives
# botocore the code SQS's query API used, which is what callers match on.
_ERRORS = {
    "server_error": (500, "InternalError", "Receiver", "chaos: internal error"),
    "throttle": (400, "RequestThrottled", "Sender", "chaos: rate exceeded"),
}


class ChaosProxy:
    """The proxy; `injected` counts the faults it has injected, by kind."""

    def __init__(
        self, upstream: str, faults: Faults, *, seed: int, max_seconds: float = 900.0
    ) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.faults = faults
        self.max_seconds = max_seconds
        self.injected: Counter[str] = Counter()
        self.requests = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._stopped = threading.Event()

    def start(self) -> str:
        """Serve on a free port of 127.0.0.1 from a daemon thread; returns the endpoint URL."""
        self._server = _Server(self)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        threading.Thread(target=self._expire, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_port}"

    def stop(self) -> None:
        if self._server is not None and not self._stopped.is_set():
            self._stopped.set()
            self._server.shutdown()
            self._server.server_close()

    def _expire(self) -> None:
        if not self._stopped.wait(self.max_seconds):
            self.stop()

    def draw(self) -> str | None:
        with self._lock:
            self.requests += 1
            fault = self.faults.draw(self._rng)
            if fault is not None:
                self.injected[fault] += 1
            return fault


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, proxy: ChaosProxy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.proxy = proxy

    def handle_error(self, request: object, client_address: object) -> None:
        """A client gone mid-answer (a killed worker) is part of the game; anything else is
        reported as socketserver does."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        self._relay()

    def do_GET(self) -> None:
        self._relay()

    def log_message(self, format: str, *args: object) -> None:
        del format, args

    def _relay(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        proxy = self.server.proxy
        fault = proxy.draw()
        if fault in _ERRORS:
            self._answer_error(*_ERRORS[fault])
            return
        if fault == "reset_before":
            self._reset()
            return
        if fault == "spike":
            time.sleep(proxy.faults.spike_seconds)
        status, headers, answer = self._forward(body)
        if fault == "reset_after":
            self._reset()  # the emulator did the work; the client never hears of it
            return
        self.send_response_only(status)
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(*self.server.proxy.upstream, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _answer_error(self, status: int, code: str, fault: str, message: str) -> None:
        body = json.dumps({"__type": f"com.amazonaws.sqs#{code}", "message": message}).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("x-amzn-query-error", f"{code};{fault}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _reset(self) -> None:
        """Close with a TCP reset (linger 0), no answer at all."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()
