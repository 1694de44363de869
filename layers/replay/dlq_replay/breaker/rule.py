"""The outage breaker's rule and states (pure): when the consumer fails as a whole, stop.

Per-message backoff assumes failures are independent. In an outage every replayed copy comes
back: a *return* is a record that arrives in the DLQ with a count of at least 1 (a replayed
copy dead-lettered again; a copy waiting in the DLQ for its time is not one). The breaker
opens when, within the window, returns are both many (MIN_RETURNS, so a few poison messages
cannot trip it) and nearly all of what was replayed (RETURN_RATIO, so a busy replay with some
failures does not). Open, nothing is received; after a pause (doubling on each consecutive
opening, capped) it probes (half-open): a window without the signal closes it.

Everything here is a value: the clock is an argument, the stores and switches live with the
callers (`breaker.controller`, `breaker.dynamo`, `breaker.worker`).
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.messages import InboundMessage

# The rule's constants (docs/design.md, "Outages").
WINDOW_SECONDS = 300.0  # five minutes: three default attempts (60 + 120 + 240 s) fit in it
MIN_RETURNS = 20  # fewer returns than this is a handful of bad messages, not an outage
RETURN_RATIO = 0.9  # returns / replays: "nearly all of what was replayed came back"
FIRST_PAUSE_SECONDS = 120.0  # the first pause; doubled on each consecutive opening
MAX_PAUSE_SECONDS = 3600.0  # never longer than an hour between probes
# A probe replays this many records, then receives nothing more and watches the DLQ's depth:
# back to (nearly: RETURN_RATIO of the probe) where it was before the probe, the copies came
# back and it opens again; a window without that, it closes. A probe into a consumer still
# down spends an attempt of a few dozen messages, not of the whole backlog.
PROBE_REPLAYS = 2 * MIN_RETURNS
# With less than this left before SQS deletes the DLQ's oldest message, the breaker closes
# (and does not open): the replay parks as usual instead of letting messages expire.
RETENTION_MARGIN_SECONDS = 86_400.0
SLICES = 30  # the window is read in 30 slices (10 s each at five minutes)


class Phase(StrEnum):
    CLOSED = "closed"  # replaying as usual
    OPEN = "open"  # the replay receives nothing until `next_probe`
    HALF_OPEN = "half-open"  # receiving again; a window without the signal closes it


class Cause(StrEnum):
    """Why the breaker last changed (recorded with the state, shown by `status`)."""

    OUTAGE = "outage"  # the rule tripped: opened
    PROBE = "probe"  # the pause is over: half-open
    RECOVERED = "recovered"  # a window without the signal: closed
    RETENTION = "retention"  # the DLQ's oldest message has under a day left: closed
    OPERATOR_RESUME = "operator-resume"  # `dlq-replay resume`: closed
    OPERATOR_PAUSE = "operator-pause"  # `dlq-replay pause`: closed, the operator's pause stands
    TAKEN_OVER = "taken-over"  # someone else changed the event source while open: closed


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """The rule's constants; the demo scales them down, Lambda and the worker use these."""

    window_seconds: float = WINDOW_SECONDS
    min_returns: int = MIN_RETURNS
    return_ratio: float = RETURN_RATIO
    first_pause_seconds: float = FIRST_PAUSE_SECONDS
    max_pause_seconds: float = MAX_PAUSE_SECONDS
    probe_replays: int = PROBE_REPLAYS
    retention_margin_seconds: float = RETENTION_MARGIN_SECONDS

    def outage(self, counts: Counts) -> bool:
        """Many replays and returns, and nearly all of those replays came back."""
        return (
            counts.returns >= self.min_returns
            and counts.replays >= self.min_returns
            and counts.returns >= self.return_ratio * counts.replays
        )

    def pause_seconds(self, openings: int) -> float:
        """The pause after the `openings`-th consecutive opening (1 → the first pause)."""
        doublings = max(0, min(openings - 1, 32))
        return min(self.max_pause_seconds, self.first_pause_seconds * 2.0**doublings)


@dataclass(frozen=True, slots=True)
class Counts:
    """Replays (copies sent on to their queue) and returns (copies that came back)."""

    replays: int = 0
    returns: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.replays + other.replays, self.returns + other.returns)

    def __bool__(self) -> bool:
        return bool(self.replays or self.returns)


