"""The max-age policy (MAX_MESSAGE_AGE_SECONDS) in the pure decision: when the first failure is
known, how it is carried, and what happens when a record tells none."""

from __future__ import annotations

import dataclasses

from dlq_replay.core.attributes import (
    FIRST_FAILURE_ATTRIBUTE,
    NOT_BEFORE_ATTRIBUTE,
    Attribute,
)
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.decision import (
    Action,
    Decision,
    ParkReason,
    build_copy,
    first_failure_of,
)
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.settings import Settings
from dlq_replay.engine.decide import RecordCase

from ._support import COUNT, DLQ, MAIN, NOW, FixedRandom, lambda_record, make_settings, message

DAY = 86_400
# lambda_record's ApproximateFirstReceiveTimestamp, in seconds.
FIRST_RECEIVE = 1_763_760_000
SOON = FIRST_RECEIVE + 10  # a clock under a day after that first receive


def aged(max_age: int = DAY, max_attempts: int = 3) -> Settings:
    settings = make_settings(max_attempts=max_attempts)
    return dataclasses.replace(settings, max_message_age_seconds=max_age)


def without_first_receive() -> InboundMessage:
    record = lambda_record()
    del record["attributes"]["ApproximateFirstReceiveTimestamp"]
    return InboundMessage.from_lambda_record(record)


def number_attr(value: int | str) -> dict[str, object]:
    return {"stringValue": str(value), "dataType": "Number"}


def test_first_failure_from_the_attribute_before_the_first_receive() -> None:
    carried = message(message_attributes={FIRST_FAILURE_ATTRIBUTE: number_attr(1_700_000_000)})

    assert first_failure_of(carried) == 1_700_000_000
    assert first_failure_of(message()) == FIRST_RECEIVE
    assert first_failure_of(without_first_receive()) is None


def test_an_invalid_attribute_falls_back_to_the_first_receive() -> None:
    bad = message(message_attributes={FIRST_FAILURE_ATTRIBUTE: number_attr("-5")})

    assert first_failure_of(bad) == FIRST_RECEIVE


def test_older_than_the_limit_parks_with_max_age_and_keeps_the_count() -> None:
    old = message(
        message_attributes={
            FIRST_FAILURE_ATTRIBUTE: number_attr(int(NOW) - DAY - 1),
            COUNT: number_attr(1),
        }
    )

    decision = RecordCase(old, aged(), dlq_url=DLQ, now=NOW, rng=FixedRandom(0)).decide()

    assert decision == Decision(Action.PARK, attempt=1, reason=ParkReason.MAX_AGE)


def test_exactly_at_the_limit_is_not_older() -> None:
    at_limit = message(message_attributes={FIRST_FAILURE_ATTRIBUTE: number_attr(int(NOW) - DAY)})

    decision = RecordCase(at_limit, aged(), dlq_url=DLQ, now=int(NOW), rng=FixedRandom(0)).decide()

    assert decision.action is Action.REPLAY
    assert decision.first_failure == int(NOW) - DAY


def test_the_first_receive_time_applies_when_no_attribute_is_there() -> None:
    settings = aged(max_age=60)

    old = RecordCase(
        message(), settings, dlq_url=DLQ, now=FIRST_RECEIVE + 61, rng=FixedRandom(0)
    ).decide()
    young = RecordCase(
        message(), settings, dlq_url=DLQ, now=FIRST_RECEIVE + 60, rng=FixedRandom(0)
    ).decide()

    assert old == Decision(Action.PARK, attempt=0, reason=ParkReason.MAX_AGE)
    assert young.action is Action.REPLAY
    assert young.first_failure == FIRST_RECEIVE


def test_max_age_comes_before_max_attempts_but_not_before_an_invalid_count() -> None:
    settings = aged(max_age=60, max_attempts=3)
    at_limit = message(message_attributes={COUNT: number_attr(3)})
    invalid = message(message_attributes={COUNT: number_attr("x")})
    late = FIRST_RECEIVE + 61

    assert RecordCase(
        at_limit, settings, dlq_url=DLQ, now=late, rng=FixedRandom(0)
    ).decide().reason is (ParkReason.MAX_AGE)
    assert RecordCase(
        invalid, settings, dlq_url=DLQ, now=late, rng=FixedRandom(0)
    ).decide().reason is (ParkReason.INVALID_COUNT)


