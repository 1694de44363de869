"""The parts of a followed move (ops/movefollow.py) under hostile and real inputs: the
tag added to whatever attributes a moved message carries (never refused, never clamped, an
older tag replaced), the copy otherwise identical to the unfollowed one (a differential test
over the one builder), the counts written aggregated and never failing the move, the settle
window read from the destinations the copies really went to, and the follow record in the
stack's table."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.core.attributes import MAX_MESSAGE_ATTRIBUTES, Attribute
from dlq_replay.core.messages import MAX_MESSAGE_BYTES, OutboundMessage, fits_limits
from dlq_replay.follow.journal import FileFollowStore
from dlq_replay.follow.tables import DynamoFollowStore
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE, parse_follow_value
from dlq_replay.ops.movefollow import MoveFollower, action_line, tag_carried
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.receiving import drain
from dlq_replay.ops.redrive import RedriveRequest, plan_copy
from dlq_replay.targets.delivery import Delivery
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .stack import deploy
from .support import ACCOUNT, Queues, make_queues, park, run_cli, string

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

ACTION = "0123456789abcdef0123456789abcdef"
REGION = "us-east-1"
BASE = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}"

names = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=20)
values = st.one_of(
    st.builds(
        Attribute,
        st.sampled_from(["String", "Number", "String.utf8", "Number.float"]),
        st.text(max_size=200),
    ),
    st.builds(
        lambda kind, data: Attribute(kind, None, data),
        st.sampled_from(["Binary", "Binary.gzip"]),
        st.binary(max_size=200),
    ),
)
attribute_maps = st.dictionaries(
    st.one_of(names, st.just(FOLLOW_ATTRIBUTE)), values, max_size=MAX_MESSAGE_ATTRIBUTES
)
keys = st.one_of(st.uuids().map(str), st.text(max_size=140))
bodies = st.one_of(
    st.text(max_size=300),
    st.integers(0, 400).map(lambda extra: "x" * (MAX_MESSAGE_BYTES - extra)),
)


@given(body=bodies, carried=attribute_maps, key=keys)
def test_the_tag_is_added_where_a_slot_is_free_and_nothing_else_changes(
    body: str, carried: dict[str, Attribute], key: str
) -> None:
    tagged = tag_carried(body, carried, ACTION, key)

    others = {name: value for name, value in carried.items() if name != FOLLOW_ATTRIBUTE}
    assert {k: v for k, v in tagged.items() if k != FOLLOW_ATTRIBUTE} == others
    if FOLLOW_ATTRIBUTE in tagged:
        value = tagged[FOLLOW_ATTRIBUTE]
        assert value.data_type == "String"
        assert value.string_value is not None
        found = parse_follow_value(value.string_value)
        assert found is not None
        assert (found.action_id, found.key) == (ACTION, key)
        assert fits_limits(body, tagged)
    else:
        # Left untagged only for want of room, or a key no tag can carry.
        room = fits_limits(body, {**others, FOLLOW_ATTRIBUTE: string_attribute(ACTION, key)})
        assert not room or parse_follow_value(f"{ACTION}/{key}") is None


def string_attribute(action_id: str, key: str) -> Attribute:
    return Attribute("String", f"{action_id}/{key}")


def received(
    message_id: str, body: str, carried: dict[str, Attribute], group: str | None
) -> dict[str, Any]:
    """One message as boto3's ReceiveMessage gives it."""
    system = {"MessageGroupId": group} if group else {}
    return {
        "MessageId": message_id,
        "ReceiptHandle": "handle",
        "Body": body,
        "MessageAttributes": {name: dict(value.to_sqs()) for name, value in carried.items()},
        "Attributes": {**system, "AWSTraceHeader": "Root=1-abc"},
    }


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=bodies,
    carried=attribute_maps,
    fifo=st.booleans(),
    group=st.one_of(
        st.none(),
        st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20),
    ),
    reset=st.booleans(),
)
def test_a_followed_copy_is_the_unfollowed_copy_plus_its_tag(
    body: str, carried: dict[str, Attribute], fifo: bool, group: str | None, reset: bool
) -> None:
    """The differential test: the same message planned with and without a follow id gives
    the same copy (body, every other attribute byte for byte, group, deduplication id,
    delay, trace header) but for `dlq-replay-action`."""
    suffix = ".fifo" if fifo else ""
    source = queue_info_of(f"{BASE}/orders-operator{suffix}")
    destination = queue_info_of(f"{BASE}/orders-main{suffix}")
    message = received("9f0c7b1e-2d3a-4c5b-8e6f-708192a3b4c5", body, carried, group)
    plain = RedriveRequest(source, destination, reset_count=reset, count_attribute="a")
    followed = RedriveRequest(
        source, destination, reset_count=reset, count_attribute="a", follow_id=ACTION
    )

    before = plan_copy(None, message, plain, {})  # type: ignore[arg-type]  # no lookup
    after = plan_copy(None, message, followed, {})  # type: ignore[arg-type]

    if not isinstance(before, OutboundMessage):
        assert after == before  # skipped or failed alike
        return
    assert isinstance(after, OutboundMessage)
    strip = {FOLLOW_ATTRIBUTE}
    assert {k: v for k, v in after.attributes.items() if k not in strip} == {
        k: v for k, v in before.attributes.items() if k not in strip
    }
    for field in ("record_id", "queue_url", "body", "delay_seconds", "message_group_id"):
        assert getattr(after, field) == getattr(before, field), field
    assert (after.deduplication_id, after.trace_header) == (
        before.deduplication_id,
        before.trace_header,
    )
    tag = after.attributes.get(FOLLOW_ATTRIBUTE)
    if tag is not None:
        assert tag.string_value == f"{ACTION}/{message['MessageId']}"


