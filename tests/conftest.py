"""Shared fixtures: fake AWS credentials, an in-process moto SQS, replay queues wired with real
redrive policies, the replayer built directly, and `app.handler` loaded as Lambda loads it.

The helpers behind these fixtures (queues, the real redrive, draining, request recorders) live in
`tests/integration/harness.py`, so test modules can import their types.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.batch import LambdaReplay, sqs_client
from dlq_replay.replayer import Clock, Replayer
from dlq_replay.settings import Settings
from integration.harness import (
    REGION,
    FakeContext,
    LowestRandom,
    RecordingLog,
    ReplayQueues,
    Sqs,
)
from moto import mock_aws

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from dlq_replay.backoff import RandomSource
    from mypy_boto3_sqs import SQSClient

ROOT = Path(__file__).resolve().parents[1]

# Every variable of DESIGN.md §2, plus what would point boto3 somewhere else: a developer's
# shell must not leak into a test.
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
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_SQS",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a region for every test, so nothing can reach a real account."""
    for name in _FUNCTION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@pytest.fixture
def aws() -> Iterator[None]:
    """An in-process moto: every boto3 client made inside talks to it."""
    with mock_aws():
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


class ReplayFactory:
    """Builds `LambdaReplay(Replayer(...))` from environment-style settings."""

    def __init__(self, client: SQSClient, log: RecordingLog) -> None:
        self._client = client
        self._log = log

    def __call__(
        self,
        queues: ReplayQueues,
        env: Mapping[str, str | None] | None = None,
        *,
        client: SQSClient | None = None,
        clock: Clock | None = None,
        rng: RandomSource | None = None,
    ) -> LambdaReplay:
        """Defaults: the queues' main and operator URLs, full jitter drawing 0 (no delay), so a
        replay is visible at once. A None value in `env` removes the variable."""
        merged: dict[str, str | None] = {
            "MAIN_QUEUE_URL": queues.main.url,
            "OPERATOR_QUEUE_URL": queues.operator.url,
            "BACKOFF_BASE_SECONDS": "1",
            **(env or {}),
        }
        settings = Settings.from_env({k: v for k, v in merged.items() if v is not None})
        replayer = Replayer(
            settings,
            client or self._client,
            logger=self._log,
            clock=clock or time.time,
            rng=rng or LowestRandom(),
        )
        return LambdaReplay(replayer)


@pytest.fixture
def make_replay(replay_client: SQSClient, replay_log: RecordingLog) -> ReplayFactory:
    return ReplayFactory(replay_client, replay_log)


class AppHandle:
    """`functions/replay/app.py` as Lambda imports it, with typed access for the tests."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def handler(self, event: Mapping[str, Any]) -> PartialItemFailureResponse:
        handler: Callable[[dict[str, Any], FakeContext], PartialItemFailureResponse] = (
            self._module.handler
        )
        return handler(dict(event), FakeContext())

    def reset(self) -> None:
        """Forget the cached replay (settings and client), as a new execution environment."""
        self._module._replay.cache_clear()

    @property
    def logger(self) -> Logger:
        logger: Logger = self._module.logger
        return logger


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch, aws: None) -> Iterator[AppHandle]:
    """The handler module; its settings cache is cleared before and after each test."""
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "replay"))
    handle = AppHandle(importlib.import_module("app"))
    handle.reset()
    yield handle
    handle.reset()
