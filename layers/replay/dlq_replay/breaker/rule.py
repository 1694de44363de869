"""The outage breaker's rule (pure; docs/design.md, "Outages"): first replays, counted at their
send time, that come back within the window both many (MIN_RETURNS) and nearly all
(RETURN_RATIO). The timing follows the main queue (`QueueTiming`), bounded by the constants."""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.messages import InboundMessage

if TYPE_CHECKING:
    from dlq_replay.targets.ledger import Invocation

# Message id -> the ledger's invocation a record without the count attribute returns from.
Known = Mapping[str, "Invocation"]
NOTHING_KNOWN: Known = MappingProxyType({})
NOTHING_REFUSED: Mapping[str, int] = MappingProxyType({})

# The rule's constants (docs/design.md, "Outages"); the timing ones are upper bounds.
WINDOW_SECONDS = 300.0  # five minutes: three default attempts (60 + 120 + 240 s) fit in it
MIN_RETURNS = 20  # fewer returns than this is a handful of bad messages, not an outage
RETURN_RATIO = 0.9  # returns / replays: "nearly all of what was replayed came back"
FIRST_PAUSE_SECONDS = 120.0  # the first pause; doubled on each consecutive opening
MAX_PAUSE_SECONDS = 3600.0  # never longer than an hour between probes
# A probe replays this many records, then watches the DLQ's depth: back to (nearly) where it
# was, the copies came back and it opens again.
PROBE_REPLAYS = 2 * MIN_RETURNS
# With less than this left before SQS deletes the DLQ's oldest message, the breaker closes
# (and does not open): the replay parks as usual instead of letting messages expire.
RETENTION_MARGIN_SECONDS = 86_400.0
SLICES = 30  # the window is read in 30 slices (10 s each at five minutes)
# Derived from the queue: the window holds two redelivery cycles, the first pause one, the
# probe waits one and a half, the pauses stop doubling at ten; never below these floors.
CYCLE_SLACK_SECONDS = 5.0  # the consumer's and the pollers' own pace on top of SQS's times
MIN_WINDOW_SECONDS = 20.0
MIN_PAUSE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class QueueTiming:
    visibility_seconds: float
    max_receive_count: int


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """The rule's constants; `for_queue` derives the timing ones from the main queue."""

    window_seconds: float = WINDOW_SECONDS
    min_returns: int = MIN_RETURNS
    return_ratio: float = RETURN_RATIO
    first_pause_seconds: float = FIRST_PAUSE_SECONDS
    max_pause_seconds: float = MAX_PAUSE_SECONDS
    probe_replays: int = PROBE_REPLAYS
    retention_margin_seconds: float = RETENTION_MARGIN_SECONDS
    probe_wait_seconds: float = WINDOW_SECONDS  # half-open: closed after this without returns
    # How long a message fails in the main queue before it reaches the DLQ (0: unknown).
    failing_seconds: float = 0.0

    def outage(self, counts: Counts) -> bool:
        """Many first replays and their returns, and nearly all of those replays came back."""
        return (
            counts.returns >= self.min_returns
            and counts.replays >= self.min_returns
            and counts.returns >= self.return_ratio * counts.replays
        )

    def pause_seconds(self, openings: int) -> float:
        """The pause after the `openings`-th consecutive opening (1 → the first pause)."""
        doublings = max(0, min(openings - 1, 32))
        return min(self.max_pause_seconds, self.first_pause_seconds * 2.0**doublings)

    def for_queue(self, timing: QueueTiming | None, delay_seconds: float) -> BreakerPolicy:
        """The timing fitted to the main queue (never longer): a cycle is its redelivery plus
        `delay_seconds` (the longest a replay is sent with) plus slack; a redelivery: how long
        after a copy is visible in the main queue a failing one is back in the DLQ."""
        if timing is None:
            return self
        redelivery = timing.visibility_seconds * timing.max_receive_count
        cycle = redelivery + max(0.0, delay_seconds) + CYCLE_SLACK_SECONDS
        window = min(self.window_seconds, max(MIN_WINDOW_SECONDS, 2.0 * cycle))
        first = min(self.first_pause_seconds, max(MIN_PAUSE_SECONDS, cycle))
        return replace(
            self,
            window_seconds=window,
            first_pause_seconds=first,
            max_pause_seconds=min(self.max_pause_seconds, max(first, 10.0 * cycle)),
            probe_wait_seconds=min(self.probe_wait_seconds, max(first, 1.5 * cycle)),
            failing_seconds=timing.max_receive_count
            * min(timing.visibility_seconds, max(0.0, delay_seconds)),
        )

    def deletions_enough(self, replays: int) -> int:
        """The deletions of a consumer that works: a tenth of the replays; fewer is in transit."""
        return max(self.min_returns, math.ceil((1.0 - self.return_ratio) * replays))


