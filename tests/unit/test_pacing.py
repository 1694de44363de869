"""The pace of client-side sends: a fixed --rate, and --until-failing's adaptive rate that
halves on DLQ arrivals, recovers on clean checks and stops after three failing checks."""

from __future__ import annotations

import pytest
from dlq_replay.cli.pace_options import stop_text
from dlq_replay.ops.pacing import (
    MINIMUM_RATE,
    POLL_SECONDS,
    AdaptiveRate,
    FixedRate,
    PaceStop,
    UntilFailing,
    batch_size_for,
)
from dlq_replay.ops.queueinfo import QueueInfo, RedrivePolicy

DLQ = QueueInfo(
    url="https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq",
    arn="arn:aws:sqs:us-east-1:123456789012:orders-dlq",
    fifo=False,
    visibility_timeout=30,
    redrive=RedrivePolicy("arn:aws:sqs:us-east-1:123456789012:orders-operator", 10),
)


class Clock:
    """The clock and the sleep of a pace: sleeping moves the clock on."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Dlq:
    """What the probe reads: cumulative arrivals, set by the test."""

    def __init__(self) -> None:
        self.total = 0

    def __call__(self) -> int:
        return self.total


def adaptive(
    rate: float = 8.0, threshold: int = 1, **knobs: float
) -> tuple[AdaptiveRate, Clock, Dlq]:
    clock, dlq = Clock(), Dlq()
    policy = UntilFailing(DLQ, rate=rate, threshold=threshold, **knobs)  # type: ignore[arg-type]
    return AdaptiveRate(policy, dlq, clock, clock.sleep), clock, dlq


def send_times(
    pace: AdaptiveRate | FixedRate, clock: Clock, batches: int, count: int
) -> list[float]:
    """When each of `batches` sends of `count` messages may go, relative to the start."""
    start, times = clock.now, []
    for _ in range(batches):
        assert pace.acquire(count)
        times.append(round(clock.now - start, 6))
    return times


def check(pace: AdaptiveRate, clock: Clock, dlq: Dlq, arrivals: int) -> bool:
    """Let one check period pass with `arrivals` new DLQ messages, then ask for one slot."""
    dlq.total += arrivals
    clock.now += 10
    return pace.acquire(1)


@pytest.mark.parametrize(
    ("rate", "size"), [(None, 10), (100.0, 10), (10.0, 10), (9.9, 9), (2.5, 2), (0.1, 1)]
)
def test_a_slow_rate_receives_fewer_than_ten(rate: float | None, size: int) -> None:
    assert batch_size_for(rate) == size


def test_a_fixed_rate_spaces_the_batches_and_lets_a_late_one_catch_up() -> None:
    clock = Clock()
    pace = FixedRate(5.0, clock, clock.sleep)

    assert send_times(pace, clock, 3, 10) == [0.0, 2.0, 4.0]
    clock.now += 10  # late: the next two slots (6 s, 8 s) are already past
    assert send_times(pace, clock, 3, 10) == [0.0, 0.0, 0.0]
    assert pace.stopped is None
    assert pace.report() is None


def test_no_rate_never_waits() -> None:
    clock = Clock()
    pace = FixedRate(None, clock, clock.sleep)
    assert send_times(pace, clock, 100, 10) == [0.0] * 100
    assert pace.batch_size == 10


def test_clean_checks_keep_the_top_rate() -> None:
    pace, clock, dlq = adaptive(rate=8.0)

    assert send_times(pace, clock, 3, 4) == [0.0, 0.5, 1.0]
    for _ in range(5):
        check(pace, clock, dlq, 0)

    assert pace.rate == 8.0
    assert (pace.report().checks, pace.report().backoffs) == (5, 0)


def test_arrivals_halve_the_rate_and_clean_checks_double_it_back() -> None:
    pace, clock, dlq = adaptive(rate=8.0)

    check(pace, clock, dlq, 3)
    assert pace.rate == 4.0
    check(pace, clock, dlq, 1)
    assert pace.rate == 2.0
    check(pace, clock, dlq, 0)
    assert pace.rate == 4.0
    check(pace, clock, dlq, 0)
    check(pace, clock, dlq, 0)
    assert pace.rate == 8.0  # never above --rate
    assert pace.stopped is None
    report = pace.report()
    assert (report.arrivals, report.backoffs, report.checks) == (4, 2, 5)


def test_a_backoff_slows_the_very_next_send() -> None:
    # Nothing is booked ahead: the slot after a backoff is spaced at the new rate.
    pace, clock, dlq = adaptive(rate=2.0, check_seconds=3.0)

    assert send_times(pace, clock, 4, 1) == [0.0, 0.5, 1.0, 1.5]
    dlq.total += 1  # the check at 3 s sees it
    times = send_times(pace, clock, 4, 1)
    assert pace.rate == 1.0
    assert times[-1] - times[-2] == 1.0


def test_three_failing_checks_in_a_row_stop_the_run_with_the_reason() -> None:
    pace, clock, dlq = adaptive(rate=8.0)

    assert check(pace, clock, dlq, 2)
    assert check(pace, clock, dlq, 5)
    assert not check(pace, clock, dlq, 7)

    assert pace.stopped == PaceStop(
        watched="orders-dlq", arrived=14, checks=3, window_seconds=30.0, rate=2.0
    )
    assert stop_text(pace.stopped) == (
        "stopped: 14 messages arrived in orders-dlq over the last 3 checks (30 s), after "
        "backing off to 2/s: the copies are failing again; fix the consumer, then rerun"
    )
    assert not pace.acquire(1)  # stays stopped
    assert pace.report().arrivals == 14


def test_a_thread_waiting_for_its_slot_sees_the_stop() -> None:
    # At 0.1/s a slot is 10 s away; the check that stops the run happens during the wait.
    pace, clock, dlq = adaptive(rate=0.1, check_seconds=2.0, stop_after=1)
    assert pace.acquire(1)
    dlq.total += 1

    assert not pace.acquire(1)

    assert clock.now - 1000.0 < 3.0  # stopped at the first check, not after the 10 s slot
    assert max(clock.slept) <= POLL_SECONDS


def test_a_clean_check_between_failing_ones_starts_the_count_again() -> None:
    pace, clock, dlq = adaptive()

    for arrivals in (1, 1, 0, 1, 1):
        assert check(pace, clock, dlq, arrivals)

    assert pace.stopped is None


def test_arrivals_under_the_threshold_are_a_clean_check() -> None:
    pace, clock, dlq = adaptive(threshold=5)

    for _ in range(4):
        check(pace, clock, dlq, 4)
    assert (pace.rate, pace.stopped) == (8.0, None)
    check(pace, clock, dlq, 5)
    assert pace.rate == 4.0


def test_a_depth_that_overshoots_once_is_not_counted_twice() -> None:
    pace, clock, dlq = adaptive()

    check(pace, clock, dlq, 3)  # a stale reading: 3 too many
    check(pace, clock, dlq, -3)  # corrected: no arrival
    check(pace, clock, dlq, 2)  # still under the peak already counted
    assert pace.report().arrivals == 3
    assert pace.rate == 8.0  # one backoff, then two clean checks
    check(pace, clock, dlq, 2)  # past the peak: 1 new
    assert pace.rate == 4.0


def test_the_rate_never_backs_off_below_the_minimum() -> None:
    pace, clock, dlq = adaptive(rate=0.15, stop_after=100)

    for _ in range(10):
        check(pace, clock, dlq, 1)

    assert pace.rate == MINIMUM_RATE
    assert pace.batch_size == 1


def test_what_was_in_the_dlq_before_is_no_arrival() -> None:
    calls: list[int] = []
    clock = Clock()

    def arrivals() -> int:
        calls.append(1)
        return 50

    pace = AdaptiveRate(UntilFailing(DLQ, check_seconds=10), arrivals, clock, clock.sleep)
    clock.now += 9.9
    pace.acquire(1)
    assert len(calls) == 1  # the baseline only: no check before a whole period
    clock.now += 0.1
    pace.acquire(1)
    assert len(calls) == 2
    assert pace.report().arrivals == 0


def test_what_the_run_deletes_from_the_watched_dlq_is_no_departure() -> None:
    # The run reads from the DLQ it watches: 5 deleted by it and 5 failed back in leave the
    # population flat, and still count as 5 arrivals. Deletes elsewhere change nothing.
    pace, clock, dlq = adaptive()
    pace.deleted(DLQ.url, 5)
    pace.deleted("https://sqs.us-east-1.amazonaws.com/123456789012/orders-operator", 50)

    check(pace, clock, dlq, 0)

    assert pace.report().arrivals == 5
    assert pace.rate == 4.0


def test_the_dlq_depth_is_read_without_the_lock() -> None:
    """A check reads the DLQ's depth (an SQS call, slow when SQS is): never under the lock the
    other threads wait on for their slot."""
    clock = Clock()
    held: list[bool] = []
    pace: AdaptiveRate | None = None

    def population() -> int:
        held.append(pace is not None and pace.lock.locked())
        return 0

    pace = AdaptiveRate(UntilFailing(DLQ, rate=8.0), population, clock, clock.sleep)
    for _ in range(3):
        clock.now += 10
        assert pace.acquire(1)

    assert held == [False, False, False, False]  # the baseline, then three checks
