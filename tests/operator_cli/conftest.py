"""Fixtures of the operator CLI tests: fake credentials, in-process moto, wired queues, and the
client the command uses (to hook failures into, or to stub)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay import ops_commands
from dlq_replay.batch import SQS_CLIENT_CONFIG
from moto import mock_aws

from .support import REGION, Queues, make_queues

if TYPE_CHECKING:
    import argparse

    from mypy_boto3_sqs import SQSClient

_CLEARED = (
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_SQS",
    "AWS_ENDPOINT_URL_CLOUDFORMATION",
    "AWS_ENDPOINT_URL_LAMBDA",
    "AWS_ENDPOINT_URL_CLOUDWATCH",
    "MAIN_QUEUE_URL",
    "OPERATOR_QUEUE_URL",
    "MAX_ATTEMPTS",
    "BACKOFF_BASE_SECONDS",
    "BACKOFF_MULTIPLIER",
    "BACKOFF_CAP_SECONDS",
    "JITTER",
    "REPLAY_COUNT_ATTRIBUTE",
    "COLUMNS",
)


@pytest.fixture(autouse=True)
def fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a region; nothing from the developer's shell leaks in."""
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def sqs(aws: None) -> SQSClient:
    """The test's own client: setup and assertions."""
    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def queues(sqs: SQSClient) -> Queues:
    return make_queues(sqs)


@pytest.fixture
def command_sqs(aws: None, monkeypatch: pytest.MonkeyPatch) -> SQSClient:
    """The SQS client `dlq-replay` itself uses: event hooks on it see only its requests."""
    client = boto3.client("sqs", region_name=REGION, config=SQS_CLIENT_CONFIG)
    original = ops_commands.make_client

    def make_client(args: argparse.Namespace, service: str) -> Any:
        return client if service == "sqs" else original(args, service)

    monkeypatch.setattr(ops_commands, "make_client", make_client)
    return client