def test_a_waiting_copy_past_the_limit_is_parked_instead_of_held() -> None:
    waiting = message(
        message_attributes={
            COUNT: number_attr(1),
            NOT_BEFORE_ATTRIBUTE: number_attr(int(NOW) + 3600),
            FIRST_FAILURE_ATTRIBUTE: number_attr(int(NOW) - DAY - 1),
        }
    )

    decision = RecordCase(waiting, aged(), dlq_url=DLQ, now=NOW, rng=FixedRandom(0)).decide()

    assert decision == Decision(Action.PARK, attempt=1, reason=ParkReason.MAX_AGE)


def test_without_any_first_failure_the_age_is_not_checked_and_the_clock_starts_now() -> None:
    msg = without_first_receive()

    decision = RecordCase(msg, aged(max_age=1), dlq_url=DLQ, now=NOW, rng=FixedRandom(0)).decide()

    assert decision.action is Action.REPLAY
    assert decision.first_failure == int(NOW)
    copy = build_copy(msg, decision, aged(max_age=1))
    assert copy.attributes[FIRST_FAILURE_ATTRIBUTE] == Attribute("Number", str(int(NOW)))


def test_the_replayed_copy_carries_the_first_failure_and_keeps_an_existing_one() -> None:
    settings = aged()
    fresh = message()
    carried = message(message_attributes={FIRST_FAILURE_ATTRIBUTE: number_attr(1_763_750_000)})

    fresh_copy = build_copy(
        fresh,
        RecordCase(fresh, settings, dlq_url=DLQ, now=SOON, rng=FixedRandom(0)).decide(),
        settings,
    )
    carried_copy = build_copy(
        carried,
        RecordCase(carried, settings, dlq_url=DLQ, now=SOON, rng=FixedRandom(0)).decide(),
        settings,
    )

    assert fresh_copy.queue_url == MAIN
    assert fresh_copy.attributes[FIRST_FAILURE_ATTRIBUTE] == Attribute("Number", str(FIRST_RECEIVE))
    assert carried_copy.attributes[FIRST_FAILURE_ATTRIBUTE] == Attribute("Number", "1763750000")


def test_no_free_slot_means_no_first_failure_attribute_and_still_a_replay() -> None:
    # Eight of the sender's own, plus the count, makes nine: one slot left for the marker...
    nine = {f"a{i}": number_attr(i) for i in range(8)}
    ten = {f"a{i}": number_attr(i) for i in range(9)}
    settings = aged()

    with_slot = message(message_attributes=nine)
    full = message(message_attributes=ten)
    slot_copy = build_copy(
        with_slot,
        RecordCase(with_slot, settings, dlq_url=DLQ, now=SOON, rng=FixedRandom(0)).decide(),
        settings,
    )
    full_decision = RecordCase(full, settings, dlq_url=DLQ, now=SOON, rng=FixedRandom(0)).decide()
    full_copy = build_copy(full, full_decision, settings)

    assert FIRST_FAILURE_ATTRIBUTE in slot_copy.attributes
    assert full_decision.action is Action.REPLAY
    assert len(full_copy.attributes) == 10
    assert FIRST_FAILURE_ATTRIBUTE not in full_copy.attributes


def test_the_long_delay_marker_takes_the_last_slot_before_the_first_failure() -> None:
    settings = dataclasses.replace(aged(), backoff=BackoffPolicy(3600, 1.0, 3600, Jitter.NONE))
    eight = message(message_attributes={f"a{i}": number_attr(i) for i in range(8)})

    decision = RecordCase(eight, settings, dlq_url=DLQ, now=SOON, rng=FixedRandom(0)).decide()
    copy = build_copy(eight, decision, settings)

    assert decision.action is Action.DEFER
    assert NOT_BEFORE_ATTRIBUTE in copy.attributes
    assert FIRST_FAILURE_ATTRIBUTE not in copy.attributes


def test_off_by_default_nothing_is_added() -> None:
    settings = make_settings()
    msg = message(message_attributes={FIRST_FAILURE_ATTRIBUTE: number_attr(0)})

    decision = RecordCase(msg, settings, dlq_url=DLQ, now=NOW, rng=FixedRandom(0)).decide()

    assert decision.action is Action.REPLAY
    assert decision.first_failure is None
    assert FIRST_FAILURE_ATTRIBUTE not in build_copy(message(), decision, settings).attributes


def test_parked_copies_get_no_new_first_failure() -> None:
    settings = aged(max_age=60)
    park = RecordCase(
        message(), settings, dlq_url=DLQ, now=FIRST_RECEIVE + 61, rng=FixedRandom(0)
    ).decide()

    assert FIRST_FAILURE_ATTRIBUTE not in build_copy(message(), park, settings).attributes
