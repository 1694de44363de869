"""How fast client-side sends go: as fast as they can, at a fixed `--rate`, or adaptively
(`--until-failing`: slower whenever messages arrive in the DLQ the copies would fail into,
stopped when they keep arriving). SQS counts no arrivals: an arrival is a rise of the DLQ's
population plus what the run itself deleted from it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo, queue_info, source_queue_url
from dlq_replay.sqs.depth import queue_depth
from dlq_replay.sqs.sending import MAX_BATCH_ENTRIES

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# With --until-failing and no --rate: slow enough that a broken consumer sees few messages
# before the first check can tell (the copies need the main queue's visibility timeout times
# its maxReceiveCount to fail into the DLQ).
DEFAULT_ADAPTIVE_RATE = 10.0
MINIMUM_RATE = 0.1  # backing off never goes below one message every 10 s
POLL_SECONDS = 0.5  # a thread waiting for its slot looks again this often (checks, stops)


def batch_size_for(rate: float | None) -> int:
    return MAX_BATCH_ENTRIES if rate is None else max(1, min(MAX_BATCH_ENTRIES, math.floor(rate)))


class FixedRate:
    """`rate` messages a second overall (None: no limit); a late batch may catch up. The pace
    of a run (`make_pace`): `stopped` is why the run must stop, once it must."""

    stopped: PaceStop | None = None

    def __init__(
        self, rate: float | None, clock: Callable[[], float], sleep: Callable[[float], object]
    ) -> None:
        self.rate = rate
        self.clock = clock
        self.sleep = sleep
        self.started = clock()
        self.booked = 0
        self.lock = threading.Lock()

    @property
    def batch_size(self) -> int:
        """Messages the next receive should ask for (a slow rate takes fewer than 10)."""
        return batch_size_for(self.rate)

    def acquire(self, count: int) -> bool:
        """Wait until `count` messages may be sent; False when nothing more may be."""
        if self.rate is None:
            return True
        with self.lock:  # each batch takes its slot in the schedule
            due = self.started + self.booked / self.rate
            self.booked += count
        if (pause := due - self.clock()) > 0:
            self.sleep(pause)
        return True

    def report(self) -> PaceReport | None:
        """What an adaptive pace saw."""
        return None

    def deleted(self, queue_url: str, count: int) -> None:
        """The run deleted `count` messages from `queue_url` (no arrival there)."""


@dataclass(frozen=True, slots=True)
class UntilFailing:
    """The knobs of the adaptive pace (`--until-failing`)."""

    watched: QueueInfo  # the DLQ copies fail into (`watched_dlq`)
    rate: float = DEFAULT_ADAPTIVE_RATE  # the top speed (--rate)
    check_seconds: float = 10.0
    threshold: int = 1  # arrivals within one check that count as failing
    stop_after: int = 3  # failing checks in a row that stop the run
    failure_seconds: int | None = None  # about how long a failing copy takes to get there


@dataclass(frozen=True, slots=True)
class PaceStop:
    """The adaptive pace stopped the run: `arrived` messages reached `watched` over the last
    `checks` checks (`window_seconds`), after backing off to `rate` messages a second."""

    watched: str  # the DLQ's name
    arrived: int
    checks: int
    window_seconds: float
    rate: float


class WatchProblem(StrEnum):
    """Why `--until-failing` has no DLQ to watch (the CLI words it)."""

    SEVERAL_DESTINATIONS = "several-destinations"  # each record's source queue
    NO_REDRIVE_POLICY = "no-redrive-policy"  # failures there never reach a DLQ
    DLQ_NOT_FOUND = "dlq-not-found"  # the RedrivePolicy names a queue that is gone


class WatchError(OpsError):
    """No DLQ to watch: `problem`, about `queue` (a name; empty when not one queue)."""

    def __init__(self, problem: WatchProblem, queue: str = "") -> None:
        usage = problem is not WatchProblem.DLQ_NOT_FOUND
        super().__init__(f"{problem.value}: {queue}", usage=usage)
        self.problem = problem
        self.queue = queue


@dataclass(frozen=True, slots=True)
class PaceReport:
    """What the adaptive pace saw, for the tally."""

    watched: str  # the DLQ's URL
    checks: int
    arrivals: int  # messages that arrived in the watched DLQ while the run went on
    rate: float  # the rate at the end
    backoffs: int  # checks that halved the rate
    watched_seconds: float = 0.0  # from the start of the run to the report
    failure_seconds: int | None = None  # about how long a failing copy takes to arrive

    @property
    def too_short(self) -> bool:
        """The run ended before a failing copy of it could have reached the DLQ: its count of
        arrivals says nothing about the copies' fate yet."""
        return self.failure_seconds is not None and self.watched_seconds < self.failure_seconds


