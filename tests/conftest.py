"""Shared fixtures: fake AWS credentials, the SQS emulator (in-process moto by default, or a
running LocalStack with `--emulator=localstack`), replay queues wired with real redrive policies,
the replayer built directly, and `app.handler` loaded as Lambda loads it.

The helpers behind these fixtures (queues, the real redrive, draining, request recorders) live in
`tests/integration/harness.py`, so test modules can import their types; choosing the emulator is
`tests/emulation.py`.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import hypothesis
import pytest
from dlq_replay.sqs.client import sqs_client
from emulation import Emulator, add_emulator_option, register_markers, select_for_emulator
from integration.harness import (
    REGION,
    AppHandle,
    RecordingLog,
    ReplayFactory,
    ReplayQueues,
    Sqs,
)
from moto import mock_aws

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

ROOT = Path(__file__).resolve().parents[1]

# Hypothesis's per-example deadline (200 ms) is a timed assertion: on a loaded 2-core machine a
# property over a file or a parser missed it with no fault in the code. Timing is bench/'s.
hypothesis.settings.register_profile("dlq-replay-untimed", deadline=None)
hypothesis.settings.load_profile("dlq-replay-untimed")

# Every variable of the function's environment, plus what would point boto3 somewhere else, and
# the terminal width the operator CLI's output follows: a developer's shell must not leak into a
# test.
_FUNCTION_VARIABLES = (
    "MAIN_QUEUE_URL",
    "OPERATOR_QUEUE_URL",
    "MAX_ATTEMPTS",
    "BACKOFF_BASE_SECONDS",
    "BACKOFF_MULTIPLIER",
    "BACKOFF_CAP_SECONDS",
    "JITTER",
    "REPLAY_COUNT_ATTRIBUTE",
    "ALLOWED_SOURCE_QUEUE_ARNS",
    "LOG_MESSAGE_BODY",
    "PARK_NOTIFICATION_TOPIC_ARN",
    "MAX_MESSAGE_AGE_SECONDS",
    "SEND_CONCURRENCY",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_SQS",
    "AWS_ENDPOINT_URL_SNS",
    "AWS_ENDPOINT_URL_CLOUDFORMATION",
    "AWS_ENDPOINT_URL_LAMBDA",
    "AWS_ENDPOINT_URL_CLOUDWATCH",
    # boto3's name for EventBridge's endpoint (its service id); _EVENTS is read by nothing.
    "AWS_ENDPOINT_URL_EVENTBRIDGE",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_SFN",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "COLUMNS",
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fake credentials and a region for every test, so nothing can reach a real account; the
    audit trail's local file (commands run without a table) in a directory of the test's own
    (beside its tmp_path, which stays the test's)."""
    for name in (*_FUNCTION_VARIABLES, "DLQ_REPLAY_AUDIT_TABLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def pytest_addoption(parser: pytest.Parser) -> None:
    add_emulator_option(parser)


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    select_for_emulator(config, items)


@pytest.fixture(scope="session")
def emulator(pytestconfig: pytest.Config) -> Emulator:
    return Emulator.from_config(pytestconfig)


@pytest.fixture
def aws(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The emulator every boto3 client made inside talks to: an in-process moto, or LocalStack
    through AWS_ENDPOINT_URL with an account of this test's own (its queues are deleted after)."""
    if emulator.endpoint_url is None:
        with mock_aws():
            yield
        return
    with emulator.isolated_account(monkeypatch):
        yield


@pytest.fixture
def setup_client(aws: None) -> SQSClient:
    """The test's own client (setup, producers, assertions)."""
    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def sqs(setup_client: SQSClient) -> Sqs:
    return Sqs(setup_client)


@pytest.fixture
def replay_client(aws: None) -> SQSClient:
    """The replayer's client, configured as in production; recorders and stubs go on this one."""
    return sqs_client(region_name=REGION)


@pytest.fixture
def queues(sqs: Sqs) -> ReplayQueues:
    """Standard main -> DLQ (maxReceiveCount 1) -> operator queue."""
    return sqs.create_replay_queues("orders")


@pytest.fixture
def fifo_queues(sqs: Sqs) -> ReplayQueues:
    """The same wiring with .fifo queues (content-based deduplication off)."""
    return sqs.create_replay_queues("orders", fifo=True)


@pytest.fixture
def replay_log() -> RecordingLog:
    return RecordingLog()


@pytest.fixture
def make_replay(
    replay_client: SQSClient, replay_log: RecordingLog, emulator: Emulator
) -> ReplayFactory:
    return ReplayFactory(replay_client, replay_log, emulator.endpoint_url)


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch, aws: None) -> Iterator[AppHandle]:
    """The handler module; its settings cache is cleared before and after each test."""
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "replay"))
    handle = AppHandle(importlib.import_module("app"))
    handle.reset()
    yield handle
    handle.reset()


@pytest.fixture
def atomic_receive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto's receives, deletes and visibility changes atomic, as SQS's are: moto 5 takes
    no lock in `SQSBackend`, so two threads polling one queue can both take the same visible
    message (a duplicate SQS itself would not produce), and a receive iterating a queue's
    in-flight set can meet a delete changing it ("Set changed size during iteration"). They
    are serialised; long polling waits outside the lock, so pollers still overlap."""
    from moto.sqs.models import SQSBackend

    lock = threading.RLock()  # the batch calls take it again through the single ones
    receive = SQSBackend.receive_message

    def receive_message(
        self: Any,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> Any:
        deadline = time.monotonic() + (wait_seconds_timeout or 0)
        while True:
            with lock:
                found = receive(
                    self, queue_name, count, 0, visibility_timeout, message_attribute_names
                )
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)

    def serialised(name: str) -> None:
        original = getattr(SQSBackend, name)

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:
                return original(self, *args, **kwargs)

        monkeypatch.setattr(SQSBackend, name, call)

    monkeypatch.setattr(SQSBackend, "receive_message", receive_message)
    for name in ("delete_message", "change_message_visibility"):
        serialised(name)
