"""The worker's start: without a main queue it takes the DLQ's one source queue (SQS's
ListDeadLetterSourceQueues) and says so, or refuses in one line naming what to pass; against
an unreachable endpoint it says what it waits for and gives up when --start-up-patience says."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from typing import TYPE_CHECKING

import pytest
from dlq_replay.core.settings import Settings
from dlq_replay.local.worker_loop import WorkerOptions, run_worker
from integration.harness import RecordingLog, ReplayQueues, Sqs

from .support import clean_env, dlq_replay_command, drain_ids, send_ids

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def settings_without_main(queues: ReplayQueues) -> Settings:
    return Settings.from_env(
        {
            "OPERATOR_QUEUE_URL": queues.operator.url,
            "BACKOFF_BASE_SECONDS": "1",
            "BACKOFF_CAP_SECONDS": "1",
            "JITTER": "none",
        }
    )


@pytest.mark.moto_only(reason="ends the replays' delays inside moto (Sqs.end_delays)")
def test_the_dlqs_one_source_queue_is_the_main_queue_and_it_says_so(
    sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    send_ids(sqs.client, queues.dlq.url, ["a", "b", "c"])
    log = RecordingLog()
    stop = threading.Event()
    timer = threading.Timer(1.5, stop.set)
    timer.start()
    try:
        code = run_worker(
            replay_client,
            settings_without_main(queues),
            WorkerOptions(dlq_url=queues.dlq.url, wait_seconds=1),
            logger=log,
            stop=stop,
        )
    finally:
        timer.cancel()
    assert code == 0
    (said,) = [line for line in log.lines if "only source queue" in line.message]
    assert said.extra["main_queue_url"] == queues.main.url
    sqs.end_delays(queues.main)
    assert sorted(drain_ids(sqs.client, queues.main.url)) == ["a", "b", "c"]
    assert drain_ids(sqs.client, queues.operator.url) == []  # none parked unknown-source


def _worker_args(dlq: str, operator: str) -> list[str]:
    return ["worker", "--dlq-url", dlq, "--operator-queue-url", operator]


def _worker(endpoint: str, dlq: str, operator: str) -> subprocess.CompletedProcess[str]:
    """The worker as a process: should it start instead of refusing, the timeout ends it."""
    return subprocess.run(
        [
            *dlq_replay_command(),
            *_worker_args(dlq, operator),
            "--endpoint-url",
            endpoint,
            "--region",
            "us-east-1",
        ],
        env=clean_env(AWS_ACCESS_KEY_ID="demo", AWS_SECRET_ACCESS_KEY="demo"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _one_line(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    (line,) = result.stderr.splitlines()
    assert line.startswith("dlq-replay: error: "), line
    for fragment in fragments:
        assert fragment in line, line


def test_a_dlq_no_queue_uses_refuses_to_start_in_one_line(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    dlq = emulator_sqs.create_queue(QueueName="lonely-dlq")["QueueUrl"]
    operator = emulator_sqs.create_queue(QueueName="lonely-operator")["QueueUrl"]
    result = _worker(emulator_endpoint, dlq, operator)
    _one_line(result, "no queue uses it as its DLQ", "pass --main-queue-url URL")


def test_a_dlq_of_several_queues_refuses_to_start_naming_them(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    dlq = emulator_sqs.create_queue(QueueName="shared-dlq")["QueueUrl"]
    arn = emulator_sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 3})
    sources = [
        emulator_sqs.create_queue(QueueName=name, Attributes={"RedrivePolicy": policy})["QueueUrl"]
        for name in ("orders", "payments")
    ]
    operator = emulator_sqs.create_queue(QueueName="shared-operator")["QueueUrl"]
    result = _worker(emulator_endpoint, dlq, operator)
    _one_line(result, "2 queues use it as their DLQ", *sources)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize("patience", [0, 3])
def test_an_unreachable_endpoint_gives_up_when_the_patience_says(patience: int) -> None:
    """Was about 20 s whatever the patience (botocore's own retries inside each call)."""
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    queue = f"{endpoint}/123456789012/orders-dlq"
    started = time.monotonic()
    result = subprocess.run(
        [
            *dlq_replay_command(),
            *_worker_args(queue, f"{endpoint}/123456789012/orders-operator"),
            "--main-queue-url",
            f"{endpoint}/123456789012/orders",
            "--endpoint-url",
            endpoint,
            "--region",
            "us-east-1",
            "--start-up-patience",
            str(patience),
        ],
        env=clean_env(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.splitlines()
    assert f"--start-up-patience {patience} s" in line, line
    # A generous margin for the interpreter's start; the old behaviour took 20 s and more.
    assert elapsed < patience + 8, f"{elapsed:.1f} s for a patience of {patience} s"
    if patience:
        waits = [json.loads(out) for out in result.stdout.splitlines() if "retrying" in out]
        assert waits, result.stdout
        assert queue in {wait["queue_url"] for wait in waits}  # the DLQ (and the main queue)
        assert all(wait["gives_up_in_seconds"] <= patience for wait in waits)
