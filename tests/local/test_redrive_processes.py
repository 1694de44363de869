"""`redrive --processes 2`: a second process moves from the same source beside the first (one
core each, `ops.companion`). Every message is moved once, the command reports one tally and one
follow record, the result equals a one-process move's, and a stop stops both with nothing
lost. On the demo's atomic emulator (moto's server, each request atomic as SQS's are: moto's
bare server can give one message to two receives) or LocalStack; the second process reaches it
over HTTP, as the command's own does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.demo.emulator import sqs_emulator
from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.companion import Companion, CompanionSetup
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.redrive import RedriveRequest
from emulation import Emulator

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator(reason="a second process reaches the emulator over HTTP")
REGION = "us-east-1"
ACTION_TAG = "dlq-replay-action"  # the follow tag: each move's own id, so left out of a compare


@pytest.fixture
def endpoint(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if emulator.endpoint_url is not None:
        with emulator.isolated_account(monkeypatch):
            yield emulator.endpoint_url
        return
    with sqs_emulator() as running:
        yield running.endpoint_url


@pytest.fixture
def client(endpoint: str) -> SQSClient:
    return boto3.client("sqs", endpoint_url=endpoint, region_name=REGION)


def make_queue(client: SQSClient, name: str) -> str:
    return client.create_queue(QueueName=f"{name}-{uuid.uuid4().hex[:8]}")["QueueUrl"]


def fill(client: SQSClient, url: str, count: int) -> None:
    for start in range(0, count, 10):
        entries: Any = [
            {
                "Id": str(n),
                "MessageBody": f"m{n}",
                "MessageAttributes": {
                    "sqs-dlq-replay-nb": {"DataType": "Number", "StringValue": str(n % 4)},
                    "customer": {"DataType": "String", "StringValue": f"c{n % 7}"},
                },
            }
            for n in range(start, min(start + 10, count))
        ]
        client.send_message_batch(QueueUrl=url, Entries=entries)


def take_all(client: SQSClient, url: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every message of a queue (body, attributes but the follow tag), deleted as read."""
    found: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    empty_in_a_row = 0
    while empty_in_a_row < 3:
        got = client.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        empty_in_a_row = 0 if got else empty_in_a_row + 1
        for message in got:
            attributes = message.get("MessageAttributes", {})
            kept = tuple(
                sorted(
                    (name, str(value.get("StringValue")))
                    for name, value in attributes.items()
                    if name != ACTION_TAG
                )
            )
            found.append((message["Body"], kept))
        if got:
            entries: Any = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
            ]
            client.delete_message_batch(QueueUrl=url, Entries=entries)
    return found


def redrive_command(endpoint: str, source: str, destination: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "dlq_replay.cli.main",
        "redrive",
        "--from",
        source,
        "--to",
        destination,
        "--endpoint-url",
        endpoint,
        "--json",
        *extra,
    ]


def run_redrive(
    endpoint: str, source: str, destination: str, state: Path, *extra: str
) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        redrive_command(endpoint, source, destination, *extra),
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(state), "AWS_DEFAULT_REGION": REGION},
        timeout=180,
        check=False,
    )
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


def followed_sent(state: Path) -> int:
    """What the move's follow record counts as sent (the file store: no stack here)."""
    lines = (state / "dlq-replay" / "follow.jsonl").read_text().splitlines()
    return sum(int(json.loads(line).get("sent", 0)) for line in lines if '"kind":"sent"' in line)


def test_two_processes_move_every_message_once_and_report_one_tally(
    client: SQSClient, endpoint: str, tmp_path: Path
) -> None:
    source, destination = make_queue(client, "src"), make_queue(client, "dst")
    fill(client, source, 400)

    code, tally, stderr = run_redrive(endpoint, source, destination, tmp_path, "--processes", "2")

    assert code == 0, stderr
    assert "second process" not in stderr
    assert (tally["moved"], tally["seen"], tally["adds_up"]) == (400, 400, True)
    assert tally["processes"] == 2
    assert (tally["failed"], tally["unsettled"], tally["interrupted"]) == (0, 0, None)
    moved = Counter(body for body, _ in take_all(client, destination))
    assert moved == Counter(f"m{n}" for n in range(400))  # each once
    assert take_all(client, source) == []
    assert followed_sent(tmp_path) == 400  # the child's copies counted by the parent's record


