"""The outage breaker's rule (pure): the signal that the consumer fails as a whole, and the
timing it is read on.

Per-message backoff assumes failures are independent. In an outage every replayed copy comes
back: a *return* is a record that arrives in the DLQ with a count of at least 1 (a replayed
copy dead-lettered again; a copy waiting in the DLQ for its time is not one). A record without
the count attribute can be a return too: one Lambda wrote for an invocation the replay made,
whose count and time the replay knows from its invocation ledger (`Known`); and a delivery
the target refused at once is a return the moment it is refused (`observe`'s `refused`).

Only a message's first replay is evidence (`Counts.replays`/`returns`): a copy sent with count
1 and coming back failed in the consumer for the first time since it reached the DLQ. A copy
with a higher count already failed a replay, and failing again is what a bad message does: the
tail of a drain where only the poison is left comes back whole, and must not look like an
outage. The breaker opens when, within the window, first replays came back both many
(MIN_RETURNS, so a few poison messages cannot trip it) and nearly all (RETURN_RATIO, so a busy
replay with some failures does not).

The window, the first pause and the probe's wait follow the main queue's redelivery: a copy
that fails is back in the DLQ its visibility timeout times `maxReceiveCount` after the delay it
was sent with (`QueueTiming`); the constants below bound them, and stand for a queue that
cannot be read.
"""

from __future__ import annotations

import bisect
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

# Message id -> the invocation a record without the count attribute returns from (the
# invocation ledger's count, and when the invocation was made: the send time of its copy).
Known = Mapping[str, "Invocation"]
NOTHING_KNOWN: Known = MappingProxyType({})
NOTHING_REFUSED: Mapping[str, int] = MappingProxyType({})

# The rule's constants (docs/design.md, "Outages"); the timing ones are upper bounds.
WINDOW_SECONDS = 300.0  # five minutes: three default attempts (60 + 120 + 240 s) fit in it
MIN_RETURNS = 20  # fewer returns than this is a handful of bad messages, not an outage
RETURN_RATIO = 0.9  # returns / replays: "nearly all of what was replayed came back"
FIRST_PAUSE_SECONDS = 120.0  # the first pause; doubled on each consecutive opening
MAX_PAUSE_SECONDS = 3600.0  # never longer than an hour between probes
# A probe replays this many records, then receives nothing more and watches the DLQ's depth:
# back to (nearly: RETURN_RATIO of the probe) where it was before the probe, the copies came
# back and it opens again; a probe's wait without that, it closes. A probe into a consumer
# still down sends a few dozen messages, not the whole backlog (and their attempts are given
# back: `state.give_back`).
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
    """The main queue's redelivery, as GetQueueAttributes tells it."""

    visibility_seconds: float
    max_receive_count: int

    @property
    def redelivery_seconds(self) -> float:
        """A copy the consumer keeps failing is back in the DLQ this long after it is
        first visible in the main queue."""
        return self.visibility_seconds * self.max_receive_count


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
    # How long a message fails in the main queue before it reaches the DLQ, as far as the
    # replay can tell (0: unknown): the consumer's deletions count from this long before a
    # stretch (`deletions_from`).
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
        """This policy's timing fitted to the main queue: one cycle is its redelivery plus
        `delay_seconds` (the longest delay a replay is sent with) plus slack. None (the queue
        could not be read): this policy as it is. Never longer than this policy's values."""
        if timing is None:
            return self
        cycle = timing.redelivery_seconds + max(0.0, delay_seconds) + CYCLE_SLACK_SECONDS
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

    def deletions_from(self, start: float) -> float:
        """From when the main queue's consumer deleting others vetoes a stretch whose first
        replays were sent from `start`: `failing_seconds` before it, while its messages were
        failing in the main queue. A consumer that deleted others meanwhile works: they are
        bad messages. Behind the consumer toolkit's backoff the poison alone reaches the DLQ,
        after the good messages sent with it are done, and its first replays all come back
        with nothing left to delete since then. Each of the `maxReceiveCount` receives waits
        the visibility timeout, or behind the toolkit a backoff delay of at most the cap: the
        shorter of the two keeps the look back from reaching far before an outage."""
        return start - self.failing_seconds


