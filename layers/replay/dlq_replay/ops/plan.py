"""`plan`: the backoff schedule a configuration gives, attempt by attempt."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from dlq_replay.core.backoff import (
    MAX_SQS_DELAY_SECONDS,
    MAX_VISIBILITY_TIMEOUT_SECONDS,
    BackoffPolicy,
)

# template.yaml's MainQueueMaxReceiveCount default: what `plan` assumes when the main queue's
# RedrivePolicy cannot be read. SQS takes 1-1000.
DEFAULT_MAIN_MAX_RECEIVE_COUNT = 5
MAIN_MAX_RECEIVE_COUNT_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class AttemptPlan:
    attempt: int
    ceiling: int
    low: int
    high: int
    median: int
    p95: int
    mean: float
    dlq_share: float  # share of delays longer than the destination's DelaySeconds (§4 path)
    typical_total: float  # sum of the means of attempts 1..n (the median of their sum)
    worst_total: int  # sum of the ceilings of attempts 1..n


@dataclass(frozen=True, slots=True)
class BackoffPlan:
    policy: BackoffPolicy
    max_attempts: int
    fifo: bool
    attempts: tuple[AttemptPlan, ...]

    @property
    def typical_total(self) -> float:
        return self.attempts[-1].typical_total if self.attempts else 0.0

    @property
    def worst_total(self) -> int:
        return self.attempts[-1].worst_total if self.attempts else 0

    @property
    def best_total(self) -> int:
        return sum(a.low for a in self.attempts)


def quantile(low: int, high: int, percent: int) -> int:
    """The percent-quantile of the discrete uniform distribution on low..high: the smallest v
    with P(X <= v) >= percent/100, in integers (no float rounding at the edges)."""
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in 1..100, got {percent}")
    count = high - low + 1
    return low + -(-percent * count // 100) - 1


def backoff_plan(policy: BackoffPolicy, max_attempts: int, *, fifo: bool = False) -> BackoffPlan:
    """The delays are independent and each symmetric around its mean, so the median of the
    total is the sum of the means (docs/design.md, 'Backoff and jitter'). Not included: the
    time each attempt spends failing on the main queue and the event source's polling."""
    limit = 0 if fifo else MAX_SQS_DELAY_SECONDS
    plans: list[AttemptPlan] = []
    typical = 0.0
    worst = 0
    for attempt in range(1, max_attempts + 1):
        low, high = policy.bounds(attempt)
        mean = (low + high) / 2
        typical += mean
        worst += high
        plans.append(
            AttemptPlan(
                attempt=attempt,
                ceiling=policy.ceiling(attempt),
                low=low,
                high=high,
                median=quantile(low, high, 50),
                p95=quantile(low, high, 95),
                mean=mean,
                dlq_share=max(0, high - max(low, limit + 1) + 1) / (high - low + 1),
                typical_total=typical,
                worst_total=worst,
            )
        )
    return BackoffPlan(policy, max_attempts, fifo, tuple(plans))


class StepKind(StrEnum):
    """What happens to a message that keeps failing, in the combined schedule."""

    RECEIVE = "receive"  # the consumer fails a receive on the main queue and hides it (backoff)
    REPLAY = "replay"  # the DLQ replay's delay, then a new copy on the main queue
    PARK = "park"  # the replay parks it: no further delay


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """One step of the combined schedule, or a run of receives whose delays have equal bounds.
    `first`..`last`: receive counts for RECEIVE, else the replay count sent or parked; the
    totals are cumulative up to and including the row's last step."""

    copy: int  # the replay count the message carries (0: the first delivery)
    kind: StepKind
    first: int
    last: int
    low: int  # low..high bound the delay of each step of the row
    high: int
    best_total: int
    typical_total: float
    worst_total: int

    @property
    def steps(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)
class ConsumerBackoffPlan:
    policy: BackoffPolicy
    max_attempts: int
    main_max_receive_count: int
    rows: tuple[ScheduleRow, ...]

    @property
    def best_total(self) -> int:
        return self.rows[-1].best_total

    @property
    def typical_total(self) -> float:
        return self.rows[-1].typical_total

    @property
    def worst_total(self) -> int:
        return self.rows[-1].worst_total

    @property
    def receives(self) -> int:
        """Receives on the main queue before the park: every copy gets maxReceiveCount."""
        return (self.max_attempts + 1) * self.main_max_receive_count


def consumer_backoff_plan(
    policy: BackoffPolicy, max_attempts: int, main_max_receive_count: int
) -> ConsumerBackoffPlan:
    """With backoff before the DLQ too (docs/consumer.md): each copy is received maxReceiveCount
    times, then the replay sends the next, whose receive count starts again at 0. Receives with
    equal bounds (the cap) share a row, so the rows stay few."""
    if not 1 <= main_max_receive_count <= MAIN_MAX_RECEIVE_COUNT_LIMIT:
        raise ValueError(
            f"main_max_receive_count must be in 1..{MAIN_MAX_RECEIVE_COUNT_LIMIT}, "
            f"got {main_max_receive_count}"
        )
    if max_attempts < 0:
        raise ValueError(f"max_attempts must be >= 0, got {max_attempts}")
    receives = _receive_runs(policy, main_max_receive_count)
    steps: list[tuple[int, StepKind, int, int, int, int]] = []  # copy, kind, first, last, bounds
    for copy in range(max_attempts + 1):
        steps.extend((copy, StepKind.RECEIVE, *run) for run in receives)
        if copy < max_attempts:
            steps.append((copy, StepKind.REPLAY, copy + 1, copy + 1, *policy.bounds(copy + 1)))
    steps.append((max_attempts, StepKind.PARK, max_attempts, max_attempts, 0, 0))
    rows: list[ScheduleRow] = []
    best, typical, worst = 0, 0.0, 0
    for copy, kind, first, last, low, high in steps:
        count = last - first + 1
        best += count * low
        typical += count * (low + high) / 2
        worst += count * high
        rows.append(ScheduleRow(copy, kind, first, last, low, high, best, typical, worst))
    return ConsumerBackoffPlan(policy, max_attempts, main_max_receive_count, tuple(rows))


def _receive_runs(policy: BackoffPolicy, receives: int) -> list[tuple[int, int, int, int]]:
    """(first, last, low, high) per run of receive counts whose delays (cut to SQS's 12 h of
    visibility, as the consumer does) have equal bounds."""
    runs: list[tuple[int, int, int, int]] = []
    for count in range(1, receives + 1):
        low, high = (min(v, MAX_VISIBILITY_TIMEOUT_SECONDS) for v in policy.bounds(count))
        if runs and runs[-1][2:] == (low, high):
            runs[-1] = (runs[-1][0], count, low, high)
        else:
            runs.append((count, count, low, high))
    return runs