def is_return(message: InboundMessage, count_attribute: str) -> bool:
    """A replayed copy back in the DLQ: a valid count of at least 1, and not a copy waiting
    in the DLQ for its time (those carry the not-before attribute and are not failures)."""
    if NOT_BEFORE_ATTRIBUTE in message.attributes:
        return False
    count = attributes.parse_count(message.attributes.get(count_attribute))
    return count is not None and count >= 1


def observe(
    handled: Iterable[tuple[InboundMessage, Decision, bool]], count_attribute: str, now: float
) -> list[tuple[float, Counts]]:
    """One batch's replays and returns, each at its *send time*: a replay now, a return at
    the time its copy was sent (SQS's SentTimestamp, which a copy keeps when SQS dead-letters
    it; its arrival when absent). Input: (message, decision, copy written) per record.

    Counting a return against the moment its replay was sent compares like with like: the
    replays of one moment, and how many of those came back, whatever the delays and the
    consumer's pace between the two.
    """
    # One event per send time, not per record: the window then holds about one event per
    # batch, which keeps `outage_in_window` cheap on every batch (the same counts either way).
    # Replays and returns stay separate events (`outage_in_window` places a return by the
    # replays before it).
    returns: Counter[float] = Counter()
    replays = 0
    for message, decision, written in handled:
        if is_return(message, count_attribute):
            sent = message.sent_ms
            returns[now if sent is None else sent / 1000.0] += 1
        if written and decision.action in (Action.REPLAY, Action.RELEASE):
            replays += 1
    events = [(when, Counts(returns=count)) for when, count in returns.items()]
    if replays:
        events.append((now, Counts(replays=replays)))
    return events


def outage_in_window(
    events: Iterable[tuple[float, Counts]], now: float, policy: BreakerPolicy, *, since: float
) -> Counts | None:
    """The outage signal: some stretch of send times within the window (and since the
    breaker's last change) whose replays, at least MIN_RETURNS of them, came back, at least
    RETURN_RATIO of them; that stretch's counts, or None.

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
        index = min(SLICES - 1, int((when - start) / width))
        slices[index] = slices[index] + counts
    for first in range(SLICES):
        stretch = Counts()
        for counts in slices[first:]:
            stretch = stretch + counts
            if policy.outage(stretch):
                return stretch
    return None


def in_window(
    events: Iterable[tuple[float, Counts]], now: float, policy: BreakerPolicy, *, since: float
) -> list[tuple[float, Counts]]:
    """The events sent within the window and since the breaker's last change."""
    low = max(now - policy.window_seconds, since)
    return [event for event in events if low <= event[0] <= now]


@dataclass(frozen=True, slots=True)
class BreakerState:
    """What every invocation, the probe and `status` read; `since` also starts the window
    (counts from before the last change do not count)."""

    phase: Phase = Phase.CLOSED
    since: float = 0.0
    next_probe: float | None = None  # open: when the probe receives again
    openings: int = 0  # consecutive openings (0 once closed)
    cause: Cause | None = None
    holding: bool = False  # half-open, the probe's replays sent: waiting for their outcome
    baseline: int | None = None  # half-open: the DLQ's depth when the probe began
    probe_size: int = 0  # holding: the replays the probe made
    version: int = 0  # bumped on every change; a store writes only over the version it read

    @property
    def receiving(self) -> bool:
        return self.phase is not Phase.OPEN and not self.holding

    def to_item(self) -> dict[str, object]:
        return {
            "phase": self.phase.value,
            "since": self.since,
            "next_probe": self.next_probe,
            "openings": self.openings,
            "cause": self.cause.value if self.cause else None,
            "holding": self.holding,
            "baseline": self.baseline,
            "probe_size": self.probe_size,
            "version": self.version,
        }

    @classmethod
    def from_item(cls, item: dict[str, object]) -> BreakerState:
        """From `to_item`'s shape (numbers may come back as Decimal or str)."""
        probe = item.get("next_probe")
        cause = item.get("cause")
        return cls(
            phase=Phase(str(item.get("phase", Phase.CLOSED.value))),
            since=float(str(item.get("since", 0))),
            next_probe=None if probe in (None, "") else float(str(probe)),
            openings=int(str(item.get("openings", 0))),
            cause=Cause(str(cause)) if cause else None,
            holding=bool(item.get("holding", False)),
            baseline=None if item.get("baseline") is None else int(str(item["baseline"])),
            probe_size=int(str(item.get("probe_size", 0))),
            version=int(str(item.get("version", 0))),
        )


