"""The replay count: advanced on replay, kept on park, and what parks a message instead."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.core.decision import Action, ParkReason

from integration.harness import (
    COUNT,
    PARK_REASON,
    Outgoing,
    RecordingLog,
    ReplayFactory,
    ReplayQueues,
    RequestLog,
    Sqs,
    attributes_of,
    binary,
    number,
    string,
)

if TYPE_CHECKING:
    from dlq_replay.engine.report import Outcome
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef


pytestmark = pytest.mark.emulator


def test_count_below_the_limit_is_advanced(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    event = sqs.dead_letter_event(
        queues, [Outgoing("second retry", {COUNT: number(2), "keep": string("me")})]
    )

    assert make_replay(queues, {"MAX_ATTEMPTS": "3"})(event) == {"batchItemFailures": []}

    (replayed,) = sqs.drain(queues.main)
    assert replayed["Body"] == "second retry"
    assert attributes_of(replayed) == {
        COUNT: {"DataType": "Number", "StringValue": "3"},
        "keep": {"DataType": "String", "StringValue": "me"},
    }
    assert sqs.drain(queues.operator) == []


def test_count_at_the_limit_parks_with_max_attempts_and_keeps_the_count(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    event = sqs.dead_letter_event(
        queues, [Outgoing("given up", {COUNT: number(3), "keep": binary(b"\x00\xff")})]
    )

    assert make_replay(queues, {"MAX_ATTEMPTS": "3"})(event) == {"batchItemFailures": []}

    assert sqs.drain(queues.main) == []
    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == "given up"
    assert attributes_of(parked) == {
        COUNT: {"DataType": "Number", "StringValue": "3"},
        "keep": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
        PARK_REASON: {"DataType": "String", "StringValue": "max-attempts"},
    }


@pytest.mark.parametrize(
    "count",
    [
        string("abc"),
        number("-1"),
        number("2.5"),
        number("1000000000"),
        string("1e9"),
        binary(b"\x01"),
    ],
    ids=["letters", "negative", "fraction", "too-big", "exponent", "binary"],
)
def test_invalid_count_parks_with_invalid_count(
    make_replay: ReplayFactory,
    sqs: Sqs,
    queues: ReplayQueues,
    count: MessageAttributeValueTypeDef,
) -> None:
    event = sqs.dead_letter_event(queues, [Outgoing("bad count", {COUNT: count})])

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    assert sqs.drain(queues.main) == []
    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == "bad count"
    assert attributes_of(parked) == {
        COUNT: dict(count),  # the bad value travels unchanged, for the operator to see
        PARK_REASON: {"DataType": "String", "StringValue": "invalid-count"},
    }


def test_ten_attributes_and_no_count_parks_with_exactly_those_ten(
    make_replay: ReplayFactory,
    sqs: Sqs,
    queues: ReplayQueues,
    replay_client: SQSClient,
    replay_log: RecordingLog,
) -> None:
    ten: dict[str, MessageAttributeValueTypeDef] = {f"a{i}": string(f"v{i}") for i in range(10)}
    log = RequestLog(replay_client)
    event = sqs.dead_letter_event(queues, [Outgoing("full house", ten)])

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    # moto does not enforce SQS's 10-attribute limit, so the request is the evidence: no 11th
    # attribute (neither the count nor the park reason) was ever sent anywhere.
    assert log.sent_entries(queues.main) == []
    (entry,) = log.sent_entries(queues.operator)
    expected: dict[str, Any] = {name: dict(value) for name, value in ten.items()}
    assert entry["MessageAttributes"] == expected
    assert sqs.drain(queues.main) == []
    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == "full house"
    assert attributes_of(parked) == expected
    (line,) = replay_log.lines
    assert (line.message, line.extra["reason"]) == ("record parked", "attribute-limit")


def test_nine_attributes_and_no_count_still_replays_with_ten(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    nine: dict[str, MessageAttributeValueTypeDef] = {f"a{i}": number(i) for i in range(9)}
    event = sqs.dead_letter_event(queues, [Outgoing("room for one", nine)])

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    (replayed,) = sqs.drain(queues.main)
    received = attributes_of(replayed)
    assert len(received) == 10
    assert received[COUNT] == {"DataType": "Number", "StringValue": "1"}


def test_the_outcome_hook_sees_each_record_once_as_the_log_says(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_log: RecordingLog
) -> None:
    event = sqs.dead_letter_event(
        queues,
        [
            Outgoing("first try"),
            Outgoing("at the limit", {COUNT: number(3)}),
            Outgoing("bad count", {COUNT: string("x")}),
        ],
    )
    seen: list[Outcome] = []

    assert make_replay(queues, {"MAX_ATTEMPTS": "3"}, on_outcome=seen.append)(event) == {
        "batchItemFailures": []
    }

    assert [o.message.message_id for o in seen] == [r["messageId"] for r in event["Records"]]
    assert [(o.decision.action, o.decision.reason, o.failure) for o in seen] == [
        (Action.REPLAY, None, None),
        (Action.PARK, ParkReason.MAX_ATTEMPTS, None),
        (Action.PARK, ParkReason.INVALID_COUNT, None),
    ]
    # At INFO: a line of its own for each parked record, one line for the routine ones.
    info = [line for line in replay_log.lines if line.level == "info"]
    assert [line.message for line in info] == ["record parked", "record parked", "batch outcomes"]
    logged = {
        entry["message_id"]: entry["action"]
        for line in info
        for entry in (line.extra["records"] if line.message == "batch outcomes" else [line.extra])
    }
    assert logged == {o.message.message_id: o.decision.action.value for o in seen}
    # The routine record's own line is there at DEBUG.
    debug = [line for line in replay_log.lines if line.level == "debug"]
    assert [(line.message, line.extra["message_id"]) for line in debug] == [
        ("record replayed", seen[0].message.message_id)
    ]
