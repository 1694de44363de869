"""`redrive --until-failing` and `import --until-failing`: with a consumer that fails the
copies again, the run backs off and stops with the reason, leaving the rest where it was; with
a healthy consumer it moves everything."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.sqs.depth import queue_depth

from .support import Queues, assert_one_line_error, make_queues, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

ADAPTIVE = ("--until-failing", "--check-seconds", "1")


@contextmanager
def consumer(sqs: SQSClient, url: str, *, healthy: bool) -> Iterator[None]:
    """A consumer of the main queue: healthy, it deletes what it receives; broken, it gives
    every message back at once, so SQS dead-letters it past maxReceiveCount."""
    done = threading.Event()

    def consume() -> None:
        while not done.is_set():
            messages = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0, WaitTimeSeconds=0
            ).get("Messages", [])
            for message in messages if healthy else ():
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            done.wait(0.05)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def total(sqs: SQSClient, *urls: str) -> int:
    return sum(queue_depth(sqs, url).total for url in urls)


def redrive(capsys: pytest.CaptureFixture[str], queues: Queues, *extra: str) -> Any:
    return run_cli(capsys, "redrive", *queues.options(), "--wait-seconds", "0", "--json", *extra)


@pytest.fixture
def failing_queues(sqs: SQSClient) -> Queues:
    # One receive on the main queue, then SQS dead-letters; the DLQ's own safety net far away.
    return make_queues(sqs, "fragile", main_max_receive_count=1, dlq_max_receive_count=50)


@pytest.mark.parametrize("concurrency", [(), ("--concurrency", "8")], ids=["one-batch", "eight"])
def test_redrive_stops_when_the_consumer_fails_the_copies_again(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    failing_queues: Queues,
    concurrency: tuple[str, ...],
) -> None:
    queues = failing_queues
    park(sqs, queues.operator, [f"m{i}" for i in range(120)])

    # Checks 2 s apart: every window must see copies dead-lettered by the consumer thread,
    # which shares this process (and its interpreter lock) with the redrive's threads; under
    # a loaded CI machine a 1 s window once saw none, a clean check that doubled the rate back.
    with consumer(sqs, queues.main, healthy=False):
        result = redrive(
            capsys, queues, "--until-failing", "--check-seconds", "2", *concurrency, "--rate", "20"
        )

    assert result.code == 1, result
    tally = result.json()
    assert tally["stopped"].startswith("stopped: ")
    assert "arrived in fragile-dlq over the last 3 checks" in tally["stopped"]
    assert "the copies are failing again" in tally["stopped"]
    assert tally["stopped"] in result.err
    assert tally["adds_up"]
    assert 0 < tally["moved"] < 100  # stopped long before the 120 were sent
    pace = tally["pace"]
    assert pace["watched"] == queues.dlq
    assert pace["arrivals"] >= 3
    assert pace["backoffs"] == 2
    assert pace["rate"] == 5.0  # 20 -> 10 -> 5, then stopped
    # Nothing lost: what was not moved is back in the operator queue, visible.
    assert queue_depth(sqs, queues.operator).visible == 120 - tally["moved"]
    assert total(sqs, queues.main, queues.dlq) == tally["moved"]


def test_redrive_from_the_dlq_it_watches_counts_its_own_deletes(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, failing_queues: Queues
) -> None:
    # The copies fail back into the very queue the run deletes from: its depth alone would
    # not grow, the run's own deletes have to be added. (Unwatched, the run would move the
    # returning copies around for ever: --limit bounds it, so the test fails instead of hanging.)
    queues = failing_queues
    park(sqs, queues.dlq, [f"m{i}" for i in range(120)], reason=None)

    with consumer(sqs, queues.main, healthy=False):
        result = redrive(
            capsys, queues, "--from", "dlq", *ADAPTIVE, "--rate", "20", "--limit", "300"
        )

    assert result.code == 1, result
    tally = result.json()
    assert "arrived in fragile-dlq" in tally["stopped"]
    assert tally["adds_up"]
    assert total(sqs, queues.main, queues.dlq) == 120


def test_redrive_moves_everything_while_the_consumer_is_healthy(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, failing_queues: Queues
) -> None:
    queues = failing_queues
    park(sqs, queues.operator, [f"m{i}" for i in range(40)])

    with consumer(sqs, queues.main, healthy=True):
        result = redrive(capsys, queues, *ADAPTIVE, "--rate", "40")

    assert result.code == 0, result
    tally = result.json()
    assert (tally["moved"], tally["stopped"]) == (40, None)
    assert tally["pace"]["arrivals"] == 0
    assert tally["pace"]["rate"] == 40.0
    assert total(sqs, queues.operator, queues.dlq) == 0


def test_import_stops_when_the_consumer_fails_and_a_rerun_continues(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, failing_queues: Queues, tmp_path: Path
) -> None:
    queues = failing_queues
    park(sqs, queues.operator, [f"m{i}" for i in range(150)])
    archive = tmp_path / "parked.jsonl"
    exported = run_cli(
        capsys, "export", *queues.options(), "operator", "--file", str(archive), "--delete"
    )
    assert exported.code == 0, exported
    argv = ("import", *queues.options(), str(archive), "--to", "main", "--json")

    with consumer(sqs, queues.main, healthy=False):
        first = run_cli(capsys, *argv, "--until-failing", "--check-seconds", "1", "--rate", "20")

    assert first.code == 1, first
    tally = first.json()
    assert "arrived in fragile-dlq" in tally["stopped"]
    assert tally["adds_up"]
    assert tally["failed"] == 0
    sent = tally["sent"]
    assert 0 < sent < 100
    assert tally["read"] == sent  # what was not sent is not read: the rerun starts there
    assert len((tmp_path / "parked.jsonl.progress").read_text().split()) == sent

    second = run_cli(capsys, *argv)

    assert second.code == 0, second
    assert (second.json()["sent"], second.json()["skipped"]) == (150 - sent, sent)
    assert total(sqs, queues.main, queues.dlq) == 150


def test_the_adaptive_options_are_checked(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    plain = sqs.create_queue(QueueName="no-redrive-policy")["QueueUrl"]

    assert_one_line_error(
        redrive(capsys, queues, "--check-seconds", "5"),
        2,
        "--check-seconds only applies with --until-failing",
    )
    assert_one_line_error(
        redrive(capsys, queues, "--failure-threshold", "5"),
        2,
        "--failure-threshold only applies with --until-failing",
    )
    assert_one_line_error(
        redrive(capsys, queues, "--until-failing", "--to", plain),
        2,
        "no-redrive-policy has no redrive policy",
    )
    archive = tmp_path / "empty.jsonl"
    archive.write_text("")
    assert_one_line_error(
        run_cli(
            capsys, "import", *queues.options(), str(archive), "--to", "source", "--until-failing"
        ),
        2,
        "with --to source the records may go to several queues",
    )
    for bad in (["--check-seconds", "0"], ["--failure-threshold", "x"]):
        assert_one_line_error(redrive(capsys, queues, "--until-failing", *bad), 2, bad[0])


def test_until_failing_is_a_client_side_move(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    queues = make_queues(sqs, "calm")
    park(sqs, queues.operator, ["a", "b"])

    result = run_cli(capsys, "redrive", *queues.options(), "--wait-seconds", "0", "--until-failing")

    assert result.code == 0, result
    assert "client move: --until-failing: only a client-side move can do that" in result.err
    assert "until failing: watching calm-dlq every 10 s, at most 10 messages/s" in result.err
    assert "a copy that fails gets there only after about 90 s, so a shorter run" in result.err
    assert "until failing: 0 arrived in calm-dlq" in result.out
    # Over in well under 90 s: it says plainly that it could not have seen a failure.
    out = " ".join(result.out.split())
    assert "the run ended before a failing copy could have reached calm-dlq (about 90 s)" in out
    assert "says nothing yet about the copies" in out
