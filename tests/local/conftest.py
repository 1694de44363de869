"""Fixtures of the local-runtime tests: the demo's embedded SQS emulator (moto's server on
127.0.0.1, or LocalStack with `--emulator=localstack`), for what must cross a real HTTP endpoint
or a process boundary.

Everything else uses the in-process moto of `tests/conftest.py` (`aws`, `sqs`, `setup_client`),
whose `atomic_receive` gives tests with several pollers on one queue SQS's atomic receives.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from dlq_replay.demo import emulator as demo
from emulation import Emulator, delete_queues
from moto import mock_aws

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # tools/ (the interruption harness)
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def fresh_backends() -> None:
    """Empty moto's backends. The emulator's server keeps its state in this process's moto
    backends, which nothing else resets between two emulator runs (the demo always creates the
    same queue names)."""
    with mock_aws():  # starting and stopping a mock each reset every backend
        pass


@pytest.fixture
def emulator_endpoint(
    fresh_backends: None, emulator: Emulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A moto server with no queues on a free port of 127.0.0.1; its endpoint URL. On LocalStack,
    LocalStack itself: the demo's client uses its default account, emptied before and after, and
    held by one test at a time (a file lock the pytest-xdist workers of this run share)."""
    if emulator.endpoint_url is None:
        with demo.emulator() as endpoint_url:
            yield endpoint_url
        return
    client = demo.emulator_client(emulator.endpoint_url)
    run_folder = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:  # each worker's folder is inside the run's
        run_folder = run_folder.parent
    lock_path = run_folder / "localstack-default-account.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        delete_queues(client)
        try:
            yield emulator.endpoint_url
        finally:
            delete_queues(client)


@pytest.fixture
def emulator_sqs(emulator_endpoint: str) -> SQSClient:
    """The test's own client on the emulator."""
    return demo.emulator_client(emulator_endpoint)