def queue_info_of(url: str) -> Any:
    from dlq_replay.ops.queueinfo import QueueInfo

    name = url.rsplit("/", 1)[-1]
    return QueueInfo(url, f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}", url.endswith(".fifo"), 30, None)


def copy(key: str, tagged: bool) -> OutboundMessage:
    attributes = {FOLLOW_ATTRIBUTE: string_attribute(ACTION, key)} if tagged else {}
    return OutboundMessage(key, f"{BASE}/orders-main", "body", attributes)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def journal_kinds(path: Path) -> list[str]:
    return [json.loads(line)["kind"] for line in path.read_text().splitlines()]


def test_the_counts_are_written_aggregated_and_once_more_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "follow.jsonl"
    clock = Clock()
    follower = MoveFollower(FileFollowStore(path), ACTION, "redrive", clock=clock)
    follower.start()
    delivery = Delivery("d-1", "arn:aws:lambda:us-east-1:123456789012:function:f", "{}")

    for batch in range(30):  # 30 batches within 3 s: no write yet
        clock.now += 0.1
        follower.count([copy(f"k{batch}-{n}", tagged=n != 0) for n in range(10)])
    assert journal_kinds(path) == ["started"]
    clock.now += 5.0
    follower.count([copy("late", tagged=True), delivery])  # the pace's first write
    assert journal_kinds(path) == ["started", "sent"]
    follower.count([copy("last", tagged=True)])
    follower.finish()
    follower.finish()  # once

    assert journal_kinds(path) == ["started", "sent", "sent", "finished"]
    move = FileFollowStore(path).follow(ACTION)
    assert move is not None
    assert (move.sent, move.untracked) == (30 * 9 + 2, 30 + 1)
    assert (follower.sent, follower.untracked) == (move.sent, move.untracked)
    assert move.sent_at == clock.now
    assert follower.problem is None


def test_counts_from_many_threads_add_up(tmp_path: Path) -> None:
    path = tmp_path / "follow.jsonl"
    follower = MoveFollower(FileFollowStore(path), ACTION, "redrive", flush_seconds=0.0)
    follower.start()

    def work(worker: int) -> None:
        for batch in range(20):
            follower.count([copy(f"{worker}-{batch}-{n}", n % 3 != 0) for n in range(10)])

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    follower.finish()

    move = FileFollowStore(path).follow(ACTION)
    assert move is not None
    assert (move.sent + move.untracked, move.untracked) == (8 * 20 * 10, 8 * 20 * 4)


def test_a_follow_write_that_fails_never_fails_the_move(aws: None) -> None:
    """No such table (or no right to write it): the copies still go out, tagged; the first
    problem is kept, in one line, and the counts are kept for the next write."""
    store = DynamoFollowStore(boto3.client("dynamodb", region_name=REGION), "no-such-table")
    follower = MoveFollower(store, ACTION, "redrive", flush_seconds=0.0)

    follower.start()
    follower.count([copy("a", tagged=True)])
    follower.finish()

    assert follower.problem is not None
    assert "ResourceNotFoundException" in follower.problem
    assert "\n" not in follower.problem
    assert follower.sent == 1


