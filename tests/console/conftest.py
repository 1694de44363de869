"""The console's emulator follows the suite's (tests/emulation.py): on moto, the demo's
embedded moto server (every service on 127.0.0.1, in this process), once per module; with
`--emulator=localstack`, the running LocalStack under an account of the test's own (its
queues deleted after). `client` is the test's own SQS client on the same account as the
console's (which takes the environment's credentials)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import boto3
import pytest
from dlq_replay.demo import emulator as demo
from dlq_replay.sqs.client import SQS_CLIENT_CONFIG

if TYPE_CHECKING:
    from emulation import Emulator
    from mypy_boto3_sqs import SQSClient


@pytest.fixture(scope="module")
def moto_server(emulator: Emulator) -> Iterator[str | None]:
    """moto's whole server for the module's tests; None on LocalStack."""
    if emulator.endpoint_url is not None:
        yield None
        return
    with demo.emulator() as url:
        yield url


@pytest.fixture
def endpoint(
    moto_server: str | None, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    if moto_server is not None:
        yield moto_server
        return
    assert emulator.endpoint_url is not None
    with emulator.isolated_account(monkeypatch):
        yield emulator.endpoint_url


@pytest.fixture
def client(endpoint: str, emulator: Emulator) -> SQSClient:
    if emulator.endpoint_url is None:
        return demo.emulator_client(endpoint)
    # The isolated account's key, from the environment (the demo's fixed key would be
    # LocalStack's default account, not the console's).
    return boto3.client("sqs", endpoint_url=endpoint, config=SQS_CLIENT_CONFIG)
