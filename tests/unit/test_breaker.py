"""The outage breaker's rule and states (breaker/rule.py), and its controller over the
in-memory store the worker uses, on an injected clock."""

from __future__ import annotations

import logging

import pytest
from dlq_replay.breaker.breaker_state import (
    KEPT_OUTAGES,
    BreakerState,
    Cause,
    Phase,
    after_batch,
    by_operator,
    give_back,
    on_tick,
    probe_sent,
)
from dlq_replay.breaker.controller import TIMING_READ_SECONDS, Breaker
from dlq_replay.breaker.rule import (
    BreakerPolicy,
    Counts,
    QueueTiming,
    Signal,
    in_window,
    observe,
    outage_in_window,
    returned,
)
from dlq_replay.breaker.worker_side import BreakerStats, MemoryStore, PollerSwitch
from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.messages import InboundMessage

POLICY = BreakerPolicy()
COUNT = "sqs-dlq-replay-nb"
LOG = logging.getLogger("test.breaker")


def message(
    count: str | None = None, *, waiting: bool = False, sent: float | None = None
) -> InboundMessage:
    attrs = {} if count is None else {COUNT: attributes.number(int(count))}
    if waiting:
        attrs[NOT_BEFORE_ATTRIBUTE] = attributes.number(2_000_000_000)
    return InboundMessage(
        message_id="m",
        receipt_handle="r",
        body="{}",
        attributes=attrs,
        queue_arn="arn",
        sent_ms=None if sent is None else int(sent * 1000),
    )


