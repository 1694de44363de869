"""A redrive followed to its end, every part real (docs/operator-audit.md, "Did it work"): a
client-side `dlq-replay redrive` moves parked messages back to the main queue; a consumer fails
every fourth copy (it leaves it, and the main queue's own redrive policy moves it to the DLQ
at its second receive) and deletes the rest; `dlq-replay worker`, a real process on the DLQ,
counts each return against the move and parks it again. The trail then shows exactly that
share returned and, once the main queue's window has passed, the move settled;
`audit --follow` exits 1 for it. A second redrive of the returned copies, after the fix,
comes back clean: `audit --follow` waits for its window and exits 0.

On every emulator with the trail in the local file (no table), and on moto also with the
stack's table (`--audit-table`, LocalStack here has no DynamoDB). The emulator is reached over
HTTP by the commands in process and by the worker's process alike."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.demo import emulator as demo
from dlq_replay.sqs.client import SQS_CLIENT_CONFIG
from emulation import Emulator, eventually
from integration.harness import breaker_table
from local.support import worker_command
from moto import mock_aws

from .support import Queues, depth, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

MESSAGES = 40
FAIL_EVERY = 4  # the consumer fails order-0, order-4, ...: a known share
VISIBILITY = 2  # the main queue's visibility timeout; maxReceiveCount 1: the window is 24 s
WINDOW = (1 + 1) * VISIBILITY + 20
MAX_ATTEMPTS = 3  # parked copies carry count 3: a return is parked again, never replayed
TABLE = "stack-table"
FOLLOWED_KEYS = {"sent", "returned", "untracked", "settled_at"}


@pytest.fixture
def endpoint(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The emulator's endpoint, in AWS_ENDPOINT_URL for everything this test runs: moto's
    whole server (fresh backends) on 127.0.0.1 in this process, or LocalStack under an
    account of the test's own."""
    if emulator.endpoint_url is not None:
        with emulator.isolated_account(monkeypatch):
            yield emulator.endpoint_url
        return
    with mock_aws():  # starting and stopping a mock resets moto's backends
        pass
    with demo.emulator() as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        yield url


@pytest.fixture
def client(endpoint: str) -> SQSClient:
    return boto3.client("sqs", endpoint_url=endpoint, config=SQS_CLIENT_CONFIG)


def make_queues(sqs: SQSClient, prefix: str = "shop") -> Queues:
    """main (visibility 2 s, maxReceiveCount 1) -> DLQ -> operator queue."""

    def arn(url: str) -> str:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return attributes["Attributes"]["QueueArn"]

    def policy(target: str, count: int) -> str:
        return json.dumps({"deadLetterTargetArn": arn(target), "maxReceiveCount": str(count)})

    operator = sqs.create_queue(QueueName=f"{prefix}-operator")["QueueUrl"]
    dlq = sqs.create_queue(
        QueueName=f"{prefix}-dlq", Attributes={"RedrivePolicy": policy(operator, 10)}
    )["QueueUrl"]
    main = sqs.create_queue(
        QueueName=f"{prefix}-main",
        Attributes={"RedrivePolicy": policy(dlq, 1), "VisibilityTimeout": str(VISIBILITY)},
    )["QueueUrl"]
    return Queues(main, dlq, operator)


@dataclass
class Consumer:
    """The main queue's consumer: deletes what `fails` does not name; leaves the rest in
    flight, so its next receive (past maxReceiveCount 1) moves it to the DLQ."""

    sqs: SQSClient
    url: str
    fails: Callable[[str], bool]
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def poll(self) -> int:
        """One receive of up to 10, each taken or left; how many came."""
        messages = self.sqs.receive_message(
            QueueUrl=self.url, MaxNumberOfMessages=10, WaitTimeSeconds=1
        ).get("Messages", [])
        for message in messages:
            if self.fails(message["Body"]):
                self.failed.append(message["Body"])
            else:
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])
                self.deleted.append(message["Body"])
        return len(messages)


