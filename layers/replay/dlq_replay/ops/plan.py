"""`plan`: the backoff schedule a configuration gives, attempt by attempt."""

from __future__ import annotations

from dataclasses import dataclass

from dlq_replay.core.backoff import MAX_SQS_DELAY_SECONDS, BackoffPolicy


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
    """The percent-quantile of the discrete uniform distribution on the integers low..high.

    The smallest value v with P(X <= v) >= percent/100: with k = high - low + 1 values,
    low + ceil(percent k / 100) - 1, in integers (no float rounding at the edges).
    """
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in 1..100, got {percent}")
    count = high - low + 1
    return low + -(-percent * count // 100) - 1


def backoff_plan(policy: BackoffPolicy, max_attempts: int, *, fifo: bool = False) -> BackoffPlan:
    """The delay schedule of DESIGN.md §3, attempt by attempt, and the time until parking.

    A message is replayed `max_attempts` times, each after a delay drawn uniformly from
    `policy.bounds(n)` (whole seconds); the failure after the last replay parks it, with no
    further delay. The delays are independent and each is symmetric around its mean, so the
    median of the total is the sum of the means; the worst case is the sum of the ceilings.
    Not included: the time each attempt spends failing on the main queue (visibility timeout
    times its maxReceiveCount) and the event source's polling.
    """
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