@dataclass(frozen=True, slots=True)
class Counts:
    """First replays (copies sent with count 1) and their returns, the rule's evidence; and
    every copy sent on to its queue (`sent`: what a probe counts)."""

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
    """The outage signal: the stretch of send times whose first replays came back, and how
    far back before it the first replays came back too."""

    start: float  # when the stretch began: the main queue's deletions are read from then on
    counts: Counts
    began: float | None = None  # the outage known from (None: `start`): `failing_since`

    @property
    def known_from(self) -> float:
        """When the outage is known to have begun: its attempts are given back from then."""
        return self.start if self.began is None else min(self.began, self.start)


def is_return(message: InboundMessage, count_attribute: str, known: Known = NOTHING_KNOWN) -> bool:
    """A replayed copy back in the DLQ: a valid count of at least 1, and not a copy waiting
    in the DLQ for its time (those carry the not-before attribute and are not failures)."""
    return returned(message, count_attribute, known) is not None


def return_count(
    message: InboundMessage, count_attribute: str, known: Known = NOTHING_KNOWN
) -> int | None:
    """The count a returned copy carries; None when the record is no return."""
    found = returned(message, count_attribute, known)
    return None if found is None else found[0]


def returned(
    message: InboundMessage, count_attribute: str, known: Known = NOTHING_KNOWN
) -> tuple[int, float | None] | None:
    """A return's count and when its copy was sent (epoch seconds, None: unknown); None when
    the record is no return. The count attribute and SQS's SentTimestamp when the record has
    the attribute; else what `known` says of its message id (the invocation's count and
    time: Lambda writes its DLQ record minutes after the invocation, after its own retries)."""
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
    """One batch's replays and returns, each at its *send time*: a replay now, a return at
    the time its copy was sent (SQS's SentTimestamp, which a copy keeps when SQS dead-letters
    it; the invocation's time for a return `known` tells; its arrival when neither). Input:
    (message as received, decision, copy written); `refused`: message id -> the attempt
    whose delivery the target refused in this batch (the decision is then what follows the
    refusal: a waiting copy or a park): a copy sent, and when it was the first attempt a first
    replay and its return, both now.

    Counting a return against the moment its replay was sent compares like with like: the
    replays of one moment, and how many of those came back, whatever the delays and the
    consumer's pace between the two.
    """
    # One event per send time, not per record: the window then holds about one event per
    # batch, which keeps `outage_in_window` cheap on every batch.
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
    """The outage signal: some stretch of send times within the window (and since the
    breaker's last change) whose first replays, at least MIN_RETURNS of them, came back, at
    least RETURN_RATIO of them; that stretch, or None.

    A stretch, not the whole window: the replays of the last moments cannot be back yet, and
    those before the outage began did not fail, so either would hide the signal; the earliest
    replays of the outage show it as soon as they are back. The window is cut in SLICES, so a
    stretch is a run of whole slices (a handful of batches at least, not a lucky few records).
    """
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
    """The slice the outage is known from: the stretch's first, moved back over the slices
    just before it whose first replays came back too (more than the tenth that a working
    consumer's bad messages bring back; a slice with neither is passed over).

    The stretch that trips is the first run of slices *nearly all* back, often not the
    earliest: the outage's first replays fill their slices faster than they come back, and a
    smaller later slice is complete first. Their copies failed in the same outage, and a
    return of one of them must get its attempt back as much as the stretch's.
    """
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
    """The events sent within the window and since the breaker's last change."""
    low = max(now - policy.window_seconds, since)
    return [event for event in events if low <= event[0] <= now]
