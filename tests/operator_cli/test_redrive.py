"""`dlq-replay redrive`, client-side: copies byte-exact, deletes only what was sent, tallies that
add up, nothing lost when it fails or is interrupted halfway, and a rerun that finishes."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError
from dlq_replay.cli.redrive_tally import mode_text
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE
from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.receiving import drain
from dlq_replay.ops.redrive import (
    FailReason,
    ModeChoice,
    ModeReason,
    MoveMode,
    RedriveRequest,
    Rewrite,
    SkipReason,
    choose_mode,
    plan_copy,
)
from dlq_replay.ops.select import Selector

from .support import (
    ACCOUNT,
    COUNT,
    PARK_REASON,
    Queues,
    assert_one_line_error,
    binary,
    depth,
    make_queues,
    park,
    run_cli,
    string,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


FAST = ("--wait-seconds", "0")
EXTRA = {
    "tenant": string("acme"),
    "weight": string("12.50", "Number.float"),
    "trace": string("ünïcode ✓", "String.utf8"),
    "blob": binary(bytes(range(256)), "Binary.gzip"),
}


def redrive(capsys: pytest.CaptureFixture[str], queues: Queues, *extra: str) -> Any:
    return run_cli(capsys, "redrive", *queues.options(), *FAST, "--json", *extra)


def bodies(messages: list[Any]) -> Counter[str]:
    return Counter(str(m["Body"]) for m in messages)


def test_client_side_redrive_moves_byte_exact_copies_and_removes_the_park_reason(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, [f"order-{i}" for i in range(13)], extra=EXTRA)

    result = redrive(capsys, queues, "--client-side")

    assert result.code == 0, result
    tally = result.json()
    assert (tally["seen"], tally["moved"], tally["failed"], tally["skipped"]) == (13, 13, 0, 0)
    assert tally["adds_up"]
    assert depth(sqs, queues.operator) == (0, 0)
    moved = drain(sqs, queues.main)
    assert bodies(moved) == Counter(f"order-{i}" for i in range(13))
    for message in moved:
        attributes = {k: dict(v) for k, v in message["MessageAttributes"].items()}
        assert PARK_REASON not in attributes
        assert attributes[COUNT] == {"DataType": "Number", "StringValue": "3"}  # kept
        for name, value in EXTRA.items():
            assert attributes[name] == dict(value), name


def test_keep_sends_copies_and_leaves_the_originals_visible(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    ids = park(sqs, queues.operator, [f"order-{i}" for i in range(12)], extra=EXTRA)

    result = redrive(capsys, queues, "--keep")

    assert result.code == 0, result
    tally = result.json()
    assert tally["keep"] is True
    assert (tally["seen"], tally["moved"], tally["failed"], tally["skipped"]) == (12, 12, 0, 0)
    assert tally["not_released"] == 0
    # The originals are all still there, visible at once, park reason and all.
    assert depth(sqs, queues.operator) == (12, 0)
    originals = drain(sqs, queues.operator)
    assert sorted(m["MessageId"] for m in originals) == sorted(ids)
    assert all(PARK_REASON in m["MessageAttributes"] for m in originals)
    copies = drain(sqs, queues.main)
    assert bodies(copies) == Counter(f"order-{i}" for i in range(12))
    for message in copies:
        assert PARK_REASON not in message["MessageAttributes"]
        for name, value in EXTRA.items():
            assert dict(message["MessageAttributes"][name]) == dict(value), name


def test_keep_is_client_side_and_says_copied(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a"])
    request = RedriveRequest(
        source=queue_info(sqs, queues.operator),
        destination=queue_info(sqs, queues.main),
        keep=True,
    )
    choice = choose_mode(sqs, request, client_side=False)
    assert choice == ModeChoice(MoveMode.CLIENT, ModeReason.REWRITES, (Rewrite.KEEP,))
    assert mode_text(choice, request.source) == "--keep: only a client-side move can do that"

    result = run_cli(capsys, "redrive", *queues.options(), *FAST, "--keep")

    assert result.code == 0, result
    assert "copied (originals kept)" in result.out
    assert depth(sqs, queues.operator) == (1, 0)


def test_selection_moves_exactly_the_matching_messages_and_gives_back_the_rest(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    acme, other = {"tenant": string("acme")}, {"tenant": string("globex")}
    park(sqs, queues.operator, ['{"total": 150, "status": "failed"}'] * 3, extra=acme)
    park(sqs, queues.operator, ['{"total": 50, "status": "failed"}'] * 4, extra=acme)
    park(sqs, queues.operator, ['{"total": 999, "status": "failed"}'] * 2, extra=other)
    park(sqs, queues.operator, ["plain text, total 150"] * 2, extra=acme)

    result = redrive(
        capsys, queues, "--where", "tenant=acme", "--match", "total > `100`", "--older-than", "0s"
    )

    assert result.code == 0, result
    tally = result.json()
    assert (tally["seen"], tally["moved"], tally["skipped"]) == (11, 3, 8)
    assert tally["skips"] == {"filtered": 8}
    assert bodies(drain(sqs, queues.main)) == Counter({'{"total": 150, "status": "failed"}': 3})
    assert depth(sqs, queues.operator) == (8, 0)  # given back at once


def test_selection_by_group_and_text(sqs: SQSClient) -> None:
    fifo = make_queues(sqs, "groups", fifo=True)
    for group in ("customer-1", "customer-2", "customer-3"):
        park(sqs, fifo.operator, [f"{group}: timeout after 30ms", f"{group}: refused"], group=group)
    request = RedriveRequest(
        source=queue_info(sqs, fifo.operator),
        destination=queue_info(sqs, fifo.main),
        wait_seconds=0,
        selector=Selector(
            groups=frozenset({"customer-1", "customer-3"}),
            match_text=re.compile(r"timeout after \d+ms"),
        ),
    )

    tally = ClientMove(sqs, request).run()

    assert tally.adds_up
    moved = bodies(drain(sqs, fifo.main))
    assert moved == Counter(["customer-1: timeout after 30ms", "customer-3: timeout after 30ms"])


def test_selection_options_are_checked_by_the_parser(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    for option, value, word in (
        ("--match", "total >", "JMESPath"),
        ("--match-text", "(", "regular expression"),
        ("--older-than", "2 hours", "duration"),
        ("--where", "tenant", "name=value"),
    ):
        result = run_cli(capsys, "redrive", *queues.options(), option, value)
        assert_one_line_error(result, 2, option, word)


def test_reset_count_removes_the_count(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    ids = park(sqs, queues.operator, ["a", "b"], extra={"tenant": string("acme")})

    result = redrive(capsys, queues, "--reset-count")

    assert result.code == 0, result
    assert result.json()["moved"] == 2
    assert "client move: --reset-count" not in result.out  # notes go to stderr only
    tags = set()
    for message in drain(sqs, queues.main):
        # The count removed; the move's tag added (follow/), the rest kept.
        assert set(message["MessageAttributes"]) == {"tenant", FOLLOW_ATTRIBUTE}
        tags.add(message["MessageAttributes"][FOLLOW_ATTRIBUTE]["StringValue"])
    assert tags == {f"{result.json()['action_id']}/{id_}" for id_ in ids}


def test_filter_reason_moves_only_those_and_returns_the_rest_at_once(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, [f"max-{i}" for i in range(8)], reason="max-attempts")
    park(sqs, queues.operator, [f"bad-{i}" for i in range(5)], reason="invalid-count", count="x")
    park(sqs, queues.operator, ["net"], reason=None, count="9")  # moved here by the safety net

    result = redrive(capsys, queues, "--filter-reason", "invalid-count", "--filter-reason", "none")

    tally = result.json()
    assert result.code == 0, result
    assert (tally["seen"], tally["moved"], tally["skipped"], tally["failed"]) == (14, 6, 8, 0)
    assert tally["skips"] == {"filtered": 8}
    assert bodies(drain(sqs, queues.main)) == Counter([*(f"bad-{i}" for i in range(5)), "net"])
    # the others are visible again right away, not after a visibility timeout
    assert depth(sqs, queues.operator) == (8, 0)


def test_consumer_parks_are_filtered_by_their_reason_and_lose_reason_and_detail(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    detail = {"dlq-replay-error": string("field 'sku' is missing")}
    (bad,) = park(sqs, queues.operator, ["bad-sku"], reason="consumer:invalid-order", extra=detail)
    park(sqs, queues.operator, ["late"], reason="consumer:too-late")
    park(sqs, queues.operator, ["max"], reason="max-attempts")

    result = redrive(capsys, queues, "--filter-reason", "consumer:invalid-order")

    assert result.code == 0, result
    assert result.json()["moved"] == 1
    (moved,) = drain(sqs, queues.main)
    assert moved["Body"] == "bad-sku"
    # Park reason and detail removed; the move's tag added (follow/).
    assert set(moved["MessageAttributes"]) == {COUNT, FOLLOW_ATTRIBUTE}
    tag = moved["MessageAttributes"][FOLLOW_ATTRIBUTE]["StringValue"]
    assert tag == f"{result.json()['action_id']}/{bad}"
    assert run_cli(capsys, "redrive", *queues.options(), "--filter-reason", "consumer:").code == 2


def test_consumer_star_selects_every_consumer_park_and_a_bare_reason_says_how(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["bad-sku"], reason="consumer:invalid-order")
    park(sqs, queues.operator, ["late"], reason="consumer:too-late")
    park(sqs, queues.operator, ["max"], reason="max-attempts")

    result = redrive(capsys, queues, "--filter-reason", "consumer:*")

    assert result.code == 0, result
    assert result.json()["moved"] == 2
    assert bodies(drain(sqs, queues.main)) == Counter(["bad-sku", "late"])
    bare = run_cli(capsys, "redrive", *queues.options(), "--filter-reason", "invalid-order")
    assert bare.code == 2
    assert (
        "a consumer's park for 'invalid-order' is selected as consumer:invalid-order, "
        "every consumer park as consumer:*" in bare.err
    )
    assert depth(sqs, queues.operator) == (1, 0)  # the replay's own park stays


def test_dry_run_moves_nothing(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(12)])
    park(sqs, queues.operator, ["other"], reason="rejected")

    result = redrive(capsys, queues, "--dry-run", "--filter-reason", "max-attempts")

    tally = result.json()
    assert result.code == 0, result
    assert tally["dry_run"]
    assert (tally["seen"], tally["moved"], tally["skipped"]) == (13, 12, 1)
    assert depth(sqs, queues.main) == (0, 0)
    assert depth(sqs, queues.operator) == (13, 0)
    table = run_cli(capsys, "redrive", *queues.options(), *FAST, "--dry-run", "--client-side")
    assert "would move" in table.out
    assert "nothing was sent or deleted" in table.out
    assert depth(sqs, queues.operator) == (13, 0)


def test_native_dry_run_starts_no_task(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a", "b"])

    result = redrive(capsys, queues, "--dry-run")

    assert result.code == 0, result
    plan = result.json()
    assert plan["mode"] == "native"
    assert plan["approximate_messages"] == 2
    assert depth(sqs, queues.operator) == (2, 0)


def test_limit(capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(12)])

    result = redrive(capsys, queues, "--limit", "5")

    assert result.json()["moved"] == 5
    assert depth(sqs, queues.main) == (5, 0)
    assert depth(sqs, queues.operator) == (7, 0)


def test_to_source_skips_messages_without_a_source_queue(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["parked by the replay"])

    result = redrive(capsys, queues, "--to", "source", "--client-side")

    tally = result.json()
    assert (tally["seen"], tally["skipped"], tally["skips"]) == (1, 1, {"no-source-queue": 1})
    assert depth(sqs, queues.operator) == (1, 0)


def test_fifo_copies_keep_the_group_and_get_a_deterministic_deduplication_id(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    fifo = make_queues(sqs, "pay", fifo=True)
    ids = park(sqs, fifo.operator, ["a1", "a2"], group="alice")
    ids += park(sqs, fifo.operator, ["b1"], group="bob")

    result = run_cli(capsys, "redrive", *fifo.options(), *FAST, "--json", "--reset-count")

    assert result.json()["moved"] == 3
    moved = drain(sqs, fifo.main)
    assert [
        (m["Body"], m["Attributes"]["MessageGroupId"]) for m in moved if m["Body"][0] == "a"
    ] == [
        ("a1", "alice"),
        ("a2", "alice"),
    ]
    dedup = {m["Attributes"]["MessageDeduplicationId"] for m in moved}
    assert dedup == {f"{message_id}-redrive" for message_id in ids}


# -- failures and interruptions ---------------------------------------------------------------


def fail_call(client: SQSClient, operation: str, on_call: int, error: BaseException) -> None:
    """Make the `on_call`-th request of `operation` raise `error` (before it is sent)."""
    calls = Counter[str]()

    def hook(**_: Any) -> None:
        calls[operation] += 1
        if calls[operation] == on_call:
            raise error

    client.meta.events.register(f"before-call.sqs.{operation}", hook)


def signal_on_call(
    client: SQSClient, operation: str, on_call: int, signum: int = signal.SIGINT
) -> None:
    """Send `signum` to this process (its main thread, where the command waits) as the
    `on_call`-th request of `operation` goes out: a Ctrl-C while that request is in flight."""
    calls = Counter[str]()

    def hook(**_: Any) -> None:
        calls[operation] += 1
        if calls[operation] == on_call:
            signal.pthread_kill(threading.main_thread().ident or 0, signum)
            time.sleep(0.3)  # the handler runs in the main thread meanwhile

    client.meta.events.register(f"before-call.sqs.{operation}", hook)


def unavailable(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "try later"}}, operation)


def test_a_send_failure_halfway_loses_nothing_and_a_rerun_finishes(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
) -> None:
    expected = Counter(f"m{i}" for i in range(30))
    park(sqs, queues.operator, list(expected))
    fail_call(command_sqs, "SendMessageBatch", 2, unavailable("SendMessageBatch"))

    first = redrive(capsys, queues, "--client-side", "--concurrency", "1")

    tally = first.json()
    assert first.code == 1
    assert (tally["seen"], tally["moved"], tally["failed"]) == (30, 20, 10)
    assert tally["failures"] == {"ServiceUnavailable": 10}
    assert tally["adds_up"]
    assert depth(sqs, queues.operator) == (10, 0)  # the failed ones are back, visible

    second = redrive(capsys, queues, "--client-side")

    assert second.code == 0, second
    assert second.json()["moved"] == 10
    assert bodies(drain(sqs, queues.main)) == expected  # all there, no duplicates
    assert depth(sqs, queues.operator) == (0, 0)


def test_a_delete_failure_counts_as_failed_and_keeps_the_original(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(20)])
    fail_call(command_sqs, "DeleteMessageBatch", 1, unavailable("DeleteMessageBatch"))

    result = redrive(capsys, queues, "--client-side", "--concurrency", "1")

    tally = result.json()
    assert result.code == 1
    assert (tally["seen"], tally["moved"], tally["sent_not_deleted"], tally["failed"]) == (
        20,
        10,
        10,
        0,
    )
    assert tally["adds_up"]
    assert depth(sqs, queues.main) == (20, 0)  # the copies were sent
    assert depth(sqs, queues.operator) == (10, 0)  # and their originals are still there


@pytest.mark.parametrize("operation", ["SendMessageBatch", "DeleteMessageBatch"])
def test_interrupted_halfway_nothing_is_lost_and_a_rerun_continues(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
    operation: str,
) -> None:
    """Ctrl-C while the 2nd send, or the 2nd delete, is in flight: it finishes, the originals
    of what it sent are deleted, the rest is made visible again, and the tally says so."""
    expected = Counter(f"m{i}" for i in range(30))
    park(sqs, queues.operator, list(expected))
    signal_on_call(command_sqs, operation, 2)

    first = redrive(capsys, queues, "--reset-count", "--concurrency", "1")

    assert first.code == 130
    assert "SIGINT: stopping" in first.err
    assert "Traceback" not in first.err
    tally = first.json()
    assert (tally["moved"], tally["sent_not_deleted"], tally["interrupted"]) == (20, 0, "SIGINT")
    assert tally["adds_up"]
    assert depth(sqs, queues.operator) == (30 - 20, 0)  # released at once, not hidden
    assert depth(sqs, queues.main) == (20, 0)

    second = redrive(capsys, queues, "--reset-count")

    assert second.code == 0, second
    assert second.json()["adds_up"]
    arrived = bodies(drain(sqs, queues.main))
    assert set(arrived) == set(expected)  # every message arrived...
    duplicates = sum(arrived.values()) - len(expected)
    assert duplicates == 0  # the batch in flight was finished, its originals deleted
    assert depth(sqs, queues.operator) == (0, 0)


@pytest.mark.usefixtures("atomic_receive")  # four threads receive: SQS gives each its own
@pytest.mark.parametrize("operation", ["SendMessageBatch", "DeleteMessageBatch"])
def test_concurrent_batches_interrupted_lose_nothing_and_a_rerun_finishes(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
    operation: str,
) -> None:
    """Four batches in flight when Ctrl-C comes: each finishes, nothing is left hidden."""
    expected = Counter(f"m{i}" for i in range(80))
    park(sqs, queues.operator, list(expected))
    signal_on_call(command_sqs, operation, 2)

    first = redrive(capsys, queues, "--client-side", "--concurrency", "4")

    assert first.code == 130
    tally = first.json()
    assert tally["adds_up"]
    assert tally["sent_not_deleted"] == 0
    left, hidden = depth(sqs, queues.operator)
    assert hidden == 0  # whatever was not moved is visible again at once
    assert 0 < left < 80

    second = redrive(capsys, queues, "--client-side", "--concurrency", "4")

    assert second.code == 0, second
    assert second.json()["adds_up"]
    arrived = bodies(drain(sqs, queues.main))
    assert set(arrived) == set(expected)  # nothing lost
    duplicates = sum(arrived.values()) - len(expected)
    assert duplicates == 0  # every batch in flight was finished before the exit
    assert depth(sqs, queues.operator) == (0, 0)


def test_concurrent_move_with_a_limit_moves_exactly_the_limit(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(30)])

    result = redrive(capsys, queues, "--limit", "17", "--concurrency", "4")

    tally = result.json()
    assert (tally["seen"], tally["moved"], tally["adds_up"]) == (17, 17, True)
    assert depth(sqs, queues.main) == (17, 0)
    assert depth(sqs, queues.operator) == (13, 0)


def test_rate_limit_spaces_the_sends(sqs: SQSClient, queues: Queues) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(12)])
    now = [0.0]
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    request = RedriveRequest(
        source=queue_info(sqs, queues.operator),
        destination=queue_info(sqs, queues.main),
        rate=5,
        wait_seconds=0,
        concurrency=1,  # one fake clock: the schedule in order
    )

    tally = ClientMove(sqs, request, clock=lambda: now[0], sleep=sleep).run()

    assert tally.moved == 12
    # batches of 5, 5, 2: the 2nd may start 1 s after the 1st, the 3rd 2 s after it
    assert pauses == [1.0, 1.0]


def test_mode_choice(sqs: SQSClient, queues: Queues) -> None:
    operator = queue_info(sqs, queues.operator)
    main = queue_info(sqs, queues.main)
    plain = RedriveRequest(source=operator, destination=main)
    assert choose_mode(sqs, plain, client_side=False).mode is MoveMode.NATIVE
    assert choose_mode(sqs, plain, client_side=True).mode is MoveMode.CLIENT
    for rewrite in (
        RedriveRequest(source=operator, destination=main, reset_count=True),
        RedriveRequest(
            source=operator,
            destination=main,
            selector=Selector(reasons=frozenset({"rejected"})),
        ),
        RedriveRequest(source=operator, destination=main, limit=3),
    ):
        assert choose_mode(sqs, rewrite, client_side=False).mode is MoveMode.CLIENT
    by_reason = RedriveRequest(
        source=operator, destination=main, selector=Selector(reasons=frozenset({"rejected"}))
    )
    choice = choose_mode(sqs, by_reason, client_side=False)
    assert mode_text(choice, by_reason.source).startswith("--filter-reason:")
    # an operator queue that is no queue's DLQ (existing-queue mode): StartMessageMoveTask
    # would refuse it
    lone = sqs.create_queue(QueueName="lone-operator")["QueueUrl"]
    alone = RedriveRequest(source=queue_info(sqs, lone), destination=main)
    choice = choose_mode(sqs, alone, client_side=False)
    assert choice.mode is MoveMode.CLIENT
    assert "no queue's DLQ" in mode_text(choice, alone.source)


def test_usage_errors(capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues) -> None:
    same = run_cli(capsys, "redrive", *queues.options(), "--to", "operator")
    assert_one_line_error(same, 2, "same queue")
    no_main = run_cli(capsys, "redrive", "--operator-queue-url", queues.operator)
    assert_one_line_error(no_main, 2, "main queue is unknown")
    assert run_cli(capsys, "redrive", *queues.options(), "--filter-reason", "bogus").code == 2
    assert run_cli(capsys, "redrive", *queues.options(), "--rate", "0").code == 2
    assert run_cli(capsys, "redrive", *queues.options(), "--limit", "-1").code == 2


@pytest.mark.moto_only(reason="builds ARNs in moto's fixed account")
def test_copies_go_back_to_the_source_queue_sqs_recorded(sqs: SQSClient, queues: Queues) -> None:
    """`--to source`: the DeadLetterQueueSourceArn SQS sets when it moves a message (moto
    does not set it, so the received message is built here)."""
    source_arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-main"
    request = RedriveRequest(source=queue_info(sqs, queues.operator), destination=None)
    message: Any = {
        "MessageId": "m-1",
        "ReceiptHandle": "r",
        "Body": "b",
        "Attributes": {"DeadLetterQueueSourceArn": source_arn, "AWSTraceHeader": "Root=1-x"},
        "MessageAttributes": {PARK_REASON: {"DataType": "String", "StringValue": "rejected"}},
    }

    copy = plan_copy(sqs, message, request, {})

    assert isinstance(copy, OutboundMessage)
    assert copy.queue_url == queues.main
    assert copy.trace_header == "Root=1-x"
    assert dict(copy.attributes) == {}
    unknown: Any = {**message, "Attributes": {"DeadLetterQueueSourceArn": source_arn + "-gone"}}
    assert plan_copy(sqs, unknown, request, {}) is SkipReason.NO_SOURCE


def test_copies_that_cannot_be_made_are_failures(sqs: SQSClient) -> None:
    fifo = make_queues(sqs, "pay", fifo=True)
    operator = queue_info(sqs, fifo.operator)
    request = RedriveRequest(source=operator, destination=queue_info(sqs, fifo.main))
    no_group: Any = {"MessageId": "m", "ReceiptHandle": "r", "Body": "b", "Attributes": {}}
    listed: Any = {
        **no_group,
        "Attributes": {"MessageGroupId": "g"},
        "MessageAttributes": {"tags": {"DataType": "String", "StringListValues": ["a"]}},
    }

    assert plan_copy(sqs, no_group, request, {}) is FailReason.MISSING_GROUP
    assert plan_copy(sqs, listed, request, {}) is FailReason.UNCOPYABLE


def test_redrive_from_the_dlq_stops_before_its_safety_net(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    """Skipped messages keep the receive the move spent on them: the budget applies."""
    wired = make_queues(sqs, "edge", main_max_receive_count=1, dlq_max_receive_count=4)
    park(sqs, wired.dlq, [f"m{i}" for i in range(15)], reason=None)
    for _ in range(2):  # every message received twice already
        batch = sqs.receive_message(QueueUrl=wired.dlq, MaxNumberOfMessages=10)["Messages"]
        batch += sqs.receive_message(QueueUrl=wired.dlq, MaxNumberOfMessages=10)["Messages"]
        for message in batch:
            sqs.change_message_visibility(
                QueueUrl=wired.dlq, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )

    result = run_cli(
        capsys,
        "redrive",
        *wired.options(),
        *FAST,
        "--from",
        "dlq",
        "--filter-reason",
        "rejected",
        "--json",
        "--concurrency",
        "1",
    )

    assert result.code == 1
    tally = result.json()
    assert tally["stopped"].startswith("stopped:")
    assert tally["seen"] == tally["skipped"] == 10  # one batch, then the stop
    assert depth(sqs, wired.operator) == (0, 0)  # nothing pushed into the safety net
    assert depth(sqs, wired.dlq) == (15, 0)
