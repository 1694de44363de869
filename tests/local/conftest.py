"""Fixtures of the local-runtime tests: the demo's embedded SQS emulator (moto's server on
127.0.0.1, or LocalStack with `--emulator=localstack`), for what must cross a real HTTP endpoint
or a process boundary.

Everything else uses the in-process moto of `tests/conftest.py` (`aws`, `sqs`, `setup_client`);
`atomic_receive` gives tests with several pollers on one queue SQS's one-receiver-per-message.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.demo import emulator as demo
from emulation import Emulator, delete_queues
from moto import mock_aws

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

Receive = Any  # moto's SQSBackend.receive_message (moto is untyped here)
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


@pytest.fixture
def atomic_receive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto's ReceiveMessage atomic, as SQS's is: moto 5 takes no lock in
    `SQSBackend.receive_message`, so two threads polling one queue can both take the same
    visible message (a duplicate SQS itself would not produce for an in-flight message).
    Receives are serialised; long polling waits outside the lock, so pollers still overlap."""
    from moto.sqs.models import SQSBackend

    original: Receive = SQSBackend.receive_message
    lock = threading.Lock()

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
                found = original(
                    self, queue_name, count, 0, visibility_timeout, message_attribute_names
                )
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)

    monkeypatch.setattr(SQSBackend, "receive_message", receive_message)
