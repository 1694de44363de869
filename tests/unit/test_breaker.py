"""The outage breaker's rule and states (core/breaker.py), and its controller over the
in-memory store the worker uses, on an injected clock."""

from __future__ import annotations

import logging

import pytest
from dlq_replay.aws_lambda.breaker import Breaker
from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE
from dlq_replay.core.breaker import (
    BreakerPolicy,
    BreakerState,
    Cause,
    Counts,
    Phase,
    after_batch,
    batch_counts,
    by_operator,
    is_return,
    on_tick,
)
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.messages import InboundMessage
from dlq_replay.local.breaker import BreakerStats, MemoryStore, PollerSwitch

POLICY = BreakerPolicy()
COUNT = "sqs-dlq-replay-nb"
LOG = logging.getLogger("test.breaker")


def message(count: str | None = None, *, waiting: bool = False) -> InboundMessage:
    attrs = {} if count is None else {COUNT: attributes.number(int(count))}
    if waiting:
        attrs[NOT_BEFORE_ATTRIBUTE] = attributes.number(2_000_000_000)
    return InboundMessage(
        message_id="m", receipt_handle="r", body="{}", attributes=attrs, queue_arn="arn"
    )


@pytest.mark.parametrize(
    ("replays", "returns", "outage"),
    [
        (20, 20, True),  # everything came back
        (22, 20, True),  # 0.909 >= 0.9
        (23, 20, False),  # 0.87: some replays succeed
        (10, 19, False),  # nearly all, but too few to be more than a handful of poison
        (0, 25, True),  # returns of replays made before the window
        (1000, 100, False),  # many returns, but a small share: poison in a busy replay
    ],
)
def test_the_rule_needs_many_returns_and_nearly_all_of_the_replays(
    replays: int, returns: int, outage: bool
) -> None:
    assert POLICY.outage(Counts(replays, returns)) is outage


def test_the_pause_doubles_per_consecutive_opening_up_to_the_cap() -> None:
    assert [POLICY.pause_seconds(n) for n in (1, 2, 3, 4, 5, 6, 7, 40)] == [
        120,
        240,
        480,
        960,
        1920,
        3600,
        3600,
        3600,
    ]


def test_a_return_is_a_replayed_copy_back_not_a_first_arrival_nor_a_waiting_copy() -> None:
    assert is_return(message("1"), COUNT)
    assert is_return(message("3"), COUNT)
    assert not is_return(message(None), COUNT)
    assert not is_return(message("0"), COUNT)
    assert not is_return(message("2", waiting=True), COUNT)


def test_batch_counts_count_written_replays_and_releases_and_every_return() -> None:
    replay = Decision(Action.REPLAY, "q", 2)
    handled = [
        (message("1"), replay, True),
        (message(None), Decision(Action.REPLAY, "q", 1), True),
        (message("2", waiting=True), Decision(Action.RELEASE, "q", 2), True),
        (message("3"), Decision(Action.PARK, "op", 3), True),  # a return, parked
        (message("1"), replay, False),  # a return whose copy was not written
    ]
    assert batch_counts(handled, COUNT) == Counts(replays=3, returns=3)


def test_opening_records_when_the_probe_comes_and_counts_consecutive_openings() -> None:
    opened = after_batch(BreakerState(), Counts(20, 20), 1000.0, POLICY)
    assert opened is not None
    assert (opened.phase, opened.cause, opened.openings) == (Phase.OPEN, Cause.OUTAGE, 1)
    assert opened.next_probe == 1120.0
    assert after_batch(opened, Counts(50, 50), 1001.0, POLICY) is None  # already open

    probing = on_tick(opened, 1119.9, POLICY)
    assert probing is None
    probing = on_tick(opened, 1120.0, POLICY)
    assert probing is not None and probing.phase is Phase.HALF_OPEN

    again = after_batch(probing, Counts(20, 20), 1130.0, POLICY)
    assert again is not None and again.openings == 2 and again.next_probe == 1130.0 + 240


