"""The pace of client-side sends: a fixed --rate, and --until-failing's adaptive rate that
halves on DLQ arrivals, recovers on clean checks and stops after three failing checks."""

from __future__ import annotations

import pytest
from dlq_replay.ops.pacing import (
    MINIMUM_RATE,
    AdaptiveRate,
    FixedRate,
    UntilFailing,
    batch_size_for,
)
from dlq_replay.ops.queues import QueueInfo, RedrivePolicy

DLQ = QueueInfo(
    url="https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq",
    arn="arn:aws:sqs:us-east-1:123456789012:orders-dlq",
    fifo=False,
    visibility_timeout=30,
    redrive=RedrivePolicy("arn:aws:sqs:us-east-1:123456789012:orders-operator", 10),
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Dlq:
    """What the probe reads: cumulative arrivals, set by the test."""

    def __init__(self) -> None:
        self.total = 0

    def __call__(self) -> int:
        return self.total


def adaptive(
    rate: float = 8.0, threshold: int = 1, check_seconds: float = 10.0
) -> tuple[AdaptiveRate, Clock, Dlq]:
    clock, dlq = Clock(), Dlq()
    policy = UntilFailing(DLQ, rate=rate, check_seconds=check_seconds, threshold=threshold)
    return AdaptiveRate(policy, dlq, clock), clock, dlq


def check(pace: AdaptiveRate, clock: Clock, dlq: Dlq, arrivals: int) -> float | None:
    """Let one check period pass with `arrivals` new DLQ messages, then book one message."""
    dlq.total += arrivals
    clock.now += 10
    return pace.admit(1)


@pytest.mark.parametrize(
    ("rate", "size"), [(None, 10), (100.0, 10), (10.0, 10), (9.9, 9), (2.5, 2), (0.1, 1)]
)
def test_a_slow_rate_receives_fewer_than_ten(rate: float | None, size: int) -> None:
    assert batch_size_for(rate) == size


def test_a_fixed_rate_spaces_the_batches_and_lets_a_late_one_catch_up() -> None:
    clock = Clock()
    pace = FixedRate(5.0, clock)

    assert [pace.admit(10) for _ in range(3)] == [0.0, 2.0, 4.0]
    clock.now += 10  # late: the next slot (6 s) is already past
    assert pace.admit(10) == 0.0
    assert pace.stopped is None
    assert pace.report() is None


def test_no_rate_never_waits() -> None:
    pace = FixedRate(None, Clock())
    assert [pace.admit(10) for _ in range(100)] == [0.0] * 100
    assert pace.batch_size == 10


def test_clean_checks_keep_the_top_rate() -> None:
    pace, clock, dlq = adaptive(rate=8.0)

    assert [pace.admit(4) for _ in range(3)] == [0.0, 0.5, 1.0]
    for _ in range(5):
        check(pace, clock, dlq, 0)

    assert pace.rate == 8.0
    assert pace.report().checks == 5
    assert pace.report().backoffs == 0


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


def test_three_failing_checks_in_a_row_stop_the_run_with_the_reason() -> None:
    pace, clock, dlq = adaptive(rate=8.0)

    assert check(pace, clock, dlq, 2) is not None
    assert check(pace, clock, dlq, 5) is not None
    assert check(pace, clock, dlq, 7) is None

    assert pace.stopped == (
        "stopped: 14 messages arrived in orders-dlq over the last 3 checks (30 s), after "
        "backing off to 2/s: the copies are failing again; fix the consumer, then rerun"
    )
    assert pace.admit(1) is None  # stays stopped
    assert pace.report().arrivals == 14


def test_a_clean_check_between_failing_ones_starts_the_count_again() -> None:
    pace, clock, dlq = adaptive()

    for arrivals in (1, 1, 0, 1, 1):
        assert check(pace, clock, dlq, arrivals) is not None

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
    clock, dlq = Clock(), Dlq()
    pace = AdaptiveRate(UntilFailing(DLQ, rate=0.15, stop_after=100), dlq, clock)

    for _ in range(10):
        check(pace, clock, dlq, 1)

    assert pace.rate == MINIMUM_RATE
    assert pace.batch_size == 1


def test_the_first_check_waits_for_a_whole_period() -> None:
    calls: list[int] = []
    clock = Clock()

    def arrivals() -> int:
        calls.append(1)
        return 50

    pace = AdaptiveRate(UntilFailing(DLQ, check_seconds=10), arrivals, clock)
    clock.now += 9.9
    pace.admit(1)
    assert len(calls) == 1  # the baseline only
    clock.now += 0.1
    pace.admit(1)
    assert len(calls) == 2
    assert pace.report().arrivals == 0  # what was there at the start is no arrival


def test_a_backoff_books_the_next_slots_at_the_slower_rate() -> None:
    pace, clock, dlq = adaptive(rate=2.0)

    dlq.total += 1
    clock.now += 10
    assert [pace.admit(1) for _ in range(3)] == [0.0, 1.0, 2.0]  # 1/s after the backoff
