"""`dlq-replay status` says how the automatic replay recovered over the last day: one line from
the stack's table (`--stack`), `recovery` in `--json`; without a table, from this machine's
file (what `dlq-replay worker` writes there), the line saying so. The counts are written
through the follow package's own stores, as the replay writes them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
from dlq_replay.follow.journal import FileFollowStore
from dlq_replay.follow.recovery import RecoveryTally, hour_bucket
from dlq_replay.follow.tables import DynamoFollowStore

from .stack import deploy
from .support import Queues, run_cli

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient

HOUR = 3600.0


def tally(
    failed_first: int, sent: dict[int, int], returned: dict[int, int], parked: dict[int, int]
) -> RecoveryTally:
    counts = RecoveryTally()
    for _ in range(failed_first):
        counts.arrived(0)
    for attempt, n in sent.items():
        for _ in range(n):
            counts.sent(attempt)
    for attempt, n in returned.items():
        for _ in range(n):
            counts.arrived(attempt)
    for attempt, n in parked.items():
        for _ in range(n):
            counts.parked(attempt)
    return counts


def write_day(store: DynamoFollowStore | FileFollowStore, queue: str, now: float) -> None:
    """Five hours ago: 1,000 failed first, every one replayed once; 150 came back and were
    replayed again, 40 of those came back, 30 replayed a third time and 10 parked; 8 of the
    third came back and were parked. Two days ago: counts outside the window."""
    store.add(
        queue,
        tally(1000, {1: 1000, 2: 150, 3: 30}, {1: 150, 2: 40, 3: 8}, {2: 10, 3: 8}),
        now - 5 * HOUR,
    )
    store.add(queue, tally(500, {1: 500}, {}, {}), now - 48 * HOUR)


LINE = "last 24 h: 1,000 failed first; 850 recovered on replay 1, 110 on 2, 22 on 3; 18 parked"


@pytest.mark.moto_only(reason="a stack with its table, deployed into moto")
def test_status_with_a_stack_reads_the_recovery_from_its_table(
    capsys: pytest.CaptureFixture[str], aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    cfn: CloudFormationClient = boto3.client("cloudformation")
    outputs = deploy(cfn, "shop")
    dlq = outputs["DeadLetterQueueUrl"].rsplit("/", 1)[1]
    store = DynamoFollowStore(boto3.client("dynamodb"), outputs["AuditTableName"])
    now = time.time()
    write_day(store, dlq, now)
    store.add("another-dlq", tally(7, {1: 7}, {}, {}), now)  # another queue's counts

    shown = run_cli(capsys, "status", "--stack", "shop")
    answer = run_cli(capsys, "status", "--stack", "shop", "--json")

    assert shown.code == 0, shown
    assert f"replay recovery of {dlq}: {LINE}\n" in shown.out, shown.out
    assert answer.code == 0, answer
    recovery = answer.json()["recovery"]
    assert recovery["queue"] == dlq
    assert recovery["shared"] is True
    assert recovery["where"] == f"DynamoDB table {outputs['AuditTableName']}"
    assert recovery["text"] == f"replay recovery of {dlq}: {LINE}"
    assert recovery["failed_first"] == 1000
    assert [
        (a["attempt"], a["sent"], a["returned"], a["recovered"], a["parked"])
        for a in recovery["attempts"]
    ] == [
        (1, 1000, 150, 850, 0),
        (2, 150, 40, 110, 10),
        (3, 30, 8, 22, 8),
    ]
    assert [hour["hour"] for hour in recovery["hours"]] == [hour_bucket(now - 5 * HOUR)]


def test_status_without_a_table_reads_this_machine_s_file_and_says_so(
    capsys: pytest.CaptureFixture[str], queues: Queues
) -> None:
    dlq = queues.dlq.rsplit("/", 1)[1]
    nothing = run_cli(capsys, "status", *queues.options())
    path = FileFollowStore().path
    write_day(FileFollowStore(), dlq, time.time())

    shown = run_cli(capsys, "status", *queues.options())
    answer = run_cli(capsys, "status", *queues.options(), "--json")

    local = f"replay recovery of {dlq} (from {path}, this machine only: pass --stack NAME)"
    assert nothing.code == 0, nothing
    assert f"{local}: last 24 h: nothing replayed\n" in nothing.out, nothing.out
    assert shown.code == 0, shown
    assert f"{local}: {LINE}\n" in shown.out, shown.out
    recovery = answer.json()["recovery"]
    assert (recovery["shared"], recovery["where"]) == (False, str(path))
    assert recovery["text"] == f"{local}: {LINE}"
    assert Path(recovery["where"]).exists()


def test_status_without_a_dlq_says_there_is_no_recovery_to_read(
    capsys: pytest.CaptureFixture[str], queues: Queues
) -> None:
    answer = run_cli(capsys, "status", "--main-queue-url", queues.main, "--json")

    assert answer.code == 0, answer
    assert answer.json()["recovery"]["text"] == (
        "replay recovery: no DLQ known (pass --stack NAME or --dlq-url)"
    )