def test_the_window_is_the_largest_of_the_queues_the_copies_went_to(
    setup_client: SQSClient, tmp_path: Path
) -> None:
    """`--to source`: the destinations are learnt as the move goes; at its end the window
    widens to the largest ((maxReceiveCount + 1) x visibility + delay + 20 s) of them."""
    sqs = setup_client
    slow, quick = make_queues(sqs, "slow", main_max_receive_count=4), make_queues(sqs, "quick")
    sqs.set_queue_attributes(
        QueueUrl=slow.main, Attributes={"VisibilityTimeout": "50", "DelaySeconds": "9"}
    )
    sqs.set_queue_attributes(QueueUrl=quick.main, Attributes={"VisibilityTimeout": "10"})
    known = queue_info(sqs, quick.main)
    assert (known.delay_seconds, known.visibility_timeout) == (0, 10)

    def window(destinations: list[str | None]) -> int:
        store = FileFollowStore(tmp_path / f"{len(destinations)}.jsonl")
        follower = MoveFollower(store, ACTION, "redrive", sqs=sqs, destinations=[known])
        follower.start()
        follower.finish(destinations)
        move = store.follow(ACTION)
        assert move is not None
        assert move.window_seconds == follower.window_seconds
        return move.window_seconds

    assert window([]) == 4 * 10 + 20
    assert window([quick.main, None, quick.main]) == 4 * 10 + 20
    assert window([quick.main, slow.main, slow.main, None]) == 5 * 50 + 9 + 20


def test_each_command_s_action_line() -> None:
    assert action_line(ACTION, True) == (
        f"followed as action {ACTION}: dlq-replay audit --follow {ACTION}"
    )
    assert action_line(ACTION, None) == f"action {ACTION}"
    native = action_line(ACTION, False)
    assert native.startswith(f"action {ACTION} is not followed")
    assert "--client-side" in native


@pytest.mark.moto_only(reason="a stack with its table, deployed into moto")
def test_with_a_stack_the_follow_record_is_in_the_stack_s_table(
    capsys: pytest.CaptureFixture[str], aws: None, setup_client: SQSClient
) -> None:
    sqs = setup_client
    outputs = deploy(boto3.client("cloudformation"), "shop")
    ids = park(sqs, outputs["OperatorQueueUrl"], [f"o{i}" for i in range(12)])

    result = run_cli(
        capsys, "redrive", "--stack", "shop", "--client-side", "--wait-seconds", "0", "--json"
    )

    assert result.code == 0, result
    action_id = result.json()["action_id"]
    table = outputs["AuditTableName"]
    move = DynamoFollowStore(boto3.client("dynamodb"), table).follow(action_id)
    assert move is not None
    assert (move.sent, move.untracked, move.command) == (12, 0, "redrive")
    main = queue_info(sqs, outputs["MainQueueUrl"])
    policy = main.redrive
    expected = ((policy.max_receive_count if policy else 1) + 1) * main.visibility_timeout
    assert move.window_seconds == expected + main.delay_seconds + 20
    assert move.sent_at is not None
    tags = {
        m["MessageAttributes"][FOLLOW_ATTRIBUTE]["StringValue"]
        for m in drain(sqs, outputs["MainQueueUrl"])
    }
    assert tags == {f"{action_id}/{i}" for i in ids}


@pytest.mark.emulator
def test_a_fifo_copy_keeps_its_group_and_deduplication_id(
    capsys: pytest.CaptureFixture[str], setup_client: SQSClient, aws: None
) -> None:
    sqs = setup_client
    queues: Queues = make_queues(sqs, "ordered", fifo=True)
    extra = {"tenant": string("acme"), "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}}
    (moved,) = park(sqs, queues.operator, ["first"], extra=extra, group="g-7")  # type: ignore[arg-type]

    result = run_cli(
        capsys, "redrive", *queues.options(), "--client-side", "--wait-seconds", "0", "--json"
    )

    assert result.code == 0, result
    (copy_,) = drain(sqs, queues.main)
    assert copy_["Body"] == "first"
    assert copy_["Attributes"]["MessageGroupId"] == "g-7"
    assert copy_["Attributes"]["MessageDeduplicationId"] == f"{moved}-redrive"
    attributes = copy_["MessageAttributes"]
    assert attributes["blob"] == {"DataType": "Binary", "BinaryValue": b"\x00\xff"}
    assert attributes["tenant"] == {"DataType": "String", "StringValue": "acme"}
    assert attributes[FOLLOW_ATTRIBUTE]["StringValue"] == f"{result.json()['action_id']}/{moved}"
