"""Which SQS emulator the suite runs against: one suite, two emulators.

moto (the default) runs in process and is fast; LocalStack (`--emulator=localstack`, started by
`make test-localstack`, its endpoint in DLQ_REPLAY_LOCALSTACK_ENDPOINT) has what moto lacks:
`DeadLetterQueueSourceArn`, message move tasks, `AWSTraceHeader` through `SendMessageBatch`, and
attribute bytes counted in the 1 MiB limit.

Markers (registered here): `emulator` selects a test for the LocalStack run (every other test
runs on moto only); `moto_only(reason=...)` skips a test that relies on moto (its internals, or a
fault only it produces) on LocalStack; `localstack_only(reason=...)` skips a test of a behaviour
moto lacks on moto.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import boto3
import pytest

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

T = TypeVar("T")
MOTO = "moto"
LOCALSTACK = "localstack"
ENDPOINT_VARIABLE = "DLQ_REPLAY_LOCALSTACK_ENDPOINT"


MARKERS = (
    "emulator: runs on every SQS emulator; `make test-localstack` selects these",
    "moto_only(reason): relies on moto; skipped with --emulator=localstack",
    "localstack_only(reason): a behaviour moto lacks; skipped on moto",
)


def register_markers(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)


def add_emulator_option(parser: pytest.Parser) -> None:
    parser.addoption(
        "--emulator",
        choices=(MOTO, LOCALSTACK),
        default=MOTO,
        help=f"SQS emulator at the AWS boundary; {LOCALSTACK} needs {ENDPOINT_VARIABLE} "
        "(make test-localstack sets it) and runs only the tests marked `emulator`",
    )


def _reason(marker: pytest.Mark) -> str:
    reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else None)
    if not reason:
        raise pytest.UsageError(f"@pytest.mark.{marker.name} needs a reason")
    return str(reason)


def select_for_emulator(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On LocalStack keep only the tests marked `emulator`, and skip `moto_only` ones; on moto
    skip `localstack_only` ones. Every skip says why."""
    on_localstack = config.getoption("emulator") == LOCALSTACK
    if on_localstack:
        dropped = [item for item in items if item.get_closest_marker("emulator") is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item.get_closest_marker("emulator") is not None]
    other = "moto_only" if on_localstack else "localstack_only"
    for item in items:
        marker = item.get_closest_marker(other)
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"{other}: {_reason(marker)}"))


@dataclass(frozen=True, slots=True)
class Emulator:
    """The emulator of this run; `endpoint_url` is None for the in-process moto."""

    name: str
    endpoint_url: str | None

    @classmethod
    def from_config(cls, config: pytest.Config) -> Emulator:
        name = str(config.getoption("emulator"))
        if name == MOTO:
            return cls(name, None)
        endpoint = os.environ.get(ENDPOINT_VARIABLE)
        if not endpoint:
            raise pytest.UsageError(
                f"--emulator={LOCALSTACK} needs {ENDPOINT_VARIABLE} (make test-localstack)"
            )
        return cls(name, endpoint.rstrip("/"))

    @property
    def sets_dead_letter_source(self) -> bool:
        """LocalStack, like SQS, records the source queue on a dead-lettered message."""
        return self.name == LOCALSTACK

    @contextmanager
    def isolated_account(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        """Point every boto3 client at LocalStack under an account of the test's own.

        LocalStack is one server for the whole run and takes a 12-digit access key id as the
        account: queue names cannot clash and no test sees another's messages. Its queues are
        deleted afterwards."""
        assert self.endpoint_url is not None
        account = str(10**11 + secrets.randbelow(9 * 10**11))
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", account)
        monkeypatch.setenv("AWS_ENDPOINT_URL", self.endpoint_url)
        # boto3's default session caches the credentials it resolved first.
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
        try:
            yield
        finally:
            delete_queues(boto3.client("sqs", endpoint_url=self.endpoint_url))


def delete_queues(client: SQSClient) -> None:
    """Delete every queue of the client's account (LocalStack, between tests)."""
    for page in client.get_paginator("list_queues").paginate():
        for url in page.get("QueueUrls", []):
            client.delete_queue(QueueUrl=url)


def eventually(
    check: Callable[[], T | None], what: str, *, after: float, within: float = 10.0
) -> T:
    """The first truthy result of `check`, polled from `after` seconds on: a delay or a
    visibility timeout ends on time in moto, on a tick of its own a little later in LocalStack.
    Fails the test naming `what` when `within` more seconds pass without one."""
    time.sleep(after)
    deadline = time.monotonic() + within
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.2)
