"""Fixtures of the local-runtime tests: the demo's embedded SQS emulator (moto's server on
127.0.0.1), for what must cross a real HTTP endpoint or a process boundary.

Everything else uses the in-process moto of `tests/conftest.py` (`aws`, `sqs`, `setup_client`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from dlq_replay.demo import emulator, emulator_client

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@pytest.fixture
def emulator_endpoint() -> Iterator[str]:
    """A fresh moto server on a free port of 127.0.0.1; its endpoint URL."""
    with emulator() as endpoint_url:
        yield endpoint_url


@pytest.fixture
def emulator_sqs(emulator_endpoint: str) -> SQSClient:
    """The test's own client on the emulator."""
    return emulator_client(emulator_endpoint)
