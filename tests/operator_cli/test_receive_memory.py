"""No sequence of reads moves a message: `peek`, `export` (without --delete) and the console's
snapshots remember the receive counts they saw (`ops.receivememory`), and a read that could
push a remembered message past its queue's maxReceiveCount is refused, in one line, before it
receives anything. Checked where SQS would show it: the DLQ's next queue stays empty."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from dlq_replay.cli.console.snapshot import Snapshot
from dlq_replay.ops.export import Export, ExportRequest
from dlq_replay.ops.peek import PeekRequest, peek
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.ops.receivememory import ReadRefusedError, ReceiveMemory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .support import Queues, assert_one_line_error, depth, make_queues, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

NO_WAIT = ("--wait-seconds", "0")
REFUSED = "a read now could move it"


def dead_letter(sqs: SQSClient, wired: Queues, count: int) -> None:
    """`count` messages failed on the main queue (maxReceiveCount 1): received once there,
    moved to the DLQ by SQS on the next receive, arriving with one receive."""
    for n in range(count):
        sqs.send_message(QueueUrl=wired.main, MessageBody=f'{{"order": {n}}}')
    while depth(sqs, wired.main) != (0, 0):
        sqs.receive_message(QueueUrl=wired.main, MaxNumberOfMessages=10, VisibilityTimeout=0)


def test_the_outside_report_peek_until_refused_moves_nothing(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, tmp_path: Path
) -> None:
    """A DLQ with maxReceiveCount 6 (messages arrive with 1 receive): three reads, a fourth
    that stops at its first message (1 receive left), then every read is refused; the next
    queue stays empty throughout."""
    wired = make_queues(sqs, "report", main_max_receive_count=1, dlq_max_receive_count=6)
    dead_letter(sqs, wired, 5)
    assert depth(sqs, wired.dlq) == (5, 0)
    codes = []
    for _ in range(8):
        result = run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT, "--limit", "50")
        codes.append(result.code)
        assert depth(sqs, wired.operator) == (0, 0), f"a read moved a message: {codes}"
        if result.code != 0:
            break
    assert codes == [0, 0, 0, 0, 1], codes
    assert_one_line_error(
        result, 1, "report-dlq: message ", "has 1 receive left of maxReceiveCount 6", REFUSED
    )
    assert "it moves to report-operator" in result.err
    assert depth(sqs, wired.dlq) == (5, 0)
    # export without --delete is a read too: refused the same way, nothing received.
    archive = tmp_path / "x.jsonl"
    export = run_cli(capsys, "export", "dlq", *wired.options(), *NO_WAIT, "--file", str(archive))
    assert_one_line_error(export, 1, REFUSED)
    assert not archive.exists()
    assert depth(sqs, wired.operator) == (0, 0)


def test_export_delete_spends_the_kept_receive_and_then_reads_are_allowed_again(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, tmp_path: Path
) -> None:
    wired = make_queues(sqs, "kept", main_max_receive_count=1, dlq_max_receive_count=4)
    dead_letter(sqs, wired, 3)
    # 4 - 1 arrival: a read leaves 2, the next leaves 1 and stops: refused after that.
    codes = [run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT).code for _ in range(3)]
    assert codes == [0, 0, 1], codes
    archive = tmp_path / "dlq.jsonl"
    runs = 0
    while depth(sqs, wired.dlq) != (0, 0) and runs < 10:
        runs += 1
        result = run_cli(
            capsys, "export", "dlq", *wired.options(), *NO_WAIT, "--delete", "--file", str(archive)
        )
        assert "Traceback" not in result.err
        assert REFUSED not in result.err, result.err  # the kept receive is for this
    assert depth(sqs, wired.dlq) == (0, 0)
    assert depth(sqs, wired.operator) == (0, 0)  # each was archived and deleted, none moved
    assert len(archive.read_text().splitlines()) == 3
    assert run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT).code == 0


def test_a_partial_export_says_how_much_of_the_queue_it_read(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, tmp_path: Path
) -> None:
    wired = make_queues(sqs, "part", main_max_receive_count=1, dlq_max_receive_count=4)
    dead_letter(sqs, wired, 4)
    assert run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT, "--limit", "50").code == 0

    result = run_cli(
        capsys, "export", "dlq", *wired.options(), *NO_WAIT, "--json", "--file", str(tmp_path / "a")
    )

    assert result.code == 1, result  # partial: not every message archived
    found = result.json()
    assert found["examined"] == 1  # the first receive takes one message: it had 1 left
    assert found["expected"] == 4
    assert found["partial"].startswith("stopped: a message has 1 or fewer receives left")
    assert "stopped: a message has 1 or fewer receives left" in result.err
    assert "(partial: 1 message of about 4 read)" in result.err
    assert depth(sqs, wired.dlq) == (4, 0)


def test_an_unreadable_memory_refuses_every_read_in_one_line(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    wired = make_queues(sqs, "broken", main_max_receive_count=1, dlq_max_receive_count=6)
    dead_letter(sqs, wired, 1)
    memory = ReceiveMemory.local()
    path = memory.path(queue_info(sqs, wired.dlq))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": "dlq-replay-receives/1", "ids": [')

    result = run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT)

    assert_one_line_error(result, 1, str(path), "is not a receive memory", "delete it")
    path.unlink()
    assert run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT).code == 0


# -- any sequence ---------------------------------------------------------------------------

reads = st.sampled_from(["peek", "peek-some", "export", "snapshot", "send"])


@pytest.mark.moto_only(reason="many short-lived queues: fast on the in-process moto only")
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    max_receive_count=st.integers(3, 6),
    arrival=st.integers(1, 3),
    messages=st.integers(1, 15),
    steps=st.lists(reads, min_size=1, max_size=14),
)
def test_no_sequence_of_reads_moves_a_message(
    sqs: SQSClient,
    tmp_path: Path,
    max_receive_count: int,
    arrival: int,
    messages: int,
    steps: list[str],
) -> None:
    """Peeks (of every message or of a few), exports, console snapshots and new messages, in
    any order, on a DLQ whose maxReceiveCount leaves a read or more: each read either runs or
    is refused, and SQS never moves a message to the next queue."""
    if max_receive_count - arrival - 1 < 1:  # even a fresh message: refused by the budget
        arrival = max_receive_count - 2
    wired = make_queues(
        sqs,
        f"seq-{uuid.uuid4().hex[:10]}",
        main_max_receive_count=arrival,
        dlq_max_receive_count=max_receive_count,
    )
    park(sqs, wired.dlq, [f"m{i}" for i in range(messages)], reason=None, count=None)
    dlq = queue_info(sqs, wired.dlq)
    memory = ReceiveMemory.local()
    folder = tmp_path / uuid.uuid4().hex
    folder.mkdir()
    for number, step in enumerate(steps):
        refused = ""
        try:
            read(sqs, dlq, memory, step, folder / f"{number}")
        except ReadRefusedError as error:
            refused = str(error)
        assert not refused or REFUSED in refused, refused
        assert depth(sqs, wired.operator) == (0, 0), f"moved by {steps[: number + 1]}"
        assert depth(sqs, wired.dlq)[1] == 0  # every read gave back what it received


def read(sqs: SQSClient, dlq: QueueInfo, memory: ReceiveMemory, step: str, path: Path) -> None:
    if step == "send":
        park(sqs, dlq.url, ["late"], reason=None, count=None)
    elif step.startswith("peek"):
        limit = 3 if step == "peek-some" else 100
        peek(sqs, PeekRequest(dlq, limit=limit, wait_seconds=0), memory=memory)
    elif step == "export":
        request = ExportRequest(dlq, path, wait_seconds=0)
        Export(sqs, request, memory=memory).run()
    else:
        path.mkdir()
        snapshot = Snapshot(path, dlq)
        snapshot.read(sqs, frozenset(), memory=memory, wait_seconds=0)
        if snapshot.state == "failed":
            assert snapshot.error is not None
            raise ReadRefusedError(snapshot.error)
        assert snapshot.examined >= 1


def test_a_filtered_redrive_remembers_what_it_gave_back(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    """A redrive receives every message and gives back those its filter leaves: each such
    receive counts as a read's does. Two filtered redrives that choose nothing (maxReceiveCount
    4, arrival 1: counts 2, then 3 with 1 left) leave a memory that refuses the next read and
    the next filtered redrive, so no receive pushes a message on; the next queue stays empty."""
    wired = make_queues(sqs, "given", main_max_receive_count=1, dlq_max_receive_count=4)
    dead_letter(sqs, wired, 3)
    # From the DLQ, choosing none of them (none was parked `rejected`).
    unmatched = ("--from", "dlq", "--filter-reason", "rejected", "--client-side")
    for _ in range(2):
        moved = run_cli(capsys, "redrive", *wired.options(), *NO_WAIT, *unmatched)
        assert moved.code in (0, 1), moved.err
        assert depth(sqs, wired.operator) == (0, 0)
    peeked = run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT)
    assert_one_line_error(peeked, 1, "has 1 receive left of maxReceiveCount 4", REFUSED)
    again = run_cli(capsys, "redrive", *wired.options(), *NO_WAIT, *unmatched)
    assert again.code == 1
    assert REFUSED in again.err
    assert depth(sqs, wired.operator) == (0, 0)
    assert depth(sqs, wired.dlq) == (3, 0)
