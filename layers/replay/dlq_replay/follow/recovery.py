"""The automatic replay's recovery, by attempt: a record reaching the DLQ with replay count c
says attempt c failed (0: the first delivery); a copy sent as attempt n that never comes back
recovered. One invocation's `RecoveryTally` is one write to the queue's hour.

Counter names (the stores' contract): `failed_first`, `sent_<n>`, `returned_<n>`, `parked_<n>`;
a count beyond the attempt limit is kept as `OVER_ATTEMPTS`, so no item grows without bound.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

from dlq_replay.core.settings import MAX_ATTEMPTS_LIMIT

OVER_ATTEMPTS = MAX_ATTEMPTS_LIMIT + 1
HOUR = 3600
# How long the table keeps an hour's counts: past any window `status` shows.
RECOVERY_KEEP_SECONDS = 15 * 24 * HOUR
# The default settle window (a replayed copy is back within an hour under the defaults).
RECOVERY_SETTLE_SECONDS = HOUR
_COUNTER = re.compile(r"(sent|returned|parked)_([0-9]{1,3})")
_FAILED_FIRST = "failed_first"
_HOUR = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}")


def hour_bucket(at: float) -> str:
    """The hour `at` (epoch seconds) falls in, ISO 8601 UTC: `2026-12-06T14`."""
    return time.strftime("%Y-%m-%dT%H", time.gmtime(at))


def bucket_start(hour: str) -> float:
    """Where an `hour_bucket` text starts; ValueError for any other text. (Not `strptime`:
    it loads locale modules at the Lambda's first write.)"""
    if not isinstance(hour, str) or _HOUR.fullmatch(hour) is None:
        raise ValueError(f"not an hour bucket: {hour!r}")
    year, month, day, at = (int(part) for part in (hour[:4], hour[5:7], hour[8:10], hour[11:]))
    return datetime(year, month, day, at, tzinfo=UTC).timestamp()


def _attempt(value: int, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"not an attempt: {value!r}")
    return min(value, OVER_ATTEMPTS)


class RecoveryTally:
    """One invocation's counts."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()

    def arrived(self, count: int) -> None:
        """A record read with replay count `count`: attempt `count` failed."""
        attempt = _attempt(count, 0)
        self.counters[_FAILED_FIRST if attempt == 0 else f"returned_{attempt}"] += 1

    def sent(self, attempt: int) -> None:
        self.counters[f"sent_{_attempt(attempt, 1)}"] += 1

    def parked(self, attempt: int) -> None:
        self.counters[f"parked_{_attempt(attempt, 0)}"] += 1

    @property
    def empty(self) -> bool:
        return not any(self.counters.values())

    def to_counters(self) -> dict[str, int]:
        return {name: value for name, value in sorted(self.counters.items()) if value}


def read_counters(values: Mapping[str, Any]) -> dict[str, int]:
    """The counters among stored values; foreign names and values are left out."""
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
    """A queue's recovery over [since, until]: `recovered(n)` is sent - returned of attempt n
    over the hours ended before `settled_before`, `in_flight(n)` the same over the later ones
    (a return counts in the hour it came back: only the totals are exact)."""

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

    def _unreturned(self, attempt: int, *, settled: bool) -> int:
        hours = [b for b in self.buckets if (b.start + HOUR <= self.settled_before) == settled]
        sent = _by_attempt(hours, "sent").get(attempt, 0)
        return max(0, sent - _by_attempt(hours, "returned").get(attempt, 0))

    def recovered(self, attempt: int) -> int:
        return self._unreturned(attempt, settled=True)

    def in_flight(self, attempt: int) -> int:
        return self._unreturned(attempt, settled=False)

    def attempts(self) -> list[int]:
        return sorted(set(self.sent) | set(self.returned) | set(self.parked))

    def text(self) -> str:
        """The `status` line: `last 24 h: 1,000 failed first; 812 recovered on replay 1, 150 on
        2; 8 parked; 12 in flight`, or `last 24 h: nothing replayed`."""
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
        """For `status --json` and the console's chart: totals per attempt, each hour's counts."""
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


def summarize(
    stored: Iterable[tuple[Any, Mapping[str, Any]]],
    since: float,
    until: float,
    settled_before: float | None = None,
) -> RecoverySummary:
    """Stored hours' counters in [since, until], merged by hour; what is no hour is skipped."""
    if settled_before is None:
        settled_before = until - RECOVERY_SETTLE_SECONDS
    merged: dict[str, Counter[str]] = {}
    low, high = hour_bucket(since), hour_bucket(until)
    for hour, values in stored:
        try:
            bucket_start(hour)
        except ValueError:
            continue
        if low <= hour <= high:
            merged.setdefault(hour, Counter()).update(read_counters(values))
    ordered = tuple(RecoveryBucket(hour, dict(merged[hour])) for hour in sorted(merged))
    return RecoverySummary(since, until, settled_before, ordered)


def iso_time(at: float) -> str:
    """`2026-12-06T14:02:00Z`."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
