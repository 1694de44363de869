"""Every branch of the per-record decision, over an injected clock and a seeded random source."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE, PARK_REASON_ATTRIBUTE, Attribute
from dlq_replay.core.backoff import BackoffPolicy, Jitter, RandomSource
from dlq_replay.core.decision import (
    MAX_HOLD_SECONDS,
    Action,
    Decision,
    ParkReason,
    build_copy,
    park_reason_of,
)
from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import MAX_MESSAGE_BYTES, InboundMessage
from dlq_replay.core.settings import Settings
from dlq_replay.engine.decide import RecordCase, park_instead
from dlq_replay.engine.kinds import kind_of

from ._support import (
    COUNT,
    DLQ,
    DLQ_ARN,
    DLQ_FIFO,
    DLQ_FIFO_ARN,
    MAIN,
    MAIN_FIFO,
    NOW,
    OPERATOR,
    OPERATOR_FIFO,
    SOURCE_ARN,
    FixedRandom,
    NoRandom,
    event_messages,
    lambda_record,
    make_settings,
    message,
    string_attr,
)

LONG = BackoffPolicy(3600, 2.0, 43_200, Jitter.NONE)  # attempt 1 waits exactly one hour
WAITING_NOT_BEFORE = 4_102_444_800  # dlq-waiting.json
TRACE = "Root=1-6741a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"


def extra_attributes(n: int) -> dict[str, dict[str, object]]:
    return {f"attr-{i}": string_attr(f"value-{i}") for i in range(n)}


def waiting_message() -> InboundMessage:
    (waiting,) = event_messages("dlq-waiting.json")
    return waiting


# --- replay now ------------------------------------------------------------------------------


def test_replay_now_draws_the_delay_and_counts_the_first_attempt(settings: Settings) -> None:
    msg = message(message_attributes={"tenant": string_attr("acme")})
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=random.Random(5)).decide()
    expected_delay = random.Random(5).randint(0, 60)
    assert expected_delay > 0
    assert decision == Decision(
        Action.REPLAY, MAIN, attempt=1, delay=expected_delay, drawn_delay=expected_delay
    )
    assert not decision.clamped

    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == MAIN
    assert copy.record_id == msg.message_id
    assert copy.body == msg.body
    assert copy.attributes == {
        "tenant": Attribute("String", "acme"),
        COUNT: Attribute("Number", "1"),
    }
    assert copy.delay_seconds == expected_delay
    assert copy.message_group_id is None
    assert copy.deduplication_id is None
    assert NOT_BEFORE_ATTRIBUTE not in copy.attributes


@pytest.mark.parametrize(
    ("incoming", "attempt", "ceiling"), [("0", 1, 60), ("1", 2, 120), ("2", 3, 240)]
)
def test_replay_advances_the_count_and_writes_it_as_number(
    settings: Settings, rng: random.Random, incoming: str, attempt: int, ceiling: int
) -> None:
    msg = message(message_attributes={COUNT: string_attr(incoming, "String")})
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=rng).decide()
    assert decision.action is Action.REPLAY
    assert decision.attempt == attempt
    assert 0 <= decision.delay <= ceiling
    copy = build_copy(msg, decision, settings)
    assert copy.attributes[COUNT] == Attribute("Number", str(attempt))
    assert copy.to_entry("0")["MessageAttributes"][COUNT] == {
        "DataType": "Number",
        "StringValue": str(attempt),
    }


def test_replay_delay_never_exceeds_900_on_a_standard_queue(rng: random.Random) -> None:
    settings = make_settings(max_attempts=100)
    for count in range(99):
        msg = message(message_attributes={COUNT: string_attr(str(count), "Number")})
        decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=rng).decide()
        assert decision.action is Action.REPLAY
        assert 0 <= decision.delay <= 900
        assert type(decision.delay) is int


def test_custom_count_attribute_name(rng: random.Random) -> None:
    settings = make_settings(count_attribute="retries")
    msg = message(message_attributes={"retries": string_attr("1", "Number")})
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=rng).decide()
    assert decision.attempt == 2
    copy = build_copy(msg, decision, settings)
    assert copy.attributes == {"retries": Attribute("Number", "2")}


def test_replay_of_the_standard_event(settings: Settings) -> None:
    first, traced = event_messages("dlq-standard.json")
    for msg in (first, traced):
        decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(17)).decide()
        assert decision == Decision(Action.REPLAY, MAIN, attempt=1, delay=17, drawn_delay=17)
    assert (
        build_copy(
            first,
            RecordCase(first, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(17)).decide(),
            settings,
        ).trace_header
        is None
    )
    copy = build_copy(
        traced,
        RecordCase(traced, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(17)).decide(),
        settings,
    )
    assert copy.trace_header == TRACE
    assert copy.to_entry("3") == {
        "Id": "3",
        "MessageBody": '{"orderId": "o-1002", "total": 7}',
        "MessageAttributes": {COUNT: {"DataType": "Number", "StringValue": "1"}},
        "DelaySeconds": 17,
        "MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "String", "StringValue": TRACE}},
    }


def test_entry_of_a_binary_replay_is_byte_exact(settings: Settings) -> None:
    (msg,) = event_messages("dlq-binary-attributes.json")
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(0)).decide()
    assert decision == Decision(Action.REPLAY, MAIN, attempt=1, delay=0, drawn_delay=0)
    entry = build_copy(msg, decision, settings).to_entry("0")
    assert "DelaySeconds" not in entry  # zero is left out
    assert "MessageGroupId" not in entry
    assert "MessageDeduplicationId" not in entry
    assert "MessageSystemAttributes" not in entry
    attrs = entry["MessageAttributes"]
    assert attrs["raw"] == {
        "DataType": "Binary",
        "BinaryValue": b"\x00\xff\xfe\x80\x7f\xc3(not utf-8 \xe2\x82",
    }
    assert attrs["payload"]["DataType"] == "Binary.gzip"
    assert attrs["priority"] == {"DataType": "Number.int", "StringValue": "5"}
    assert attrs["region-tag"] == {"DataType": "String.custom", "StringValue": "eu-west-1/zone-b"}
    assert attrs["unicode"] == {"DataType": "String", "StringValue": "caf\u00e9 \u2603 \U0001f600"}
    assert attrs[COUNT] == {"DataType": "Number", "StringValue": "1"}
    assert len(attrs) == 6


# --- parks -----------------------------------------------------------------------------------


def test_max_attempts_parks_and_keeps_the_count(settings: Settings) -> None:
    (msg,) = event_messages("dlq-at-attempt-limit.json")
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, attempt=3, reason=ParkReason.MAX_ATTEMPTS)
    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == OPERATOR
    assert copy.body == '{"orderId": "o-3001"}'
    assert copy.attributes == {
        COUNT: Attribute("Number", "3"),
        "tenant": Attribute("String", "acme"),
        PARK_REASON_ATTRIBUTE: Attribute("String", "max-attempts"),
    }
    assert copy.delay_seconds == 0
    assert copy.deduplication_id is None


def test_max_attempts_park_with_ten_attributes_omits_the_reason(settings: Settings) -> None:
    attrs = {**extra_attributes(9), COUNT: string_attr("3", "Number")}
    msg = message(message_attributes=attrs)
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, attempt=3, reason=ParkReason.MAX_ATTEMPTS)
    copy = build_copy(msg, decision, settings)
    assert copy.attributes == msg.attributes
    assert PARK_REASON_ATTRIBUTE not in copy.attributes


def test_max_attempts_follows_the_setting() -> None:
    msg = message(message_attributes={COUNT: string_attr("4", "Number")})
    five = RecordCase(
        msg, make_settings(max_attempts=5), dlq_url=DLQ, now=NOW, rng=FixedRandom(1)
    ).decide()
    four = RecordCase(
        msg, make_settings(max_attempts=4), dlq_url=DLQ, now=NOW, rng=NoRandom()
    ).decide()
    assert five.action is Action.REPLAY
    assert five.attempt == 5
    assert four == Decision(Action.PARK, attempt=4, reason=ParkReason.MAX_ATTEMPTS)


@pytest.mark.parametrize("index", range(7))
def test_invalid_count_parks(settings: Settings, index: int) -> None:
    msg = event_messages("dlq-bad-count.json")[index]
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, attempt=None, reason=ParkReason.INVALID_COUNT)
    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == OPERATOR
    # the bad value travels unchanged, so the operator sees what was there
    assert copy.attributes[COUNT] == msg.attributes[COUNT]
    assert copy.attributes[PARK_REASON_ATTRIBUTE] == Attribute("String", "invalid-count")
    assert len(copy.attributes) == 2


def test_ten_attributes_and_no_count_parks_without_an_eleventh(settings: Settings) -> None:
    msg = message(message_attributes=extra_attributes(10))
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, attempt=0, reason=ParkReason.ATTRIBUTE_LIMIT)
    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == OPERATOR
    assert copy.attributes == msg.attributes
    assert len(copy.attributes) == 10
    assert PARK_REASON_ATTRIBUTE not in copy.attributes
    assert len(copy.to_entry("0")["MessageAttributes"]) == 10


def test_nine_attributes_and_no_count_replays_with_ten(settings: Settings) -> None:
    msg = message(message_attributes=extra_attributes(9))
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(30)).decide()
    assert decision == Decision(Action.REPLAY, MAIN, attempt=1, delay=30, drawn_delay=30)
    copy = build_copy(msg, decision, settings)
    assert len(copy.attributes) == 10
    assert copy.attributes[COUNT] == Attribute("Number", "1")


def test_ten_attributes_including_the_count_replays(settings: Settings) -> None:
    attrs = {**extra_attributes(9), COUNT: string_attr("1", "Number")}
    msg = message(message_attributes=attrs)
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(30)).decide()
    assert decision.action is Action.REPLAY
    assert decision.attempt == 2
    copy = build_copy(msg, decision, settings)
    assert len(copy.attributes) == 10
    assert copy.attributes[COUNT] == Attribute("Number", "2")


# The count attribute for attempt 1: name + "Number" + "1".
COUNT_SIZE = len(COUNT) + len("Number") + 1


def test_body_that_leaves_exactly_room_for_the_count_replays(settings: Settings) -> None:
    msg = message(body="x" * (MAX_MESSAGE_BYTES - COUNT_SIZE))
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(9)).decide()
    assert decision == Decision(Action.REPLAY, MAIN, attempt=1, delay=9, drawn_delay=9)
    copy = build_copy(msg, decision, settings)
    assert copy.size_bytes == MAX_MESSAGE_BYTES


def test_multibyte_body_is_measured_in_bytes(settings: Settings) -> None:
    # 2-byte characters: one byte too many once the count is added.
    body = "\u00e9" * ((MAX_MESSAGE_BYTES - COUNT_SIZE) // 2) + "x"
    assert len(body.encode()) + COUNT_SIZE == MAX_MESSAGE_BYTES + 1
    assert len(body) + COUNT_SIZE < MAX_MESSAGE_BYTES  # counting characters would let it pass
    decision = RecordCase(
        message(body=body), settings, dlq_url=DLQ, now=NOW, rng=NoRandom()
    ).decide()
    assert decision.reason is ParkReason.ATTRIBUTE_LIMIT


@pytest.mark.parametrize("body_size", [MAX_MESSAGE_BYTES - COUNT_SIZE + 1, MAX_MESSAGE_BYTES])
def test_body_with_no_room_for_the_count_parks(settings: Settings, body_size: int) -> None:
    msg = message(body="y" * body_size)
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, attempt=0, reason=ParkReason.ATTRIBUTE_LIMIT)
    copy = build_copy(msg, decision, settings)
    assert copy.body == msg.body
    assert copy.attributes == {}  # not even the park reason fits
    assert copy.size_bytes == body_size


# --- long delays: defer, clamp, hold, release ------------------------------------------------


def test_long_delay_defers_to_the_dlq_with_not_before() -> None:
    settings = make_settings(backoff=LONG)
    msg = message(message_attributes={"tenant": string_attr("acme")})
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    not_before = math.floor(NOW) + 3600
    assert not_before == 1_795_003_600
    assert decision == Decision(
        Action.DEFER, DLQ, attempt=1, delay=900, not_before=not_before, drawn_delay=3600
    )
    assert not decision.clamped
    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == DLQ
    assert copy.delay_seconds == 900
    assert copy.attributes == {
        "tenant": Attribute("String", "acme"),
        COUNT: Attribute("Number", "1"),
        NOT_BEFORE_ATTRIBUTE: Attribute("Number", "1795003600"),
    }
    assert copy.to_entry("0")["DelaySeconds"] == 900


def test_jittered_long_delays_defer_or_replay_by_the_900_second_line(rng: random.Random) -> None:
    settings = make_settings(backoff=BackoffPolicy(60, 2.0, 43_200, Jitter.FULL), max_attempts=20)
    msg = message(message_attributes={COUNT: string_attr("10", "Number")})  # ceiling 43200
    seen = set()
    for _ in range(200):
        decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=rng).decide()
        assert decision.drawn_delay is not None
        if decision.drawn_delay <= 900:
            assert decision == Decision(
                Action.REPLAY, MAIN, 11, decision.drawn_delay, drawn_delay=decision.drawn_delay
            )
        else:
            assert decision == Decision(
                Action.DEFER,
                DLQ,
                11,
                900,
                not_before=math.floor(NOW) + decision.drawn_delay,
                drawn_delay=decision.drawn_delay,
            )
        seen.add(decision.action)
    assert seen == {Action.REPLAY, Action.DEFER}


@pytest.mark.parametrize("with_count", [False, True])
def test_no_slot_for_not_before_clamps_to_900(with_count: bool) -> None:
    settings = make_settings(backoff=LONG, max_attempts=5)
    attrs = extra_attributes(9)
    if with_count:
        attrs[COUNT] = string_attr("0", "Number")
    msg = message(message_attributes=attrs)
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.REPLAY, MAIN, attempt=1, delay=900, drawn_delay=3600)
    assert decision.clamped
    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == MAIN
    assert copy.delay_seconds == 900
    assert len(copy.attributes) == 10
    assert NOT_BEFORE_ATTRIBUTE not in copy.attributes


def test_no_room_in_size_for_not_before_clamps() -> None:
    settings = make_settings(backoff=LONG)
    msg = message(body="z" * (MAX_MESSAGE_BYTES - COUNT_SIZE))
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.REPLAY, MAIN, attempt=1, delay=900, drawn_delay=3600)
    assert decision.clamped


def test_waiting_copy_before_its_time_is_held() -> None:
    settings = make_settings(backoff=LONG)
    msg = waiting_message()
    decision = RecordCase(
        msg, settings, dlq_url=DLQ, now=WAITING_NOT_BEFORE - 5000, rng=NoRandom()
    ).decide()
    assert decision == Decision(Action.HOLD, attempt=2, delay=5000, not_before=WAITING_NOT_BEFORE)
    assert decision.destination is None
    with pytest.raises(ValueError, match="needs a destination"):
        build_copy(msg, decision, settings)


def test_hold_stays_a_minute_short_of_twelve_hours() -> None:
    # SQS counts the 12-hour visibility limit from the receive, which was moments ago.
    decision = RecordCase(
        waiting_message(),
        make_settings(backoff=BackoffPolicy(base_seconds=60, cap_seconds=43_200)),
        dlq_url=DLQ,
        now=WAITING_NOT_BEFORE - 43_200,
        rng=NoRandom(),
    ).decide()
    assert decision == Decision(
        Action.HOLD, attempt=2, delay=MAX_HOLD_SECONDS, not_before=WAITING_NOT_BEFORE
    )
    assert MAX_HOLD_SECONDS == 43_140


def test_wait_left_is_bounded_by_the_cap() -> None:
    # A not-before far beyond anything the cap could have produced (edited by hand, or written
    # under a larger cap) must not hide the message until the DLQ's retention deletes it.
    two_hours = BackoffPolicy(3600, 2.0, 7200, Jitter.NONE)
    decision = RecordCase(
        waiting_message(),
        make_settings(backoff=two_hours),
        dlq_url=DLQ,
        now=WAITING_NOT_BEFORE - 100_000.7,
        rng=NoRandom(),
    ).decide()
    assert decision == Decision(Action.HOLD, attempt=2, delay=7200, not_before=WAITING_NOT_BEFORE)


def test_hold_with_a_realistic_clock() -> None:
    # not-before values are epoch seconds (> 10^9), far beyond the count's own bound
    not_before = math.floor(NOW) + 7200
    msg = message(
        message_attributes={
            COUNT: string_attr("1", "Number"),
            NOT_BEFORE_ATTRIBUTE: string_attr(str(not_before), "Number"),
        }
    )
    decision = RecordCase(
        msg, make_settings(backoff=LONG), dlq_url=DLQ, now=NOW, rng=NoRandom()
    ).decide()
    assert decision == Decision(Action.HOLD, attempt=1, delay=7200, not_before=not_before)


@pytest.mark.parametrize(
    ("now", "remaining"),
    [
        (WAITING_NOT_BEFORE - 900, 900),
        (WAITING_NOT_BEFORE - 300.9, 301),
        (WAITING_NOT_BEFORE - 1, 1),
        (WAITING_NOT_BEFORE, 0),
        (WAITING_NOT_BEFORE + 86_400, 0),
    ],
)
def test_waiting_copy_whose_time_has_come_is_released(now: float, remaining: int) -> None:
    settings = make_settings(backoff=LONG)
    msg = waiting_message()
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=now, rng=NoRandom()).decide()
    assert decision == Decision(Action.RELEASE, MAIN, attempt=2, delay=remaining)
    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == MAIN
    assert copy.delay_seconds == remaining
    assert copy.attributes == {
        COUNT: Attribute("Number", "2"),  # not advanced again
        "tenant": Attribute("String", "acme"),
    }
    entry = copy.to_entry("0")
    assert NOT_BEFORE_ATTRIBUTE not in entry["MessageAttributes"]


def test_one_second_past_the_release_window_is_held() -> None:
    decision = RecordCase(
        waiting_message(),
        make_settings(backoff=LONG),
        dlq_url=DLQ,
        now=WAITING_NOT_BEFORE - 901,
        rng=NoRandom(),
    ).decide()
    assert decision == Decision(Action.HOLD, attempt=2, delay=901, not_before=WAITING_NOT_BEFORE)


def test_release_is_not_parked_at_the_attempt_limit() -> None:
    settings = make_settings(max_attempts=3)
    msg = message(
        message_attributes={
            COUNT: string_attr("3", "Number"),
            NOT_BEFORE_ATTRIBUTE: string_attr(str(WAITING_NOT_BEFORE), "Number"),
        }
    )
    decision = RecordCase(
        msg, settings, dlq_url=DLQ, now=WAITING_NOT_BEFORE + 1, rng=NoRandom()
    ).decide()
    assert decision == Decision(Action.RELEASE, MAIN, attempt=3, delay=0)
    assert build_copy(msg, decision, settings).attributes == {COUNT: Attribute("Number", "3")}


def test_waiting_copy_with_a_bad_count_is_parked_without_not_before() -> None:
    msg = message(
        message_attributes={
            COUNT: string_attr("x"),
            NOT_BEFORE_ATTRIBUTE: string_attr(str(WAITING_NOT_BEFORE), "Number"),
        }
    )
    settings = make_settings()
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, reason=ParkReason.INVALID_COUNT)
    copy = build_copy(msg, decision, settings)
    assert copy.attributes == {
        COUNT: Attribute("String", "x"),
        PARK_REASON_ATTRIBUTE: Attribute("String", "invalid-count"),
    }


# --- FIFO and fair queues --------------------------------------------------------------------


def fifo_settings(backoff: BackoffPolicy | None = None, operator: str = OPERATOR_FIFO) -> Settings:
    return make_settings(main=MAIN_FIFO, operator=operator, backoff=backoff)


FIFO_EVENT = event_messages("dlq-fifo.json")  # customer-a's two records, then customer-b's
FIFO_NOT_BEFORE = 1_795_000_100
FIFO_WAITING = message(
    message_id="waiting-fifo",
    message_attributes={
        COUNT: string_attr("1", "Number"),
        NOT_BEFORE_ATTRIBUTE: string_attr(str(FIFO_NOT_BEFORE), "Number"),
    },
    system={"MessageGroupId": "customer-a"},
    queue_arn=DLQ_FIFO_ARN,
)


def fifo_attempt(count: str) -> InboundMessage:
    return message(
        message_id="fifo-msg",
        message_attributes={COUNT: string_attr(count, "Number")},
        system={"MessageGroupId": "g"},
        queue_arn=DLQ_FIFO_ARN,
    )


@dataclass(frozen=True)
class FifoCopy:
    """A record of a FIFO DLQ, what `decide` makes of it, and the copy it writes: the queue,
    the group and the deduplication id (and, where a case pins them, every attribute)."""

    message: InboundMessage
    decision: Decision
    queue_url: str
    group: str | None
    dedup: str | None
    attributes: dict[str, Attribute] | None = None
    now: float = NOW
    rng: RandomSource = field(default_factory=NoRandom)
    operator: str = OPERATOR_FIFO


REPLAYED = Decision(Action.REPLAY, MAIN_FIFO, attempt=1, delay=0, drawn_delay=0)
CUSTOMER_A_1 = "f1a00000-0000-4000-8000-000000000001"
FIFO_COPIES = {
    "replay": FifoCopy(
        FIFO_EVENT[0],
        REPLAYED,
        MAIN_FIFO,
        "customer-a",
        f"{CUSTOMER_A_1}-replay-1",
        rng=FixedRandom(0),
    ),
    "replay-same-group": FifoCopy(
        FIFO_EVENT[1],
        REPLAYED,
        MAIN_FIFO,
        "customer-a",
        "f1a00000-0000-4000-8000-000000000002-replay-1",
        rng=FixedRandom(0),
    ),
    "replay-other-group": FifoCopy(
        FIFO_EVENT[2],
        REPLAYED,
        MAIN_FIFO,
        "customer-b",
        "f1b00000-0000-4000-8000-000000000003-replay-1",
        rng=FixedRandom(0),
    ),
    # The deduplication id differs by attempt: a copy of a copy is not a repeat.
    **{
        f"replay-attempt-{n}": FifoCopy(
            fifo_attempt(str(n - 1)),
            Decision(Action.REPLAY, MAIN_FIFO, attempt=n, delay=0, drawn_delay=0),
            MAIN_FIFO,
            "g",
            f"fifo-msg-replay-{n}",
            {COUNT: Attribute("Number", str(n))},
            rng=FixedRandom(0),
        )
        for n in (1, 2, 3)
    },
    # FIFO takes no DelaySeconds: any positive delay waits in the DLQ.
    "defer": FifoCopy(
        FIFO_EVENT[0],
        Decision(
            Action.DEFER,
            DLQ_FIFO,
            attempt=1,
            delay=0,
            not_before=math.floor(NOW) + 1,
            drawn_delay=1,
        ),
        DLQ_FIFO,
        "customer-a",
        f"{CUSTOMER_A_1}-defer-1",
        {
            "tenant": Attribute("String", "customer-a"),
            COUNT: Attribute("Number", "1"),
            NOT_BEFORE_ATTRIBUTE: Attribute("Number", str(math.floor(NOW) + 1)),
        },
        rng=FixedRandom(1),
    ),
    "release-exactly-at-its-time": FifoCopy(
        FIFO_WAITING,
        Decision(Action.RELEASE, MAIN_FIFO, attempt=1, delay=0),
        MAIN_FIFO,
        "customer-a",
        "waiting-fifo-release-1",
        {COUNT: Attribute("Number", "1")},
        now=FIFO_NOT_BEFORE,
    ),
    "park-without-group": FifoCopy(
        message(message_id="no-group", queue_arn=DLQ_FIFO_ARN),
        Decision(Action.PARK, attempt=0, reason=ParkReason.MISSING_GROUP_ID),
        OPERATOR_FIFO,
        "dlq-replay-no-group",
        "no-group-park",
        {PARK_REASON_ATTRIBUTE: Attribute("String", "missing-group-id")},
    ),
    "park-to-a-standard-operator-queue": FifoCopy(
        message(queue_arn=DLQ_FIFO_ARN),
        Decision(Action.PARK, attempt=0, reason=ParkReason.MISSING_GROUP_ID),
        OPERATOR,
        None,
        None,
        operator=OPERATOR,
    ),
}


@pytest.mark.parametrize("case", FIFO_COPIES.values(), ids=FIFO_COPIES.keys())
def test_a_fifo_copy_has_no_delay_its_group_and_a_deterministic_deduplication_id(
    case: FifoCopy,
) -> None:
    settings = fifo_settings(operator=case.operator)
    decision = RecordCase(
        case.message, settings, dlq_url=DLQ_FIFO, now=case.now, rng=case.rng
    ).decide()
    assert decision == case.decision
    copy = build_copy(case.message, decision, settings)
    assert (copy.queue_url, copy.message_group_id, copy.deduplication_id) == (
        case.queue_url,
        case.group,
        case.dedup,
    )
    assert copy.delay_seconds == 0
    if case.attributes is not None:
        assert copy.attributes == case.attributes
    assert build_copy(case.message, decision, settings) == copy  # same input, same id
    entry = copy.to_entry("0")
    assert "DelaySeconds" not in entry
    assert entry.get("MessageGroupId") == case.group
    assert entry.get("MessageDeduplicationId") == case.dedup


def test_a_fifo_waiting_copy_that_comes_back_early_is_held_until_exactly_its_time() -> None:
    held = RecordCase(
        FIFO_WAITING, fifo_settings(), dlq_url=DLQ_FIFO, now=FIFO_NOT_BEFORE - 10, rng=NoRandom()
    ).decide()
    assert held == Decision(Action.HOLD, attempt=1, delay=10, not_before=FIFO_NOT_BEFORE)


def test_a_retried_record_decides_the_same_way_without_an_injected_source() -> None:
    """A FIFO record whose first write went unconfirmed is decided again later: with the
    production source (None) it takes the same path with the same deduplication id, so SQS
    drops the repeat. A fresh draw could replay at once what the first try deferred."""
    settings = fifo_settings(BackoffPolicy(1, 2.0, 4, Jitter.FULL))
    paths = set()
    for n in range(200):
        msg = message(message_id=f"m-{n}", system={"MessageGroupId": "g"}, queue_arn=DLQ_FIFO_ARN)
        first = RecordCase(msg, settings, dlq_url=DLQ_FIFO, now=NOW, rng=None).decide()
        again = RecordCase(msg, settings, dlq_url=DLQ_FIFO, now=NOW + 7, rng=None).decide()
        assert (again.action, again.drawn_delay) == (first.action, first.drawn_delay)
        ids = {build_copy(msg, d, settings).deduplication_id for d in (first, again)}
        assert len(ids) == 1
        paths.add(first.action)
    # Still a draw: across messages both paths occur (a delay of 0 replays, 1 defers).
    assert paths == {Action.REPLAY, Action.DEFER}


def test_the_keyed_draw_is_uniform_across_messages_and_new_at_each_attempt() -> None:
    settings = make_settings(max_attempts=20, backoff=BackoffPolicy(10, 1.0, 900, Jitter.FULL))
    delays = [
        RecordCase(message(message_id=f"id-{n}"), settings, dlq_url=DLQ, now=NOW, rng=None)
        .decide()
        .delay
        for n in range(2000)
    ]
    assert set(delays) == set(range(11))  # every second of [0, 10] is drawn
    assert 4.5 < sum(delays) / len(delays) < 5.5
    by_attempt = {
        RecordCase(
            message(message_id="same", message_attributes={COUNT: string_attr(str(n), "Number")}),
            settings,
            dlq_url=DLQ,
            now=NOW,
            rng=None,
        )
        .decide()
        .drawn_delay
        for n in range(19)  # every ceiling is the base (multiplier 1): only the key differs
    }
    assert len(by_attempt) > 5  # of 11 values; 5 or fewer in 19 uniform draws: p = 0.0001


def test_fifo_with_no_slot_for_not_before_replays_without_delay() -> None:
    settings = fifo_settings(backoff=LONG)
    msg = message(
        message_attributes=extra_attributes(9),
        system={"MessageGroupId": "g"},
        queue_arn=DLQ_FIFO_ARN,
    )
    decision = RecordCase(msg, settings, dlq_url=DLQ_FIFO, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.REPLAY, MAIN_FIFO, attempt=1, delay=0, drawn_delay=3600)
    assert decision.clamped


def test_fair_queue_group_is_carried_on_replay_and_park(settings: Settings) -> None:
    msg = message(system={"MessageGroupId": "tenant-42"})
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(12)).decide()
    assert decision == Decision(Action.REPLAY, MAIN, attempt=1, delay=12, drawn_delay=12)
    copy = build_copy(msg, decision, settings)
    assert copy.message_group_id == "tenant-42"
    assert copy.deduplication_id is None
    entry = copy.to_entry("0")
    assert entry["MessageGroupId"] == "tenant-42"
    assert entry["DelaySeconds"] == 12
    assert "MessageDeduplicationId" not in entry

    at_limit = message(
        message_attributes={COUNT: string_attr("3", "Number")},
        system={"MessageGroupId": "tenant-42"},
    )
    park = RecordCase(at_limit, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert park.reason is ParkReason.MAX_ATTEMPTS
    parked = build_copy(at_limit, park, settings)
    assert parked.queue_url == OPERATOR
    assert parked.message_group_id == "tenant-42"
    assert parked.deduplication_id is None


# --- routing ---------------------------------------------------------------------------------


def route(message: InboundMessage, settings: Settings) -> str | ParkReason:
    """Where the SQS kind sends a record."""
    return kind_of(RecordKind.SQS).destination(message, Recognised(RecordKind.SQS), settings)


def test_allowed_source_routes_to_that_queue(rng: random.Random) -> None:
    payments = "arn:aws:sqs:eu-west-1:210987654321:payments"
    settings = make_settings(allowed=frozenset({SOURCE_ARN, payments}))
    msg = message(system={"DeadLetterQueueSourceArn": payments})
    assert route(msg, settings) == "https://sqs.eu-west-1.amazonaws.com/210987654321/payments"
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=rng).decide()
    assert decision.action is Action.REPLAY
    assert decision.destination == "https://sqs.eu-west-1.amazonaws.com/210987654321/payments"


def test_allowed_source_in_the_china_partition() -> None:
    arn = "arn:aws-cn:sqs:cn-north-1:123456789012:orders"
    settings = make_settings(allowed=frozenset({arn}))
    msg = message(system={"DeadLetterQueueSourceArn": arn})
    assert route(msg, settings) == "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders"


def test_allowed_source_on_a_custom_endpoint() -> None:
    settings = make_settings(allowed=frozenset({SOURCE_ARN}), endpoint="http://127.0.0.1:4566/")
    msg = message(system={"DeadLetterQueueSourceArn": SOURCE_ARN})
    assert route(msg, settings) == "http://127.0.0.1:4566/123456789012/orders"


def test_allowed_fifo_source_gets_fifo_treatment() -> None:
    arn = "arn:aws:sqs:us-east-1:123456789012:billing.fifo"
    settings = make_settings(main=None, allowed=frozenset({arn}))
    msg = message(system={"DeadLetterQueueSourceArn": arn}, queue_arn=DLQ_FIFO_ARN)
    decision = RecordCase(msg, settings, dlq_url=DLQ_FIFO, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, attempt=0, reason=ParkReason.MISSING_GROUP_ID)


def test_source_not_allowed_or_absent_goes_to_main(settings: Settings) -> None:
    other = message(system={"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:x"})
    assert route(other, settings) == MAIN
    assert route(message(), settings) == MAIN


def test_no_main_queue_and_no_allowed_source_parks_unknown_source() -> None:
    settings = make_settings(main=None, allowed=frozenset({SOURCE_ARN}))
    msg = message(system={"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:x"})
    assert route(msg, settings) is ParkReason.UNKNOWN_SOURCE
    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision == Decision(Action.PARK, attempt=0, reason=ParkReason.UNKNOWN_SOURCE)
    copy = build_copy(msg, decision, settings)
    assert copy.queue_url == OPERATOR
    assert copy.attributes == {PARK_REASON_ATTRIBUTE: Attribute("String", "unknown-source")}

    allowed = message(system={"DeadLetterQueueSourceArn": SOURCE_ARN})
    assert (
        RecordCase(allowed, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(3)).decide().destination
        == MAIN
    )


def test_waiting_copy_with_no_destination_parks_unknown_source() -> None:
    decision = RecordCase(
        waiting_message(), make_settings(main=None), dlq_url=DLQ, now=NOW, rng=NoRandom()
    ).decide()
    assert decision == Decision(Action.PARK, attempt=2, reason=ParkReason.UNKNOWN_SOURCE)


# --- park instead ----------------------------------------------------------------------------


def test_park_instead_keeps_the_count_the_record_came_with(settings: Settings) -> None:
    msg = message(message_attributes={COUNT: string_attr("1", "Number")})
    replay = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(5)).decide()
    assert replay.attempt == 2
    rejected = park_instead(replay, ParkReason.REJECTED)
    assert rejected == Decision(Action.PARK, attempt=1, reason=ParkReason.REJECTED)
    copy = build_copy(msg, rejected, settings)
    assert copy.queue_url == OPERATOR
    assert copy.attributes == {
        COUNT: Attribute("Number", "1"),
        PARK_REASON_ATTRIBUTE: Attribute("String", "rejected"),
    }
    assert copy.delay_seconds == 0


def test_park_instead_of_defer_and_release() -> None:
    defer = Decision(Action.DEFER, DLQ, attempt=1, delay=900, not_before=5, drawn_delay=3600)
    assert park_instead(defer, ParkReason.REJECTED) == Decision(
        Action.PARK, attempt=0, reason=ParkReason.REJECTED
    )
    release = Decision(Action.RELEASE, MAIN, attempt=2, delay=0)
    assert park_instead(release, ParkReason.REJECTED) == Decision(
        Action.PARK, attempt=2, reason=ParkReason.REJECTED
    )


def test_park_instead_of_a_release_drops_not_before() -> None:
    settings = make_settings()
    msg = waiting_message()
    release = RecordCase(
        msg, settings, dlq_url=DLQ, now=WAITING_NOT_BEFORE, rng=NoRandom()
    ).decide()
    copy = build_copy(msg, park_instead(release, ParkReason.REJECTED), settings)
    assert copy.attributes == {
        COUNT: Attribute("Number", "2"),
        "tenant": Attribute("String", "acme"),
        PARK_REASON_ATTRIBUTE: Attribute("String", "rejected"),
    }


def test_clamped_is_only_a_replay_below_its_draw() -> None:
    assert Decision(Action.REPLAY, MAIN, 1, 900, drawn_delay=3600).clamped
    assert not Decision(Action.REPLAY, MAIN, 1, 900, drawn_delay=900).clamped
    assert not Decision(Action.RELEASE, MAIN, 1, 900).clamped
    assert not Decision(Action.DEFER, DLQ, 1, 900, not_before=1, drawn_delay=3600).clamped


def test_park_reason_values_are_the_public_names() -> None:
    assert [r.value for r in ParkReason] == [
        "max-attempts",
        "invalid-count",
        "attribute-limit",
        "missing-group-id",
        "unknown-source",
        "rejected",
        "max-age",
        "unsupported-target",
        "target-not-allowed",
        "unexpected-kind",
        "unknown-target",
        "target-not-in-rule",
        "transform-not-applied",
        "not-an-event",
    ]
    assert NOT_BEFORE_ATTRIBUTE == "dlq-replay-not-before"
    assert PARK_REASON_ATTRIBUTE == "dlq-replay-park-reason"


# --- a copy written back is released on its first arrival after its time --------------------


@pytest.mark.parametrize("fraction", [0.0, 0.25, 0.5, 0.99])
@pytest.mark.parametrize("fifo", [True, False])
def test_a_copy_deferred_at_the_cap_is_held_once_then_released(fraction: float, fifo: bool) -> None:
    """Delay = cap: the copy comes back at once (a FIFO DLQ takes no delay) or after the 900 s
    SQS serves; the hold covers the whole wait left, so its next arrival releases it."""
    cap = 3600
    policy = BackoffPolicy(cap, 2.0, cap, Jitter.NONE)
    settings = fifo_settings(policy) if fifo else make_settings(backoff=policy)
    dlq = DLQ_FIFO if fifo else DLQ
    msg = event_messages("dlq-fifo.json")[0] if fifo else message()
    start = math.floor(NOW) + fraction
    deferred = RecordCase(msg, settings, dlq_url=dlq, now=start, rng=NoRandom()).decide()
    assert deferred.action is Action.DEFER
    copy = build_copy(msg, deferred, settings)
    back = InboundMessage.from_lambda_record(
        lambda_record(
            message_id="copy-1",
            message_attributes={
                name: {"stringValue": value.string_value, "dataType": value.data_type}
                for name, value in copy.attributes.items()
            },
            system={"MessageGroupId": "customer-a"} if fifo else {},
            queue_arn=DLQ_FIFO_ARN if fifo else DLQ_ARN,
        )
    )
    arrival = start + copy.delay_seconds + 0.05
    held = RecordCase(back, settings, dlq_url=dlq, now=arrival, rng=NoRandom()).decide()
    assert held.action is Action.HOLD
    assert arrival + held.delay >= deferred.not_before  # type: ignore[operator]
    # Visible again when the hold ends (a little later still: the call itself takes time).
    released = RecordCase(
        back, settings, dlq_url=dlq, now=arrival + held.delay + 0.01, rng=NoRandom()
    ).decide()
    assert released.action is Action.RELEASE
    assert released.attempt == 1
    # Never waits longer than the drawn delay, nor shorter by a whole second.
    assert cap - 1 < deferred.not_before - start <= cap  # type: ignore[operator]


# --- a record whose eventSourceARN names no queue --------------------------------------------

BROKEN_ARN = "arn:aws:sqs:us-east-2: 123456789012:my-queue"  # Powertools' getting-started event


def test_a_record_without_a_dlq_is_still_replayed_or_parked(settings: Settings) -> None:
    replayed = RecordCase(
        message(queue_arn=BROKEN_ARN), settings, dlq_url=None, now=NOW, rng=FixedRandom(7)
    ).decide()
    assert replayed == Decision(Action.REPLAY, MAIN, attempt=1, delay=7, drawn_delay=7)
    at_limit = message(queue_arn=BROKEN_ARN, message_attributes={COUNT: string_attr("3", "Number")})
    parked = RecordCase(at_limit, settings, dlq_url=None, now=NOW, rng=NoRandom()).decide()
    assert parked == Decision(Action.PARK, attempt=3, reason=ParkReason.MAX_ATTEMPTS)


def test_a_record_that_must_wait_in_an_unknown_dlq_fails_alone() -> None:
    settings = make_settings(backoff=LONG)
    deferred = RecordCase(
        message(queue_arn=BROKEN_ARN), settings, dlq_url=None, now=NOW, rng=NoRandom()
    ).decide()
    assert deferred.action is Action.FAIL
    assert deferred.problem is not None
    assert repr(BROKEN_ARN) in deferred.problem
    assert "is not an SQS queue ARN" in deferred.problem
    waiting = RecordCase(
        waiting_message(), settings, dlq_url=None, now=WAITING_NOT_BEFORE - 5000, rng=NoRandom()
    ).decide()
    assert waiting.action is Action.FAIL
    # A waiting copy whose time has come needs no DLQ: it is released.
    due = RecordCase(
        waiting_message(), settings, dlq_url=None, now=WAITING_NOT_BEFORE, rng=NoRandom()
    ).decide()
    assert due == Decision(Action.RELEASE, MAIN, attempt=2, delay=0)


# --- the park reason the operator tools read -------------------------------------------------


def test_park_reason_of_a_message_with_its_reason() -> None:
    values = {PARK_REASON_ATTRIBUTE: Attribute("String", "max-attempts")}
    assert park_reason_of("body", values) == "max-attempts"


def test_a_parked_message_with_no_room_for_a_reason_reads_as_attribute_limit() -> None:
    ten = {f"attr-{i}": Attribute("String", "v") for i in range(10)}
    assert park_reason_of("body", ten) == "attribute-limit"
    nine = dict(list(ten.items())[:9])
    assert park_reason_of("body", nine) is None  # moved by SQS's safety net
    at_size = "x" * (MAX_MESSAGE_BYTES - 40)
    assert park_reason_of(at_size, {"a": Attribute("String", "v")}) == "attribute-limit"


def test_build_copy_and_park_reason_of_agree(settings: Settings) -> None:
    """Whatever build_copy parks for attribute-limit reads back as attribute-limit."""
    full = message(message_attributes=extra_attributes(10))
    decision = RecordCase(full, settings, dlq_url=DLQ, now=NOW, rng=NoRandom()).decide()
    assert decision.reason is ParkReason.ATTRIBUTE_LIMIT
    copy = build_copy(full, decision, settings)
    assert PARK_REASON_ATTRIBUTE not in copy.attributes
    assert park_reason_of(copy.body, copy.attributes) == "attribute-limit"


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        pytest.param({"body": "caf\udce9"}, "the body holds", id="body"),
        pytest.param(
            {"message_attributes": {"note": string_attr("x\ud800")}},
            "the value of message attribute 1 (note) holds",
            id="attribute-value",
        ),
        pytest.param(
            {"message_attributes": {"n\udcffte": string_attr("x")}},
            "the name of message attribute 1 holds",
            id="attribute-name",
        ),
        pytest.param({"system": {"MessageGroupId": "g\udc80"}}, "MessageGroupId holds", id="group"),
    ],
)
def test_a_record_holding_a_lone_surrogate_fails_with_where_and_why(
    settings: Settings, changes: dict[str, Any], where: str
) -> None:
    """No copy of it can be encoded, not even a park: it fails alone (never an exception)."""
    decision = RecordCase(
        message(**changes), settings, dlq_url=DLQ, now=NOW, rng=NoRandom()
    ).decide()
    assert decision.action is Action.FAIL
    assert decision.problem is not None
    assert decision.problem.startswith(f"{where} a lone surrogate (U+")
