"""`dlq-replay redrive` split over two processes (ops.processes), as the real console command on
the emulator: every message moved exactly once, the tally of both processes adds up, and what
cannot be split runs in one process, said so. The signal paths of a split move are in
test_signal_exits.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tools.chaos import ChaosProxy, Faults
from tools.interrupt import _drain

from .support import clean_env, dlq_replay_command

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the split forks (Linux)")


def _fill(sqs: SQSClient, url: str, count: int) -> list[str]:
    bodies = [json.dumps({"id": f"m{n}"}) for n in range(count)]
    for start in range(0, count, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "MessageBody": body}
                for i, body in enumerate(bodies[start : start + 10])
            ],
        )
    return [f"m{n}" for n in range(count)]


def _redrive(endpoint: str, source: str, destination: str, *extra: str) -> tuple[Any, str]:
    done = subprocess.run(
        [
            *dlq_replay_command(),
            *("redrive", "--from", source, "--to", destination, "--client-side", "--json"),
            *("--endpoint-url", endpoint, "--region", "us-east-1", *extra),
        ],
        env=clean_env(AWS_ACCESS_KEY_ID="demo", AWS_SECRET_ACCESS_KEY="demo"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.mark.usefixtures("atomic_receive")
def test_two_processes_move_every_message_exactly_once(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    source = emulator_sqs.create_queue(QueueName="split-src")["QueueUrl"]
    destination = emulator_sqs.create_queue(QueueName="split-dst")["QueueUrl"]
    ids = _fill(emulator_sqs, source, 80)
    tally, _ = _redrive(
        emulator_endpoint, source, destination, "--processes", "2", "--concurrency", "4"
    )
    assert tally["processes"] == 2
    assert tally["adds_up"]
    assert (tally["moved"], tally["seen"], tally["failed"]) == (80, 80, 0)
    delivered = Counter(_drain(emulator_sqs, destination))
    assert delivered == Counter(ids)  # each once
    assert _drain(emulator_sqs, source) == []


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (("--limit", "15"), "--limit: one process keeps the whole count"),
        (("--concurrency", "1"), "--concurrency 1 leaves no batch for a second process"),
    ],
)
def test_a_move_that_cannot_be_split_runs_in_one_process_and_says_why(
    emulator_endpoint: str, emulator_sqs: SQSClient, extra: tuple[str, ...], why: str
) -> None:
    source = emulator_sqs.create_queue(QueueName="one-src")["QueueUrl"]
    destination = emulator_sqs.create_queue(QueueName="one-dst")["QueueUrl"]
    _fill(emulator_sqs, source, 20)
    tally, err = _redrive(emulator_endpoint, source, destination, "--processes", "2", *extra)
    assert tally["processes"] == 1
    assert tally["adds_up"]
    assert f"one process: {why}" in err


def test_a_small_move_runs_in_one_process_unless_asked(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    source = emulator_sqs.create_queue(QueueName="small-src")["QueueUrl"]
    destination = emulator_sqs.create_queue(QueueName="small-dst")["QueueUrl"]
    _fill(emulator_sqs, source, 20)
    tally, err = _redrive(emulator_endpoint, source, destination)
    assert (tally["processes"], tally["moved"]) == (1, 20)
    assert "one process" not in err  # not asked: nothing to say


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()]


@pytest.mark.slow
@pytest.mark.usefixtures("atomic_receive")
def test_a_second_process_that_dies_is_an_error_and_loses_nothing(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    """The second process killed mid-move: the first moves on (what the dead one held comes
    back after --hide-seconds and is moved too) and ends with exit 1, saying so."""
    source = emulator_sqs.create_queue(QueueName="dies-src")["QueueUrl"]
    destination = emulator_sqs.create_queue(QueueName="dies-dst")["QueueUrl"]
    ids = _fill(emulator_sqs, source, 150)  # about 2 s of moving: it dies at work
    proxy = ChaosProxy(emulator_endpoint, Faults(spike=1.0, spike_seconds=0.05), seed=1)
    endpoint = proxy.start()
    try:
        with subprocess.Popen(
            [
                *dlq_replay_command(),
                *("redrive", "--from", source, "--to", destination, "--client-side"),
                *("--processes", "2", "--concurrency", "2", "--hide-seconds", "2", "--json"),
                *("--endpoint-url", endpoint, "--region", "us-east-1"),
            ],
            env=clean_env(AWS_ACCESS_KEY_ID="demo", AWS_SECRET_ACCESS_KEY="demo"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            deadline = time.monotonic() + 30
            while not (children := _children(process.pid)) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert children, "no second process"
            time.sleep(0.3)  # at work
            os.kill(children[0], signal.SIGKILL)
            out, err = process.communicate(timeout=90)
    finally:
        proxy.stop()
    assert process.returncode == 1, err
    assert "Traceback" not in err + out
    assert "the second process ended early (exit code -9)" in err
    delivered = set(_drain(emulator_sqs, destination))
    assert delivered | set(_drain(emulator_sqs, source)) == set(ids)  # nothing lost
