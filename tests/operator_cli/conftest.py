"""Fixtures of the operator CLI tests: wired queues, and the client the command uses (to hook
failures into, or to stub). Fake credentials and the in-process moto (`aws`) come from
`tests/conftest.py`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.cli import deployment as cli_deployment

from .support import Queues, make_queues

if TYPE_CHECKING:
    import argparse

    from mypy_boto3_sqs import SQSClient


@pytest.fixture
def sqs(setup_client: SQSClient) -> SQSClient:
    """The test's own client: setup and assertions (a plain client here, not `Sqs`)."""
    return setup_client


@pytest.fixture
def queues(sqs: SQSClient) -> Queues:
    return make_queues(sqs)


@pytest.fixture
def command_sqs(replay_client: SQSClient, monkeypatch: pytest.MonkeyPatch) -> SQSClient:
    """The SQS client `dlq-replay` itself uses (configured as in production, like the replay's):
    event hooks on it see only its requests."""
    client = replay_client
    original = cli_deployment.make_client

    def make_client(args: argparse.Namespace, service: str) -> Any:
        return client if service == "sqs" else original(args, service)

    monkeypatch.setattr(cli_deployment, "make_client", make_client)
    return client