def test_the_second_process_does_part_of_the_move(client: SQSClient, endpoint: str) -> None:
    """On a source with a redrive policy: the child moves within its parent's receive budget."""
    source, destination = make_queue(client, "src"), make_queue(client, "dst")
    after = make_queue(client, "after")
    after_arn = client.get_queue_attributes(QueueUrl=after, AttributeNames=["QueueArn"])
    policy = {"deadLetterTargetArn": after_arn["Attributes"]["QueueArn"], "maxReceiveCount": 10}
    client.set_queue_attributes(QueueUrl=source, Attributes={"RedrivePolicy": json.dumps(policy)})
    # Spawned first, as the command line does (`cli.prestart`): ready by the time the move
    # starts, however fast the emulator drains the queue without it.
    companion = Companion(CompanionSetup(None, REGION, endpoint)).spawn()
    fill(client, source, 1000)
    request = RedriveRequest(
        source=queue_info(client, source), destination=queue_info(client, destination)
    )

    tally = ClientMove(client, request, companion=companion).run(None)

    assert companion.problem is None
    assert companion.tally is not None
    assert 0 < companion.tally.moved < 1000
    assert (tally.moved, tally.seen, tally.adds_up) == (1000, 1000, True)
    assert len(take_all(client, destination)) == 1000


def test_one_and_two_processes_leave_the_same_queues(
    client: SQSClient, endpoint: str, tmp_path: Path
) -> None:
    """Differential: the same messages moved by one process and by two give the same copies
    (bodies and attributes, the count reset included) and the same tally."""
    results = {}
    for processes in ("1", "2"):
        source, destination = make_queue(client, "src"), make_queue(client, "dst")
        fill(client, source, 250)
        state = tmp_path / processes
        code, tally, stderr = run_redrive(
            endpoint, source, destination, state, "--processes", processes, "--reset-count"
        )
        assert code == 0, stderr
        for varying in ("source", "destination", "action_id", "processes"):
            tally.pop(varying)
        results[processes] = (Counter(take_all(client, destination)), tally)

    assert results["1"] == results["2"]
    copies = results["2"][0]
    assert sum(copies.values()) == 250
    assert all("sqs-dlq-replay-nb" not in dict(attributes) for _, attributes in copies)


def test_a_stop_stops_both_processes_and_loses_nothing(
    client: SQSClient, endpoint: str, tmp_path: Path
) -> None:
    source, destination = make_queue(client, "src"), make_queue(client, "dst")
    fill(client, source, 1500)
    process = subprocess.Popen(
        redrive_command(endpoint, source, destination, "--processes", "2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path), "AWS_DEFAULT_REGION": REGION},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        attributes = client.get_queue_attributes(
            QueueUrl=destination, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        if int(attributes["ApproximateNumberOfMessages"]) >= 100:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)

    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    tally = json.loads(stdout)
    assert tally["interrupted"] == "SIGINT"
    assert "second process" not in stderr  # stopped, not failed, even before it began
    assert tally["adds_up"]
    assert tally["unsettled"] == 0
    moved = Counter(body for body, _ in take_all(client, destination))
    left = Counter(body for body, _ in take_all(client, source))
    assert tally["moved"] == sum(moved.values()) < 1500  # it stopped before the end
    assert moved + left == Counter(f"m{n}" for n in range(1500))  # nothing lost, none twice


def test_a_client_side_move_of_1000_or_more_takes_a_second_process_by_default(
    client: SQSClient, endpoint: str, tmp_path: Path
) -> None:
    """`--client-side` alone: the command line makes the move client-side, so the second
    process starts as it is read (`cli.prestart`) and moves beside the first."""
    source, destination = make_queue(client, "src"), make_queue(client, "dst")
    fill(client, source, 1000)

    code, tally, stderr = run_redrive(endpoint, source, destination, tmp_path, "--client-side")

    assert code == 0, stderr
    assert (tally["moved"], tally["adds_up"], tally["processes"]) == (1000, True, 2)
    assert Counter(body for body, _ in take_all(client, destination)) == Counter(
        f"m{n}" for n in range(1000)
    )


def test_a_smaller_move_lets_the_early_second_process_go(
    client: SQSClient, endpoint: str, tmp_path: Path
) -> None:
    source, destination = make_queue(client, "src"), make_queue(client, "dst")
    fill(client, source, 30)

    code, tally, stderr = run_redrive(endpoint, source, destination, tmp_path, "--client-side")

    assert code == 0, stderr
    assert (tally["moved"], tally["processes"]) == (30, 1)


def test_a_second_process_that_fails_leaves_its_part_to_the_first(
    client: SQSClient, endpoint: str
) -> None:
    source, destination = make_queue(client, "src"), make_queue(client, "dst")
    fill(client, source, 120)
    request = RedriveRequest(
        source=queue_info(client, source), destination=queue_info(client, destination)
    )
    failing = [sys.executable, "-c", "import sys; sys.exit(3)"]
    companion = Companion(CompanionSetup(None, REGION, endpoint), command=failing)

    tally = ClientMove(client, request, companion=companion).run(None)

    assert companion.problem == "exited with code 3"
    assert (tally.moved, tally.seen, tally.adds_up) == (120, 120, True)
    assert len(take_all(client, destination)) == 120
