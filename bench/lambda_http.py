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
import time
from urllib.parse import unquote, urlsplit

from fake_http import FakeRequest, FakeServer

_INVOCATIONS = "/2015-03-31/functions/"


class FakeLambda(FakeServer):
    """The server: `invocations` counts what it accepted, by function name or ARN."""

    def __init__(self, latency: float) -> None:
        super().__init__(_Request, latency)
        self.invocations: dict[str, int] = {}
        self.payload_bytes = 0
        self._ids = itertools.count()

    def accept(self, function: str, payload: bytes) -> str:
        """Book an accepted asynchronous invocation; its request id."""
        with self.lock:
            self.invocations[function] = self.invocations.get(function, 0) + 1
            self.payload_bytes += len(payload)
            number = next(self._ids)
        return f"00000000-0000-4000-8000-{number:012d}"


class _Request(FakeRequest):
    server: FakeLambda

    def do_POST(self) -> None:  # noqa: N802 - http.server calls it by this name
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
        sent = {**(headers or {}), "Content-Type": "application/json"}
        if status >= 400:
            sent["x-amzn-ErrorType"] = "InvalidRequestContentException"
        self.answer(status, body, sent)