@pytest.mark.parametrize(
    ("replays", "returns", "outage"),
    [
        (20, 20, True),  # everything came back
        (22, 20, True),  # 0.909 >= 0.9
        (23, 20, False),  # 0.87: some replays succeed
        (19, 19, False),  # all, but too few to be more than a handful of poison
        (5, 25, False),  # returns without the replays they answer: not evidence
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
    assert returned(message("1"), COUNT) is not None
    assert returned(message("3"), COUNT) is not None
    assert returned(message(None), COUNT) is None
    assert returned(message("0"), COUNT) is None
    assert returned(message("2", waiting=True), COUNT) is None


def test_a_batch_counts_written_replays_now_and_returns_when_their_copy_was_sent() -> None:
    replay = Decision(Action.REPLAY, "q", 2)
    handled = [
        (message("1", sent=90.5), replay, True),
        (message(None), Decision(Action.REPLAY, "q", 1, delay=30), True),
        (message("2", waiting=True), Decision(Action.RELEASE, "q", 2), True),
        (message("3", sent=80.0), Decision(Action.PARK, "op", 3), True),  # a return, parked
        (message("1"), replay, False),  # a return (no SentTimestamp) whose copy was not written
    ]
    events = sorted(observe(handled, COUNT, 100.0), key=lambda e: (e[0], e[1].returns))
    # Only first replays (count 1) and their returns are evidence; every copy sent is `sent`.
    assert events == [
        (90.5, Counts(returns=1)),
        (100.0, Counts(replays=1, sent=3)),  # one event per send time: the window stays small
        (100.0, Counts(returns=1)),
    ]


def replays_at(t: float, n: int) -> list[tuple[float, Counts]]:
    return [(t, Counts(replays=n, sent=n))]


def returns_at(t: float, n: int) -> list[tuple[float, Counts]]:
    return [(t, Counts(returns=n))]


def test_the_signal_shows_once_the_earliest_replays_are_back_not_after_the_later_ones() -> None:
    # Healthy replays at t=0, then the outage: 20 of the 22 sent at t=30 are back, the 178
    # sent later not yet.
    events = replays_at(0, 50) + returns_at(0, 2) + replays_at(30, 22) + returns_at(30, 20)
    events += replays_at(60, 78) + replays_at(90, 100)
    signal = outage_in_window(events, 100.0, POLICY, since=0.0)
    # Known from the stretch: the healthy replays before it (2 of 50 back) are not the outage.
    assert signal == Signal(30.0, Counts(22, 20, 22), 30.0)
    # The same returns spread over replays that mostly succeeded: no signal.
    spread = replays_at(30, 100) + replays_at(90, 100) + returns_at(30, 20)
    assert outage_in_window(spread, 100.0, POLICY, since=0.0) is None


def test_the_outage_is_known_from_the_first_replays_that_came_back_before_the_stretch() -> None:
    # A fast drain into a consumer already down: the first slices (10 s each) fill with
    # replays faster than they come back, and the small last one is complete first. The
    # copies of the earlier slices failed in the same outage: it is known from the first.
    events = replays_at(0, 150) + returns_at(0, 100) + replays_at(10, 130) + returns_at(10, 30)
    events += replays_at(20, 20) + returns_at(20, 20)
    signal = outage_in_window(events, 30.0, POLICY, since=0.0)
    assert signal is not None
    assert signal.start == 20.0  # the stretch, from which deletions are read (the veto)
    assert signal.counts == Counts(20, 20, 20)
    assert (signal.began, signal.known_from) == (0.0, 0.0)
    opened = after_batch(BreakerState(), signal, 30.0, POLICY)
    assert opened is not None
    assert opened.in_outage(0.0)
    # A healthy slice before it (a tenth back or less) ends it; an empty one is passed over.
    first, healthy = replays_at(0, 150) + returns_at(0, 100), replays_at(10, 100)
    last = replays_at(20, 20) + returns_at(20, 20)
    found = outage_in_window(first + healthy + returns_at(10, 10) + last, 30.0, POLICY, since=0)
    assert found is not None
    assert found.known_from == 20.0
    found = outage_in_window(first + last, 30.0, POLICY, since=0.0)
    assert found is not None
    assert found.known_from == 0.0
    # The last change bounds it: nothing before the probe is this outage's evidence.
    assert outage_in_window(events, 30.0, POLICY, since=5.0) == Signal(
        20.0, Counts(20, 20, 20), 10.0
    )


def test_the_window_and_the_last_change_bound_the_signal() -> None:
    events = replays_at(0, 30) + returns_at(0, 30)
    assert outage_in_window(events, 300.0, POLICY, since=0.0) is not None
    assert outage_in_window(events, 300.1, POLICY, since=0.0) is None  # out of the window
    assert outage_in_window(events, 10.0, POLICY, since=0.5) is None  # before the probe


def test_opening_records_when_the_probe_comes_and_counts_consecutive_openings() -> None:
    opened = after_batch(BreakerState(), Signal(990.0, Counts(20, 20)), 1000.0, POLICY)
    assert opened is not None
    assert (opened.phase, opened.cause, opened.openings) == (Phase.OPEN, Cause.OUTAGE, 1)
    assert opened.next_probe == 1120.0
    assert (
        after_batch(opened, Signal(990.0, Counts(50, 50)), 1001.0, POLICY) is None
    )  # already open
    assert after_batch(BreakerState(), None, 1001.0, POLICY) is None  # no signal

    assert on_tick(opened, 1119.9, POLICY, depth=500) is None
    probing = on_tick(opened, 1120.0, POLICY, depth=500)
    assert probing is not None
    assert (probing.phase, probing.baseline, probing.holding) == (Phase.HALF_OPEN, 500, False)

    again = after_batch(probing, Signal(1120.0, Counts(20, 20)), 1130.0, POLICY)
    assert again is not None
    assert again.openings == 2
    assert again.next_probe == 1130.0 + 240


def test_a_probe_stops_after_its_replays_and_reopens_when_the_dlq_fills_back() -> None:
    probing = BreakerState(Phase.HALF_OPEN, since=100.0, openings=1, baseline=500, version=3)
    assert probe_sent(probing, replays_at(101, 39), 102.0, POLICY) is None
    holding = probe_sent(probing, replays_at(101, 39) + replays_at(102, 3), 102.0, POLICY)
    assert holding is not None
    assert holding.holding
    assert holding.probe_size == 42
    assert not holding.receiving
    # 42 left the DLQ (458); back to within 10 % of the probe (4.2) of 500: they came back.
    assert on_tick(holding, 110.0, POLICY, depth=495) is None
    reopened = on_tick(holding, 111.0, POLICY, depth=496)
    assert reopened is not None
    assert (reopened.phase, reopened.openings, reopened.holding) == (Phase.OPEN, 2, False)
    assert reopened.next_probe == 111.0 + 240


def test_a_probe_whose_copies_stay_away_closes_after_a_window() -> None:
    holding = BreakerState(
        Phase.HALF_OPEN, since=100.0, openings=3, baseline=500, probe_size=40, holding=True
    )
    assert on_tick(holding, 399.0, POLICY, depth=460) is None
    closed = on_tick(holding, 400.0, POLICY, depth=460)
    assert closed is not None
    assert (closed.phase, closed.cause, closed.openings) == (Phase.CLOSED, Cause.RECOVERED, 0)
    assert closed.receiving
    assert closed.version == 1


def test_a_probe_without_a_depth_keeps_receiving() -> None:
    probing = BreakerState(Phase.HALF_OPEN, since=100.0, baseline=None)
    assert probe_sent(probing, replays_at(101, 100), 102.0, POLICY) is None


def test_under_a_day_of_retention_left_it_closes_and_does_not_open() -> None:
    day = POLICY.retention_margin_seconds
    opened = BreakerState(Phase.OPEN, since=0.0, next_probe=10_000.0, openings=4)
    closed = on_tick(opened, 5.0, POLICY, time_left=day - 1)
    assert closed is not None
    assert (closed.phase, closed.cause) == (Phase.CLOSED, Cause.RETENTION)
    assert on_tick(opened, 5.0, POLICY, time_left=day) is None  # exactly a day: still waits
    assert (
        after_batch(BreakerState(), Signal(0.0, Counts(30, 30)), 5.0, POLICY, time_left=day - 1)
        is None
    )
    assert (
        after_batch(BreakerState(), Signal(0.0, Counts(30, 30)), 5.0, POLICY, time_left=None)
        is not None
    )


def test_an_operator_closes_an_open_breaker_and_leaves_a_closed_one_alone() -> None:
    opened = BreakerState(Phase.OPEN, since=0.0, next_probe=100.0, openings=2)
    closed = by_operator(opened, 50.0, Cause.OPERATOR_RESUME)
    assert closed is not None
    assert closed.phase is Phase.CLOSED
    assert closed.openings == 0
    assert by_operator(BreakerState(), 50.0, Cause.OPERATOR_PAUSE) is None


def test_the_state_round_trips_through_its_stored_shape() -> None:
    state = BreakerState(Phase.HALF_OPEN, 12.5, None, 1, Cause.PROBE, True, 480, 40, 3)
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
    depth = {"now": 500}
    breaker = Breaker(
        MemoryStore.for_policy(POLICY),
        switch,
        logger=LOG,
        count_attribute=COUNT,
        clock=clock,
        depth=lambda: depth["now"],
        on_change=stats.follow,
    )
    start = clock.now
    # A busy replay with poison: 30 replays, 6 back. Then everything comes back.
    assert breaker.record(replays_at(start, 30) + returns_at(start, 6)).phase is Phase.CLOSED
    clock.now += 30
    assert breaker.record(replays_at(clock.now, 22)).phase is Phase.CLOSED
    opened = breaker.record(returns_at(clock.now, 20))  # 20 of the 22 sent at t+30
    assert opened.phase is Phase.OPEN
    assert switch.calls == ["pause"]

    clock.now = opened.next_probe or 0.0
    probing = breaker.step()
    assert probing.phase is Phase.HALF_OPEN
    assert probing.baseline == 500
    assert switch.calls == ["pause", "resume"]
    holding = breaker.record(replays_at(clock.now, 40))
    assert holding.holding
    assert switch.calls[-1] == "pause"
    depth["now"] = 498  # the outage is still on: the probe's copies are back
    clock.now += 30
    reopened = breaker.step()
    assert reopened.phase is Phase.OPEN
    assert reopened.openings == 2
    assert reopened.next_probe == clock.now + 240

    clock.now += 240
    assert breaker.step().phase is Phase.HALF_OPEN
    breaker.record(replays_at(clock.now, 40))
    depth["now"] = 458  # the consumer is back: the copies stay away
    clock.now += 299
    assert breaker.step().holding
    clock.now += 1
    closed = breaker.step()
    assert (closed.phase, closed.openings) == (Phase.CLOSED, 0)
    assert switch.calls[-1] == "resume"
    assert stats.openings == 2
    assert stats.seconds_open(clock.now) == pytest.approx(120 + 240)


def test_the_worker_store_keeps_every_count_of_the_window_in_a_bounded_number_of_buckets() -> None:
    """A busy drain records a batch every few milliseconds; what each batch reads back must
    not grow with the run (a list of every event did: 8 ms a batch after five minutes)."""
    store = MemoryStore.for_policy(POLICY)
    now = 1_000_000.0
    for index in range(2400):  # ten minutes, four batches a second, 10 replays each
        store.record([(now - 600 + index * 0.25, Counts(replays=10))])
    _, window = store.read(now, POLICY)
    assert len(window) <= POLICY.window_seconds / 5 + 1  # five-second buckets
    kept = in_window(window, now, POLICY, since=0.0)
    assert sum(counts.replays for _, counts in kept) == 1200 * 10  # the last five minutes'
    assert max(when for when, _ in window) <= now


def test_counts_from_before_a_probe_do_not_count_against_it() -> None:
    clock = Clock()
    breaker = Breaker(
        MemoryStore.for_policy(POLICY),
        PollerSwitch(),
        logger=LOG,
        count_attribute=COUNT,
        clock=clock,
    )
    opened = breaker.record(replays_at(clock.now, 30) + returns_at(clock.now, 30))
    assert opened.phase is Phase.OPEN
    clock.now = opened.next_probe or 0.0
    breaker.step()
    # The 30 returns before the probe are within five minutes, but not since the probe.
    assert breaker.record(replays_at(clock.now, 5)).phase is Phase.HALF_OPEN


def test_only_first_replays_are_evidence_so_the_poison_left_at_a_drains_end_never_trips_it() -> (
    None
):
    # The tail of a drain with 10 % poison: only the poison is left, and all of it comes back
    # with counts of 2 and more, replayed again: not a consumer failing as a whole.
    handled = [
        (message(str(2 + i % 3), sent=90.0), Decision(Action.REPLAY, "q", 3 + i % 3), True)
        for i in range(60)
    ]
    events = observe(handled, COUNT, 100.0)
    assert events == [(100.0, Counts(replays=0, sent=60))]
    assert outage_in_window(events * 5, 100.0, POLICY, since=0.0) is None
    # The same batch on first replays is the outage signal.
    first = [(message("1", sent=90.0), Decision(Action.REPLAY, "q", 1), True)] * 30
    assert outage_in_window(observe(first, COUNT, 100.0), 100.0, POLICY, since=0.0) is not None


def test_the_timing_follows_the_main_queue_within_the_constants() -> None:
    fast = POLICY.for_queue(QueueTiming(visibility_seconds=2, max_receive_count=2), 8.0)
    # One cycle: 2 s x 2 receives + 8 s of delay + 5 s of slack = 17 s.
    assert (fast.window_seconds, fast.first_pause_seconds) == (34.0, 17.0)
    assert (fast.probe_wait_seconds, fast.max_pause_seconds) == (25.5, 170.0)
    assert (fast.min_returns, fast.return_ratio) == (POLICY.min_returns, POLICY.return_ratio)
    assert POLICY.for_queue(None, 8.0) == POLICY  # unreadable: the constants
    slow = POLICY.for_queue(QueueTiming(visibility_seconds=30, max_receive_count=5), 900.0)
    assert slow.window_seconds == POLICY.window_seconds
    assert slow.first_pause_seconds == POLICY.first_pause_seconds
    tiny = POLICY.for_queue(QueueTiming(visibility_seconds=0, max_receive_count=1), 0.0)
    assert (tiny.window_seconds, tiny.first_pause_seconds) == (20.0, 5.0)  # the floors


def test_an_outage_is_known_from_its_stretch_until_the_breaker_closes() -> None:
    opened = after_batch(BreakerState(), Signal(990.0, Counts(20, 20)), 1000.0, POLICY)
    assert opened is not None
    assert opened.outages == ((990.0, None),)
    assert opened.in_outage(990.0)
    assert opened.in_outage(5000.0)
    assert not opened.in_outage(989.0)
    probing = on_tick(opened, 1120.0, POLICY, depth=10)
    assert probing is not None
    reopened = after_batch(probing, Signal(1120.0, Counts(20, 20)), 1130.0, POLICY)
    assert reopened is not None
    assert reopened.outages == ((990.0, None),)  # the same outage goes on
    probing = on_tick(reopened, 1400.0, POLICY, depth=10)
    assert probing is not None
    closed = on_tick(probing, 1700.0, POLICY, depth=10)
    assert closed is not None
    assert closed.cause is Cause.RECOVERED
    # Until the close, not the probe's start: the probe's own copies went out into it too.
    assert closed.outages == ((990.0, 1700.0),)
    # A copy of the last probe that the consumer failed before it came back keeps its count.
    (copy,) = give_back(closed, [message("3", sent=1400.5)], COUNT)[0]
    assert attributes.parse_count(copy.attributes[COUNT]) == 2
    assert not closed.in_outage(1700.5)  # after the close: the consumer works
    assert BreakerState.from_item(closed.to_item()) == closed
    by_hand = by_operator(reopened, 1200.0, Cause.OPERATOR_RESUME)
    assert by_hand is not None
    assert by_hand.outages == ((990.0, 1200.0),)
    state = closed
    for n in range(6):
        start = 2000.0 + 1000 * n
        state = after_batch(state, Signal(start, Counts(20, 20)), start + 1, POLICY) or state
        state = by_operator(state, start + 2, Cause.OPERATOR_RESUME) or state
    assert len(state.outages) == KEPT_OUTAGES
    assert state.outages[-1] == (7000.0, 7002.0)


def test_a_return_sent_inside_a_known_outage_keeps_the_count_it_had() -> None:
    state = BreakerState(Phase.OPEN, since=1000.0, outages=((100.0, 200.0), (900.0, None)))
    batch = [
        message("2", sent=150.0),  # in the first outage: given back
        message("1", sent=950.0),  # in the one going on: given back
        message("3", sent=250.0),  # between the two: spent
        message("2"),  # no SentTimestamp: no evidence, spent
        message("2", waiting=True, sent=150.0),  # waiting in the DLQ: no return
        message("0", sent=150.0),  # a first arrival: nothing to give back
    ]
    decided, given = give_back(state, batch, COUNT)
    assert given == 2
    counts = [attributes.parse_count(m.attributes.get(COUNT)) for m in decided]
    assert counts == [1, 0, 3, 2, 2, 0]
    assert give_back(BreakerState(), batch, COUNT) == (batch, 0)


def test_the_controller_gives_attempts_back_and_reads_the_state_only_for_returns() -> None:
    clock = Clock()
    reads: list[int] = []

    class CountingStore(MemoryStore):
        def load(self) -> BreakerState:
            reads.append(1)
            return super().load()

    breaker = Breaker(
        CountingStore(5.0), PollerSwitch(), logger=LOG, count_attribute=COUNT, clock=clock
    )
    start = clock.now
    assert breaker.give_back([message("0"), message(None)]) == [message("0"), message(None)]
    assert reads == []  # no return in the batch: the state is not read
    opened = breaker.record(replays_at(start, 30) + returns_at(start, 30))
    assert opened.phase is Phase.OPEN
    (given,) = breaker.give_back([message("3", sent=start + 1)])
    assert attributes.parse_count(given.attributes[COUNT]) == 2
    assert reads == [1]


def test_the_main_queues_consumer_deleting_vetoes_an_opening() -> None:
    clock = Clock()
    asked: list[tuple[float, int]] = []
    answer: dict[str, bool | None] = {"now": True}

    def deleting(since: float, enough: int) -> bool | None:
        asked.append((since, enough))
        return answer["now"]

    def breaker() -> Breaker:
        store = MemoryStore(5.0)
        return Breaker(
            store, PollerSwitch(), logger=LOG, count_attribute=COUNT, clock=clock, deleting=deleting
        )

    events = replays_at(clock.now, 30) + returns_at(clock.now, 30)
    assert breaker().record(events).phase is Phase.CLOSED  # bad messages, not an outage
    assert asked == [(asked[0][0], 20)]  # MIN_RETURNS: more than a tenth of 30 replays
    for unknown_or_not in (None, False):
        answer["now"] = unknown_or_not
        assert breaker().record(events).phase is Phase.OPEN


def test_the_controller_reads_the_main_queues_timing_once_and_again_after_a_while() -> None:
    clock = Clock()
    timings = [QueueTiming(2, 2), QueueTiming(5, 2)]
    reads: list[QueueTiming] = []

    def timing() -> QueueTiming:
        reads.append(timings[min(len(reads), 1)])
        return reads[-1]

    breaker = Breaker(
        MemoryStore(1.0),
        PollerSwitch(),
        logger=LOG,
        count_attribute=COUNT,
        clock=clock,
        timing=timing,
        delay_seconds=8,
    )
    assert breaker.policy.window_seconds == 34.0
    clock.now += TIMING_READ_SECONDS - 1
    assert breaker.policy.window_seconds == 34.0
    assert len(reads) == 1
    clock.now += 1
    assert breaker.policy.window_seconds == 46.0  # 5 x 2 + 8 + 5 = 23 s a cycle
    assert len(reads) == 2