def test_a_window_without_the_signal_closes_and_resets_the_pause() -> None:
    half = BreakerState(Phase.HALF_OPEN, since=1000.0, openings=3, version=5)
    assert on_tick(half, 1299.0, POLICY) is None
    closed = on_tick(half, 1300.0, POLICY)
    assert closed is not None
    assert (closed.phase, closed.cause, closed.openings) == (Phase.CLOSED, Cause.RECOVERED, 0)
    assert closed.version == 6


def test_under_a_day_of_retention_left_it_closes_and_does_not_open() -> None:
    day = POLICY.retention_margin_seconds
    opened = BreakerState(Phase.OPEN, since=0.0, next_probe=10_000.0, openings=4)
    closed = on_tick(opened, 5.0, POLICY, time_left=day - 1)
    assert closed is not None and (closed.phase, closed.cause) == (Phase.CLOSED, Cause.RETENTION)
    assert on_tick(opened, 5.0, POLICY, time_left=day) is None  # exactly a day: still waits
    assert after_batch(BreakerState(), Counts(30, 30), 5.0, POLICY, time_left=day - 1) is None
    assert after_batch(BreakerState(), Counts(30, 30), 5.0, POLICY, time_left=None) is not None


def test_an_operator_closes_an_open_breaker_and_leaves_a_closed_one_alone() -> None:
    opened = BreakerState(Phase.OPEN, since=0.0, next_probe=100.0, openings=2)
    closed = by_operator(opened, 50.0, Cause.OPERATOR_RESUME)
    assert closed is not None and closed.phase is Phase.CLOSED and closed.openings == 0
    assert by_operator(BreakerState(), 50.0, Cause.OPERATOR_PAUSE) is None


def test_the_state_round_trips_through_its_stored_shape() -> None:
    state = BreakerState(Phase.OPEN, 12.5, 132.5, 1, Cause.OUTAGE, 3)
    assert BreakerState.from_item(state.to_item()) == state
    assert BreakerState.from_item({}) == BreakerState()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class CountingSwitch(PollerSwitch):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")


def test_the_controller_opens_probes_reopens_with_a_longer_pause_and_closes() -> None:
    clock, switch, stats = Clock(), CountingSwitch(), BreakerStats()
    breaker = Breaker(MemoryStore(), switch, logger=LOG, clock=clock, on_change=stats.follow)

    for _ in range(3):  # poison-like: many replays, some returns
        assert breaker.after_batch(Counts(10, 2)).phase is Phase.CLOSED
        clock.now += 1
    for _ in range(3):  # then everything comes back: 36 returns of 60 replays, too few
        breaker.after_batch(Counts(10, 10))
        clock.now += 1
    assert breaker.store.load().phase is Phase.CLOSED
    opened = breaker.after_batch(Counts(0, 20))  # 56 of 60: nearly all
    assert opened.phase is Phase.OPEN and switch.calls == ["pause"]

    clock.now = opened.next_probe or 0.0
    probing = breaker.tick()
    assert probing.phase is Phase.HALF_OPEN and switch.calls == ["pause", "resume"]
    # The outage is still on: the probe's returns reopen it, with twice the pause.
    reopened = breaker.after_batch(Counts(20, 20))
    assert reopened.phase is Phase.OPEN and reopened.openings == 2
    assert reopened.next_probe == clock.now + 240

    clock.now += 240
    assert breaker.tick().phase is Phase.HALF_OPEN
    clock.now += 100
    breaker.after_batch(Counts(10, 0))  # the consumer is back: replays stay away
    clock.now += 200
    closed = breaker.tick()
    assert (closed.phase, closed.openings) == (Phase.CLOSED, 0)
    assert stats.openings == 2
    assert stats.seconds_open(clock.now) == pytest.approx(120 + 240)


def test_counts_from_before_a_probe_do_not_count_against_it() -> None:
    clock = Clock()
    breaker = Breaker(MemoryStore(), PollerSwitch(), logger=LOG, clock=clock)
    opened = breaker.after_batch(Counts(30, 30))
    assert opened.phase is Phase.OPEN
    clock.now = opened.next_probe or 0.0
    breaker.tick()
    # The 30 returns before the probe are within five minutes, but not since the probe.
    assert breaker.after_batch(Counts(5, 5)).phase is Phase.HALF_OPEN
