"""The outage breaker in the worker: its state in memory, the pollers as its switch (each waits
for the probe before its next receive) and their loop as the tick."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from dlq_replay.breaker.breaker_state import BreakerState, Phase
from dlq_replay.breaker.controller import Breaker, Clock
from dlq_replay.breaker.evidence import QueueTotals
from dlq_replay.breaker.rule import MIN_WINDOW_SECONDS, SLICES, BreakerPolicy, Counts, QueueTiming
from dlq_replay.core.log import Log
from dlq_replay.notify.sns import SnsClient

# How long a paused poller sleeps between looks at the state, at most.
GATE_POLL_SECONDS = 1.0


class MemoryStore:
    """The state and window for one process, thread-safe; counts per bucket of send time (a list
    of every batch's events took 7 ms a batch to read back: bench/bench_breaker.py)."""

    def __init__(self, bucket_seconds: float) -> None:
        if not bucket_seconds > 0:
            raise ValueError(f"bucket_seconds must be positive, got {bucket_seconds}")
        self._lock = threading.Lock()
        self._state = BreakerState()
        self._width = bucket_seconds
        self._buckets: dict[int, Counts] = {}

    @classmethod
    def for_policy(cls, policy: BreakerPolicy, timing: bool = False) -> MemoryStore:
        """Buckets of half a slice (5 s of five minutes; 1 s ones took 5x as long to read); with
        a `timing` from the main queue, the smallest window's slices."""
        if timing:
            return cls(MIN_WINDOW_SECONDS / SLICES)
        return cls(policy.window_seconds / (SLICES * 2))

    def record(self, events: Sequence[tuple[float, Counts]]) -> None:
        with self._lock:
            for when, counts in events:
                bucket = math.floor(when / self._width)
                self._buckets[bucket] = self._buckets.get(bucket, Counts()) + counts

    def read(
        self, now: float, policy: BreakerPolicy
    ) -> tuple[BreakerState, list[tuple[float, Counts]]]:
        """As the DynamoDB store reads them: a bucket at its last moment (now, while filling)."""
        oldest = math.floor((now - policy.window_seconds) / self._width)
        last = self._width * 0.999
        with self._lock:
            for bucket in [b for b in self._buckets if b < oldest]:
                del self._buckets[bucket]
            return self._state, [
                (min(now, bucket * self._width + last), counts)
                for bucket, counts in self._buckets.items()
            ]

    def load(self) -> BreakerState:
        with self._lock:
            return self._state

    def save(self, state: BreakerState, expected_version: int) -> bool:
        with self._lock:
            if self._state.version != expected_version:
                return False
            self._state = state
            return True


class PollerSwitch:
    """The pollers read the state before every receive."""

    def pause(self) -> None: ...
    def resume(self) -> None: ...

    def resumed_by_someone_else(self) -> bool:
        return False


@dataclass
class BreakerStats:
    openings: int = 0
    open_seconds: float = 0.0
    _opened_at: float | None = None
    latest: BreakerState | None = None  # the last change (what a progress line shows)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def follow(self, state: BreakerState) -> None:
        with self.lock:
            self.latest = state
            if state.phase is Phase.OPEN:
                self.openings += 1
                self._opened_at = state.since
            elif self._opened_at is not None:
                self.open_seconds += state.since - self._opened_at
                self._opened_at = None

    def seconds_open(self, now: float) -> float:
        with self.lock:
            running = 0.0 if self._opened_at is None else now - self._opened_at
            return self.open_seconds + running


class BreakerGate:
    """What a poller asks before each receive: receive now, or wait for the probe."""

    def __init__(self, breaker: Breaker, *, sample: Callable[[], None] | None = None) -> None:
        self.breaker = breaker
        self._sample = sample

    def wait_until_receiving(self, stop: threading.Event) -> bool:
        """True when the poller may receive; False when `stop` was set while it waited."""
        if self._sample is not None:
            self._sample()
        while not stop.is_set():
            state = self.breaker.tick()
            if state is None or state.receiving:
                return True
            left = (state.next_probe or 0.0) - self.breaker.now()
            stop.wait(min(GATE_POLL_SECONDS, max(0.05, left)))
        return False


def worker_breaker(
    *,
    logger: Log,
    policy: BreakerPolicy | None = None,
    count_attribute: str,
    sns: SnsClient | None = None,
    topic_arn: str | None = None,
    source: str = "",
    stats: BreakerStats | None = None,
    depth: Callable[[], int | None] | None = None,
    time_left: Callable[[], float | None] | None = None,
    timing: Callable[[], QueueTiming | None] | None = None,
    delay_seconds: float = 0.0,
    totals: QueueTotals | None = None,
    clock: Clock = time.time,
    max_attempts: int | None = None,
) -> tuple[Breaker, BreakerGate]:
    """The worker's breaker (for `LambdaReplay`) and its pollers' gate; `totals`: the queues'
    totals, whose fall vetoes an opening."""
    breaker = Breaker(
        MemoryStore.for_policy(policy or BreakerPolicy(), timing is not None),
        PollerSwitch(),
        logger=logger,
        count_attribute=count_attribute,
        policy=policy,
        clock=clock,
        max_attempts=max_attempts,
        time_left=time_left,
        depth=depth,
        timing=timing,
        delay_seconds=delay_seconds,
        deleting=totals.deleting if totals is not None else None,
        sns=sns,
        topic_arn=topic_arn,
        source=source,
        on_change=stats.follow if stats is not None else None,
    )
    sample = totals.sample if totals is not None else None
    return breaker, BreakerGate(breaker, sample=sample)