@dataclass(frozen=True, slots=True)
class Counts:
    """First replays (sent with count 1), their returns, and every copy sent (a probe's count)."""

    replays: int = 0
    returns: int = 0
    sent: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.replays + other.replays, self.returns + other.returns, self.sent + other.sent
        )

    def __bool__(self) -> bool:
        return bool(self.replays or self.returns or self.sent)


@dataclass(frozen=True, slots=True)
class Signal:
    """The outage signal: the stretch of send times whose first replays came back."""

    start: float  # when the stretch began: the main queue's deletions are read from then on
    counts: Counts
    began: float | None = None  # the outage known from (None: `start`): `failing_since`

    @property
    def known_from(self) -> float:
        """When the outage began: its attempts are given back from then."""
        return self.start if self.began is None else min(self.began, self.start)


def returned(
    message: InboundMessage, count_attribute: str, known: Known = NOTHING_KNOWN
) -> tuple[int, float | None] | None:
    """A return's count and when its copy was sent (None: unknown); None for no return. Without
    the count attribute, `known`'s (Lambda writes its DLQ record minutes after the invocation)."""
    if NOT_BEFORE_ATTRIBUTE in message.attributes:
        return None
    sent = None if message.sent_ms is None else message.sent_ms / 1000.0
    invocation = None if count_attribute in message.attributes else known.get(message.message_id)
    if invocation is None:
        count = attributes.parse_count(message.attributes.get(count_attribute))
    else:
        count = invocation.count
        sent = sent if invocation.at is None else invocation.at
    return (count, sent) if count else None


def observe(
    handled: Iterable[tuple[InboundMessage, Decision, bool]],
    count_attribute: str,
    now: float,
    *,
    known: Known = NOTHING_KNOWN,
    refused: Mapping[str, int] = NOTHING_REFUSED,
) -> list[tuple[float, Counts]]:
    """One batch's replays and returns, each at its send time, so like is compared with like.
    `refused`: message id -> the attempt whose delivery the target refused in this batch."""
    # One event per send time, not per record: `outage_in_window` stays cheap.
    returns: Counter[float] = Counter()
    replays = sent = 0
    for message, decision, written in handled:
        found = returned(message, count_attribute, known)
        if found is not None and found[0] == 1:
            returns[now if found[1] is None else found[1]] += 1
        attempt = refused.get(message.message_id)
        if attempt is not None:  # delivered, and back at once
            sent += 1
            if attempt == 1:
                replays += 1
                returns[now] += 1
        elif written and decision.action in (Action.REPLAY, Action.RELEASE):
            sent += 1
            replays += decision.attempt == 1
    events = [(when, Counts(returns=count)) for when, count in returns.items()]
    if sent:
        events.append((now, Counts(replays=replays, sent=sent)))
    return events


def outage_in_window(
    events: Iterable[tuple[float, Counts]], now: float, policy: BreakerPolicy, *, since: float
) -> Signal | None:
    """The first stretch of SLICES within the window and since the last change whose first
    replays came back, or None (the last moments' cannot be back yet)."""
    width = policy.window_seconds / SLICES
    start = now - policy.window_seconds
    slices = [Counts()] * SLICES
    kept = in_window(events, now, policy, since=since)
    if sum(counts.returns for _, counts in kept) < policy.min_returns:
        return None  # the common case, replays that do not come back: no stretch can show it
    replayed = sorted(sent for sent, counts in kept if counts.replays)
    for sent, counts in kept:
        # A return goes with the last replays sent before its copy (its own batch's, counted
        # when the batch began), so a slice edge between them cannot split the two.
        at = bisect.bisect_right(replayed, sent)
        when = replayed[at - 1] if at and counts.returns and not counts.replays else sent
        index = min(SLICES - 1, max(0, int((when - start) / width)))
        slices[index] = slices[index] + counts
    for first in range(SLICES):
        if not slices[first]:
            continue  # a stretch begins with its first slice that holds something
        stretch = Counts()
        for counts in slices[first:]:
            stretch = stretch + counts
            if policy.outage(stretch):
                began = failing_since(slices, first, policy)
                return Signal(
                    max(since, start + first * width), stretch, max(since, start + began * width)
                )
    return None


def failing_since(slices: list[Counts], first: int, policy: BreakerPolicy) -> int:
    """The stretch's first slice, moved back over those before it whose replays came back too
    (their returns get their attempts back as much as the stretch's own)."""
    began = first
    for index in range(first - 1, -1, -1):
        counts = slices[index]
        if not counts.replays and not counts.returns:
            continue
        if counts.returns <= round((1.0 - policy.return_ratio) * counts.replays, 9):
            break
        began = index
    return began


def in_window(
    events: Iterable[tuple[float, Counts]], now: float, policy: BreakerPolicy, *, since: float
) -> list[tuple[float, Counts]]:
    """The events sent within the window and since the last change."""
    low = max(now - policy.window_seconds, since)
    return [event for event in events if low <= event[0] <= now]
