"""A stand-in for the Serverless Application Repository's API on 127.0.0.1, for `sam publish`
run as a command: it records every request (method, path, JSON body) and answers from a
script. boto3 is pointed at it with AWS_ENDPOINT_URL_SERVERLESSAPPLICATIONREPOSITORY.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_SERVERLESSAPPLICATIONREPOSITORY"


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # percent-decoded
    query: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the x-amzn-ErrorType of an error answer


Script = Callable[[Request], Answer]


@contextmanager
def fake_sar(script: Script) -> Iterator[tuple[str, list[Request]]]:
    """Serve `script` on a free port; yields the endpoint and the list of requests made."""
    requests: list[Request] = []

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            request = Request(self.command, unquote(url.path), url.query, json.loads(raw or b"{}"))
            requests.append(request)
            answer = script(request)
            payload = json.dumps(answer.body).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if answer.error:
                self.send_header("x-amzn-ErrorType", answer.error)
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads the recorded requests instead."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