def _change(
    state: BreakerState,
    phase: Phase,
    now: float,
    cause: Cause,
    *,
    openings: int | None = None,
    next_probe: float | None = None,
    baseline: int | None = None,
) -> BreakerState:
    return replace(
        state,
        phase=phase,
        since=now,
        cause=cause,
        next_probe=next_probe,
        openings=state.openings if openings is None else openings,
        holding=False,
        baseline=baseline,
        probe_size=0,
        version=state.version + 1,
    )


def after_batch(
    state: BreakerState,
    signal: Counts | None,
    now: float,
    policy: BreakerPolicy,
    *,
    time_left: float | None = None,
) -> BreakerState | None:
    """Open on the outage signal (`outage_in_window`) when closed or half-open, unless the
    DLQ's oldest message has less than the retention margin left (`time_left`, None: unknown)."""
    if state.phase is Phase.OPEN or signal is None:
        return None
    if time_left is not None and time_left < policy.retention_margin_seconds:
        return None
    return _open(state, now, policy)


def _open(state: BreakerState, now: float, policy: BreakerPolicy) -> BreakerState:
    """Open (again): one more consecutive opening, the pause doubled."""
    openings = state.openings + 1
    return _change(
        state,
        Phase.OPEN,
        now,
        Cause.OUTAGE,
        openings=openings,
        next_probe=now + policy.pause_seconds(openings),
    )


def probe_sent(
    state: BreakerState,
    events: Iterable[tuple[float, Counts]],
    now: float,
    policy: BreakerPolicy,
) -> BreakerState | None:
    """Half-open and PROBE_REPLAYS replayed since: stop receiving and watch the DLQ's depth
    (without a depth from before the probe, the probe keeps receiving)."""
    if state.phase is not Phase.HALF_OPEN or state.holding or state.baseline is None:
        return None
    replays = sum(c.replays for _, c in in_window(events, now, policy, since=state.since))
    if replays < policy.probe_replays:
        return None
    return replace(state, holding=True, probe_size=replays, version=state.version + 1)


def on_tick(
    state: BreakerState,
    now: float,
    policy: BreakerPolicy,
    *,
    time_left: float | None = None,
    depth: int | None = None,
) -> BreakerState | None:
    """The unattended step: open with too little retention left → closed; open and the pause
    over → half-open (remembering the DLQ's `depth`); holding a probe whose copies are back
    (the depth within 1 - RETURN_RATIO of the probe of where it began) → open again;
    half-open for a window without reopening → closed (pause reset)."""
    if state.phase is Phase.OPEN:
        if time_left is not None and time_left < policy.retention_margin_seconds:
            return _change(state, Phase.CLOSED, now, Cause.RETENTION, openings=0)
        if state.next_probe is not None and now >= state.next_probe:
            return _change(state, Phase.HALF_OPEN, now, Cause.PROBE, baseline=depth)
        return None
    if state.phase is not Phase.HALF_OPEN:
        return None
    missing = (1.0 - policy.return_ratio) * state.probe_size
    if state.holding and depth is not None and state.baseline is not None:  # noqa: SIM102
        if depth >= state.baseline - missing:
            return _open(state, now, policy)
    if now >= state.since + policy.window_seconds:
        return _change(state, Phase.CLOSED, now, Cause.RECOVERED, openings=0)
    return None


def by_operator(state: BreakerState, now: float, cause: Cause) -> BreakerState | None:
    """An operator's pause or resume (or anyone's change of the event source) closes the
    breaker: it then never turns the event source back on by itself."""
    if state.phase is Phase.CLOSED:
        return None
    return _change(state, Phase.CLOSED, now, cause, openings=0)


def breaker_notice_fields(
    state: BreakerState, *, source: str, waiting: int | None
) -> dict[str, object]:
    """A notice's content on open and close: what changed, why, and when it probes."""
    return {
        "event": f"breaker-{state.phase.value}",
        "source": source,
        "cause": state.cause.value if state.cause else None,
        "since": state.since,
        "next_probe": state.next_probe,
        "openings": state.openings,
        "waiting": waiting,
    }


def breaker_notice_text(state: BreakerState, *, source: str, waiting: int | None) -> str:
    return json.dumps(breaker_notice_fields(state, source=source, waiting=waiting), sort_keys=True)
