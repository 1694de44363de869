"""The automatic replay's recovery, by attempt. A record that reaches the DLQ with replay count
c says attempt c failed (c = 0: the first delivery); a copy sent as attempt n that never comes
back recovered. The replay tallies one invocation's records in a `RecoveryTally` and the store
adds it to the queue's hour with one write, never one per record.

Counter names, the contract of the table's `recovery#<queue>` items and of the file's lines:
`failed_first`, `sent_<n>`, `returned_<n>`, `parked_<n>` (n the attempt; a count beyond the
product's attempt limit, which no replay of ours sends, is kept as attempt `OVER_ATTEMPTS`, so
a hostile count cannot grow an item without bound).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

from dlq_replay.core.settings import MAX_ATTEMPTS_LIMIT

OVER_ATTEMPTS = MAX_ATTEMPTS_LIMIT + 1
HOUR = 3600
# How long the table keeps an hour's counts: past any window `status` shows.
RECOVERY_KEEP_SECONDS = 15 * 24 * HOUR
# The settle window `window` assumes when not told one (a copy of the replay is back within
# an hour under the template's defaults: backoff cap plus the main queue's receives).
RECOVERY_SETTLE_SECONDS = HOUR
_COUNTER = re.compile(r"(sent|returned|parked)_([0-9]{1,3})")
_FAILED_FIRST = "failed_first"
_HOUR = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}")


def hour_bucket(at: float) -> str:
    """The hour `at` (epoch seconds) falls in, ISO 8601 UTC: `2026-12-06T14`."""
    return time.strftime("%Y-%m-%dT%H", time.gmtime(at))


def bucket_start(hour: str) -> float:
    """The epoch seconds an `hour_bucket` text starts at; ValueError for any other text.
    (Not `strptime`: its first call loads locale modules, at the Lambda's first write.)"""
    if not isinstance(hour, str) or _HOUR.fullmatch(hour) is None:
        raise ValueError(f"not an hour bucket: {hour!r}")
    year, month, day, at = (int(part) for part in (hour[:4], hour[5:7], hour[8:10], hour[11:]))
    return datetime(year, month, day, at, tzinfo=UTC).timestamp()


def _attempt(value: int, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"not an attempt: {value!r}")
    return min(value, OVER_ATTEMPTS)


class RecoveryTally:
    """One invocation's counts (pure, mutable): what arrived, what was sent, what was parked."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()

    def arrived(self, count: int) -> None:
        """A record the replay read, with replay count `count`: attempt `count` failed."""
        attempt = _attempt(count, 0)
        self.counters[_FAILED_FIRST if attempt == 0 else f"returned_{attempt}"] += 1

    def sent(self, attempt: int) -> None:
        """A copy sent as attempt `attempt` (its count attribute), 1 or more."""
        self.counters[f"sent_{_attempt(attempt, 1)}"] += 1

    def parked(self, attempt: int) -> None:
        """A copy parked keeping count `attempt` (0: parked before any replay)."""
        self.counters[f"parked_{_attempt(attempt, 0)}"] += 1

    @property
    def empty(self) -> bool:
        return not any(self.counters.values())

    def to_counters(self) -> dict[str, int]:
        """The non-zero counters, e.g. `{"failed_first": 3, "sent_1": 3, "returned_1": 1}`."""
        return {name: value for name, value in sorted(self.counters.items()) if value}


def read_counters(values: Mapping[str, Any]) -> dict[str, int]:
    """The counters among an item's or a line's values; anything else (keys, foreign names,
    values that are not whole non-negative numbers) is left out."""
    found: dict[str, int] = {}
    for name, value in values.items():
        if not isinstance(name, str) or not (name == _FAILED_FIRST or _COUNTER.fullmatch(name)):
            continue
        try:
            number = int(value)
        except (TypeError, ValueError, OverflowError, ArithmeticError):
            continue
        if number >= 0 and number == value and not isinstance(value, bool):
            found[name] = number
    return found


class RecoveryBucket(NamedTuple):
    """One hour's counters of one queue."""

    hour: str
    counters: Mapping[str, int]

    @property
    def start(self) -> float:
        return bucket_start(self.hour)


def _by_attempt(buckets: Iterable[RecoveryBucket], kind: str) -> dict[int, int]:
    totals: Counter[int] = Counter()
    for bucket in buckets:
        for name, value in bucket.counters.items():
            matched = _COUNTER.fullmatch(name)
            if matched and matched.group(1) == kind:
                totals[int(matched.group(2))] += value
    return dict(sorted(totals.items()))


class RecoverySummary(NamedTuple):
    """A queue's recovery over [since, until] from its hours' counts.

    `recovered(n)` = sent[n] - returned[n] over the hours that ended before `settled_before`
    (the caller passes `until` minus the settle window: a copy sent then has had its time to
    come back); `in_flight(n)` the same over the later hours. A return is counted in the hour
    it came back, so a copy sent just before a settled hour's end and returned just after moves
    one return between the two; the totals are exact.
    """

    since: float
    until: float
    settled_before: float
    buckets: tuple[RecoveryBucket, ...] = ()

    @property
    def failed_first(self) -> int:
        return sum(bucket.counters.get(_FAILED_FIRST, 0) for bucket in self.buckets)

    @property
    def sent(self) -> dict[int, int]:
        return _by_attempt(self.buckets, "sent")

    @property
    def returned(self) -> dict[int, int]:
        return _by_attempt(self.buckets, "returned")

    @property
    def parked(self) -> dict[int, int]:
        return _by_attempt(self.buckets, "parked")

    def _settled(self) -> tuple[RecoveryBucket, ...]:
        return tuple(b for b in self.buckets if b.start + HOUR <= self.settled_before)

    def recovered(self, attempt: int) -> int:
        settled = self._settled()
        sent = _by_attempt(settled, "sent").get(attempt, 0)
        return max(0, sent - _by_attempt(settled, "returned").get(attempt, 0))

    def in_flight(self, attempt: int) -> int:
        late = [b for b in self.buckets if b.start + HOUR > self.settled_before]
        sent = _by_attempt(late, "sent").get(attempt, 0)
        return max(0, sent - _by_attempt(late, "returned").get(attempt, 0))

    def attempts(self) -> list[int]:
        """Every attempt with a count, in order."""
        return sorted(set(self.sent) | set(self.returned) | set(self.parked))

    def text(self) -> str:
        """The `status` line, one of:
        `last 24 h: nothing replayed` (no count in the window),
        `last 24 h: 1,000 failed first; 812 recovered on replay 1, 150 on 2, 30 on 3; 8 parked`
        with `; 12 in flight` added while copies of unsettled hours may still come back, and
        `none replayed` in place of the recoveries when no copy was sent.
        """
        hours = max(1, round((self.until - self.since) / HOUR))
        head = f"last {hours} h: "
        if not any(any(bucket.counters.values()) for bucket in self.buckets):
            return head + "nothing replayed"
        replayed = [n for n in self.sent if n >= 1]
        recoveries = ", ".join(
            f"{self.recovered(n):,} " + (f"recovered on replay {n}" if i == 0 else f"on {n}")
            for i, n in enumerate(replayed)
        )
        parts = [f"{self.failed_first:,} failed first", recoveries or "none replayed"]
        parts.append(f"{sum(self.parked.values()):,} parked")
        flying = sum(self.in_flight(n) for n in replayed)
        if flying:
            parts.append(f"{flying:,} in flight")
        return head + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The same for `status --json`, the console's chart and the dashboard: totals per
        attempt and each hour's counters."""
        sent, returned, parked = self.sent, self.returned, self.parked
        return {
            "since": iso_time(self.since),
            "until": iso_time(self.until),
            "settled_before": iso_time(self.settled_before),
            "failed_first": self.failed_first,
            "attempts": [
                {
                    "attempt": n,
                    "sent": sent.get(n, 0),
                    "returned": returned.get(n, 0),
                    "recovered": self.recovered(n),
                    "in_flight": self.in_flight(n),
                    "parked": parked.get(n, 0),
                }
                for n in self.attempts()
            ],
            "parked": sum(parked.values()),
            "hours": [{"hour": b.hour, **dict(b.counters)} for b in self.buckets],
        }


def bucket_of(hour: Any, values: Mapping[str, Any]) -> RecoveryBucket | None:
    """The bucket of a stored hour (an item's or a line's), None when `hour` is no hour text."""
    if not isinstance(hour, str):
        return None
    try:
        bucket_start(hour)
    except ValueError:
        return None
    return RecoveryBucket(hour, read_counters(values))


def summarize(
    buckets: Iterable[RecoveryBucket | None],
    since: float,
    until: float,
    settled_before: float | None = None,
) -> RecoverySummary:
    """The summary of the buckets in [since, until] (by the hour each starts), hours merged;
    `settled_before` defaults to `until - RECOVERY_SETTLE_SECONDS`; None buckets are skipped."""
    if settled_before is None:
        settled_before = until - RECOVERY_SETTLE_SECONDS
    merged: dict[str, Counter[str]] = {}
    low, high = hour_bucket(since), hour_bucket(until)
    for bucket in buckets:
        if bucket is not None and low <= bucket.hour <= high:
            merged.setdefault(bucket.hour, Counter()).update(bucket.counters)
    ordered = tuple(RecoveryBucket(hour, dict(merged[hour])) for hour in sorted(merged))
    return RecoverySummary(since, until, settled_before, ordered)


def iso_time(at: float) -> str:
    """Epoch seconds as ISO 8601 UTC to the second: `2026-12-06T14:02:00Z`."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RecoveryStore(Protocol):
    """Where a queue's hourly recovery counts are kept."""

    def add(self, queue: str, tally: RecoveryTally, at: float) -> None:
        """Add one invocation's tally to `queue`'s hour of `at` (one write; none if empty)."""
        ...

    def window(
        self, queue: str, since: float, until: float, *, settled_before: float | None = None
    ) -> RecoverySummary:
        """The counts of the hours from `since`'s to `until`'s; `settled_before` defaults to
        `until - RECOVERY_SETTLE_SECONDS`."""
        ...