@dataclass
class Worker:
    """`dlq-replay worker` in its own process on the DLQ; stdout (its JSON log) in a file."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> int:
        """SIGTERM (a clean stop after its start: exit 0); the exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()

    def lines(self) -> list[dict[str, Any]]:
        """Its JSON log lines; no traceback anywhere in its output."""
        text = self.log.read_text()
        assert "Traceback" not in text, text
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def start_worker(endpoint: str, queues: Queues, folder: Path, *extra: str) -> Worker:
    log = folder / "worker.log"
    env = {
        name: value
        for name, value in os.environ.items()
        if name.startswith(("AWS_", "XDG_", "PATH", "HOME", "LANG", "PYTHON"))
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            worker_command(
                queues,
                endpoint,
                "--wait-seconds",
                "1",
                "--max-attempts",
                str(MAX_ATTEMPTS),
                "--no-breaker",
                *extra,
            ),
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Worker(process, log)


def followed(capsys: pytest.CaptureFixture[str], action_id: str, trail: list[str]) -> Any:
    """The move's `followed` object in `dlq-replay audit --json`."""
    result = run_cli(capsys, "audit", "--json", "--limit", "50", *trail)
    assert result.code == 0, result
    (action,) = [a for a in result.json()["actions"] if a["action_id"] == action_id]
    return action["followed"]


def redrive(capsys: pytest.CaptureFixture[str], queues: Queues, trail: list[str]) -> str:
    result = run_cli(
        capsys,
        "redrive",
        *queues.options(),
        "--client-side",  # the operator queue is a DLQ: else SQS's own move, not followed
        "--wait-seconds",
        "0",
        "--json",
        *trail,
    )
    assert result.code == 0, result
    return str(result.json()["action_id"])


def seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize(
    "trail",
    [
        pytest.param("file", id="local-file"),
        pytest.param(
            "table",
            id="stack-table",
            marks=pytest.mark.moto_only(reason="LocalStack here runs no DynamoDB"),
        ),
    ],
)
def test_a_redrive_whose_consumer_fails_a_quarter_shows_that_quarter_returned_then_settles(
    capsys: pytest.CaptureFixture[str],
    endpoint: str,
    client: SQSClient,
    tmp_path: Path,
    trail: str,
) -> None:
    options: list[str] = []
    if trail == "table":
        breaker_table(boto3.client("dynamodb", endpoint_url=endpoint), TABLE)
        options = ["--audit-table", TABLE]
    queues = make_queues(client)
    bodies = [f"order-{i}" for i in range(MESSAGES)]
    failing = {b for i, b in enumerate(bodies) if i % FAIL_EVERY == 0}
    park(client, queues.operator, bodies)
    worker = start_worker(endpoint, queues, tmp_path, *options)
    try:
        first = redrive(capsys, queues, options)
        sent_at = time.time()
        consumer = Consumer(client, queues.main, lambda body: body in failing)

        def all_back() -> bool:
            consumer.poll()
            return depth(client, queues.operator) == (len(failing), 0) and not any(
                depth(client, url) != (0, 0) for url in (queues.main, queues.dlq)
            )

        eventually(all_back, "every failed copy back and parked again", after=0, within=40)
        assert sorted(consumer.deleted) == sorted(set(bodies) - failing)
        returned = eventually(
            lambda: (f := followed(capsys, first, options))["returned"] == len(failing) and f,
            "the returns counted",
            after=0,
        )
        assert set(returned) == FOLLOWED_KEYS
        assert (returned["sent"], returned["untracked"]) == (MESSAGES, 0)

        # Waits for the window after the last return, then exits 1: the move had returns.
        waited = run_cli(capsys, "audit", "--follow", first, "--poll-seconds", "0.2", *options)
        assert waited.code == 1, waited
        assert waited.out.splitlines()[-1].endswith(f": {len(failing)} of {MESSAGES} came back"), (
            waited.out
        )
        settled = followed(capsys, first, options)
        assert settled["returned"] == len(failing) == MESSAGES // FAIL_EVERY
        assert settled["settled_at"] is not None
        assert seconds(settled["settled_at"]) >= sent_at + WINDOW - 1  # ISO's whole seconds

        # The fix holds now: the returned copies, redriven again, are all taken.
        consumer.fails = lambda _: False
        second = redrive(capsys, queues, options)
        eventually(
            lambda: consumer.poll() >= 0 and depth(client, queues.main) == (0, 0),
            "the second redrive consumed",
            after=0,
        )
        clean = run_cli(capsys, "audit", "--follow", second, "--poll-seconds", "0.2", *options)
        assert clean.code == 0, clean
        assert clean.out.splitlines()[-1].endswith(f": none of {len(failing)} came back")
        again = followed(capsys, second, options)
        assert (again["sent"], again["returned"], again["untracked"]) == (len(failing), 0, 0)
        assert again["settled_at"] is not None
        assert followed(capsys, first, options)["returned"] == len(failing)  # kept apart
    finally:
        stopped = worker.stop()
    lines = worker.lines()
    assert stopped == 0, lines
    # The notice of the first move, once (10 of 40 passes 10 %, at least 5); none of the second.
    notices = [str(line["message"]) for line in lines if "the fix did not hold" in str(line)]
    assert len(notices) == 1, notices
    # Sent when the returns first reach the threshold: by then 5 to all 10 are counted (the
    # worker's batches decide how many at once).
    said = re.match(rf"the fix did not hold: ([0-9]+) of {MESSAGES} redriven", notices[0])
    assert said is not None, notices
    assert 5 <= int(said[1]) <= len(failing), notices
    assert notices[0].endswith(f" came back (action {first})"), notices
    assert sorted(consumer.deleted) == sorted(bodies)
