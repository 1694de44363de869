"""The demo's embedded moto server (every service on 127.0.0.1), once per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from dlq_replay.demo.emulator import emulator, emulator_client

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with emulator() as url:
        yield url


@pytest.fixture
def client(endpoint: str) -> SQSClient:
    return emulator_client(endpoint)