class AdaptiveRate(FixedRate):
    """At most `policy.rate`; each check that sees `threshold` or more arrivals halves the
    rate, each clean check doubles it back (up to `policy.rate`), and `stop_after` failing
    checks in a row stop the run with the reason."""

    def __init__(
        self,
        policy: UntilFailing,
        population: Callable[[], int],  # the watched DLQ's messages now, all three counters
        clock: Callable[[], float],
        sleep: Callable[[float], object],
    ) -> None:
        super().__init__(policy.rate, clock, sleep)
        self.rate: float = policy.rate
        self.policy = policy
        self.population = population
        self.deleted_here = 0  # what the run itself deleted from the watched DLQ
        self.next_slot = self.last_check = self.started
        self.seen = self.baseline = population()
        self.checks = self.backoffs = 0
        self.strikes: list[int] = []  # arrivals of the failing checks in a row
        self.checking = False  # a thread is reading the DLQ's depth (outside the lock)

    def acquire(self, count: int) -> bool:
        while True:
            due = False
            with self.lock:
                now = self.clock()
                if not self.checking and now - self.last_check >= self.policy.check_seconds:
                    self.checking = due = True
            if due:
                self._check(now)  # reads the DLQ's depth: outside the lock
            with self.lock:
                if self.stopped is not None:
                    return False
                wait = self.next_slot - now
                if wait <= 0:
                    self.next_slot = now + count / self.rate
                    return True
            self.sleep(min(wait, POLL_SECONDS))

    def deleted(self, queue_url: str, count: int) -> None:
        if queue_url == self.policy.watched.url:
            with self.lock:
                self.deleted_here += count

    def report(self) -> PaceReport:
        with self.lock:
            return PaceReport(
                watched=self.policy.watched.url,
                checks=self.checks,
                arrivals=max(0, self.seen - self.baseline),
                rate=self.rate,
                backoffs=self.backoffs,
                watched_seconds=self.clock() - self.started,
                failure_seconds=self.policy.failure_seconds,
            )

    def _check(self, now: float) -> None:
        try:
            population = self.population()
        finally:
            with self.lock:
                self.checking = False
        policy = self.policy
        with self.lock:
            # Cumulative, so a stale depth that overshoots once is taken back by the next check.
            total = population + self.deleted_here
            arrived = total - self.seen
            self.seen = max(self.seen, total)
            self.checks += 1
            self.last_check = now
            if arrived < policy.threshold:
                self.strikes.clear()
                self.rate = min(policy.rate, self.rate * 2)
                return
            self.strikes.append(arrived)
            if len(strikes := self.strikes) >= policy.stop_after:
                window = len(strikes) * policy.check_seconds
                self.stopped = PaceStop(
                    policy.watched.name, sum(strikes), len(strikes), window, self.rate
                )
                return
            self.backoffs += 1
            self.rate = max(MINIMUM_RATE, self.rate / 2)


def watched_dlq(
    sqs: SQSClient, source: QueueInfo | None, destination: QueueInfo | None
) -> QueueInfo:
    """The DLQ where copies that fail again arrive: the destination's RedrivePolicy target;
    with each message's own source queue as destination, the queue they are taken from."""
    if destination is None:
        if source is None:
            raise WatchError(WatchProblem.SEVERAL_DESTINATIONS)
        return source
    if destination.redrive is None:
        raise WatchError(WatchProblem.NO_REDRIVE_POLICY, destination.name)
    url = source_queue_url(sqs, destination.redrive.target_arn, {})
    if url is None:
        raise WatchError(WatchProblem.DLQ_NOT_FOUND, destination.name)
    return queue_info(sqs, url)


def failure_delay(destination: QueueInfo | None) -> int | None:
    """About how long a copy takes to fail into the DLQ: a receive per maxReceiveCount, each
    hidden for the visibility timeout (unknown without a redrive policy)."""
    if destination is None or destination.redrive is None:
        return None
    return destination.visibility_timeout * destination.redrive.max_receive_count


def make_pace(
    sqs: SQSClient,
    rate: float | None,
    until_failing: UntilFailing | None,
    clock: Callable[[], float],
    sleep: Callable[[float], object],
) -> FixedRate:
    """The pace of a run: fixed, or adaptive watching `until_failing.watched`."""
    if until_failing is None:
        return FixedRate(rate, clock, sleep)
    watched = until_failing.watched.url
    return AdaptiveRate(until_failing, lambda: queue_depth(sqs, watched).total, clock, sleep)
