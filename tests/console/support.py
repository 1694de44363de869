"""The console served in process on the demo's embedded moto server, and plain HTTP to it."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import secrets
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlq_replay.cli.console import Connection
from dlq_replay.cli.console.app import create_app
from dlq_replay.cli.console.state import Console
from dlq_replay.cli.main import build_parser
from dlq_replay.demo.emulator import Queues
from werkzeug.serving import make_server

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

PARK_REASON = "dlq-replay-park-reason"


@dataclass
class Served:
    """A console served in this process. `url` is where its pages live, the token's path
    included, without the final slash (`url + "/audit"`); `origin` is the server alone;
    `requests` every request: when (monotonic), its path as the server received it, status."""

    url: str
    token: str
    console: Console
    origin: str = ""
    requests: list[tuple[float, str, int]] = field(default_factory=list)

    @property
    def start_url(self) -> str:
        """What `dlq-replay console` prints."""
        return f"{self.url}/"

    def asked(self, path: str, since: float = 0.0) -> int:
        """How many requests for `path` (under the token) came after `since` (a
        `time.monotonic()`) and were answered 200."""
        wanted = f"/{self.token}{path}"
        return sum(
            1
            for at, seen, status in self.requests[:]
            if at > since and seen == wanted and status == 200
        )


def recording(app: Any, requests: list[tuple[float, str, int]]) -> Any:
    """The WSGI app, noting each request's path (as the server received it), when it came and
    the status of its answer."""

    def recorded(environ: dict[str, Any], start_response: Any) -> Any:
        at, path = time.monotonic(), str(environ.get("PATH_INFO", ""))

        def answer(status: str, headers: Any, exc_info: Any = None) -> Any:
            requests.append((at, path, int(status[:3])))
            return start_response(status, headers, exc_info)

        return app(environ, answer)

    return recorded


@contextmanager
def console_of(endpoint: str, queues: Queues | None, *options: str) -> Iterator[Console]:
    """The state of `dlq-replay console` on these queues (None: `options` name them, e.g.
    --stack), as its command builds it, in a temporary folder; its actions stopped after."""
    named = [] if queues is None else [
        "--main-queue-url", queues.main, "--dlq-url", queues.dlq,
        "--operator-queue-url", queues.operator,
    ]  # fmt: skip
    argv = ["console", "--endpoint-url", endpoint, *named, *options]
    args = build_parser(["console"]).parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        console = Console(
            Connection.from_args(args),
            Path(folder),
            token=secrets.token_urlsafe(24),
            csrf=secrets.token_urlsafe(24),
            hosts=frozenset({"localhost", "127.0.0.1"}),
            read_only=args.read_only,
        )
        try:
            yield console
        finally:
            console.jobs.stop_all(grace=2)
            close = getattr(console, "close", None)
            if callable(close):
                close()


@contextmanager
def served(endpoint: str, queues: Queues | None, *options: str) -> Iterator[Served]:
    """`dlq-replay console` on these queues (see `console_of`), on a free port, in a thread of
    this process."""
    with console_of(endpoint, queues, *options) as console:
        requests: list[tuple[float, str, int]] = []
        server = make_server(
            "127.0.0.1", 0, recording(create_app(console), requests), threaded=True
        )
        origin = f"http://127.0.0.1:{server.server_port}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield Served(f"{origin}/{console.token}", console.token, console, origin, requests)
        finally:
            console.jobs.stop_all(grace=2)
            server.shutdown()
            server.server_close()


def park(sqs: SQSClient, url: str, bodies: list[str], reason: str = "max-attempts") -> None:
    for start in range(0, len(bodies), 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {
                    "Id": str(i),
                    "MessageBody": body,
                    "MessageAttributes": {
                        PARK_REASON: {"DataType": "String", "StringValue": reason}
                    },
                }
                for i, body in enumerate(bodies[start : start + 10])
            ],
        )


def depth(sqs: SQSClient, url: str) -> int:
    found = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(found["ApproximateNumberOfMessages"]) + int(
        found["ApproximateNumberOfMessagesNotVisible"]
    )


@dataclass
class Answer:
    status: int
    headers: Any
    body: str


class Browser:
    """urllib with a cookie jar: what a page's requests carry, and nothing else. `base` is
    where the pages live (`Served.url`); the jar shows that the console sets no cookie."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def request(
        self,
        path: str,
        data: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        body = urllib.parse.urlencode(data, doseq=True).encode() if data is not None else None
        request = urllib.request.Request(self.base + path, data=body, headers=headers or {})
        try:
            with self.opener.open(request, timeout=30) as answer:
                return Answer(answer.status, answer.headers, answer.read().decode())
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.headers, error.read().decode())

    def csrf(self) -> str:
        found = re.search(r'data-csrf="([^"]+)"', self.request("/").body)
        assert found
        return found.group(1)

    def json(self, path: str) -> Any:
        return json.loads(self.request(path).body)


def spawned(command: list[str], state: Path) -> subprocess.Popen[str]:
    """`command` in a process of its own, its output piped as text, its audit trail and
    receive memory in `state` (never the operator's own)."""
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(state)},
    )
