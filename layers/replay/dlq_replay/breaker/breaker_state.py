"""The outage breaker's states (pure) and their changes, and the known outages whose attempts
are given back (docs/design.md, "Outages")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from dlq_replay.breaker.rule import (
    NOTHING_KNOWN,
    BreakerPolicy,
    Counts,
    Known,
    Signal,
    in_window,
    returned,
)
from dlq_replay.core import attributes
from dlq_replay.core.messages import InboundMessage

KEPT_OUTAGES = 4  # the known outages a state remembers (the latest); older ones are over


class Phase(StrEnum):
    CLOSED = "closed"  # replaying as usual
    OPEN = "open"  # the replay receives nothing until `next_probe`
    HALF_OPEN = "half-open"  # receiving again; a probe's wait without the signal closes it


class Cause(StrEnum):
    """Why the breaker last changed (recorded with the state, shown by `status`)."""

    OUTAGE = "outage"  # the rule tripped: opened
    PROBE = "probe"  # the pause is over: half-open
    RECOVERED = "recovered"  # a probe's wait without the signal: closed
    RETENTION = "retention"  # the DLQ's oldest message has under a day left: closed
    OPERATOR_RESUME = "operator-resume"  # `dlq-replay resume`: closed
    OPERATOR_PAUSE = "operator-pause"  # `dlq-replay pause`: closed, the operator's pause stands
    TAKEN_OVER = "taken-over"  # someone else changed the event source while open: closed


Outage = tuple[float, float | None]  # (from, until); until None: still going on


@dataclass(frozen=True, slots=True)
class BreakerState:
    """`since` also starts the window: counts from before the last change do not count."""

    phase: Phase = Phase.CLOSED
    since: float = 0.0
    next_probe: float | None = None  # open: when the probe receives again
    openings: int = 0  # consecutive openings (0 once closed)
    cause: Cause | None = None
    holding: bool = False  # half-open, the probe's replays sent: waiting for their outcome
    baseline: int | None = None  # half-open: the DLQ's depth when the probe began
    probe_size: int = 0  # holding: the replays the probe made
    version: int = 0  # bumped on every change; a store writes only over the version it read
    outages: tuple[Outage, ...] = ()  # the known outages, oldest first

    @property
    def receiving(self) -> bool:
        return self.phase is not Phase.OPEN and not self.holding

    def in_outage(self, sent: float) -> bool:
        """Whether a copy sent at `sent` was sent inside a known outage."""
        return any(start <= sent and (end is None or sent <= end) for start, end in self.outages)

    def to_item(self) -> dict[str, object]:
        """Its fields, for JSON (the enums are strings, the outages lists)."""
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> BreakerState:
        """From `to_item`'s shape (a field it lacks keeps its default)."""
        values = {name: item[name] for name in cls.__slots__ if item.get(name) is not None}
        values["phase"] = Phase(item.get("phase", Phase.CLOSED))
        values["cause"] = Cause(item["cause"]) if item.get("cause") else None
        values["outages"] = tuple((start, end) for start, end in item.get("outages") or ())
        return cls(**values)


def give_back(
    state: BreakerState,
    messages: Sequence[InboundMessage],
    count_attribute: str,
    known: Known = NOTHING_KNOWN,
) -> tuple[list[InboundMessage], int]:
    """The records, a return whose copy was sent inside a known outage one count lower; how many."""
    if not state.outages:
        return list(messages), 0
    return _one_lower(
        messages,
        count_attribute,
        known,
        lambda found: found[1] is not None and state.in_outage(found[1]),
    )


def held_back(
    messages: Sequence[InboundMessage],
    count_attribute: str,
    last_attempt: int,
    known: Known = NOTHING_KNOWN,
) -> tuple[list[InboundMessage], int]:
    """The records, a return that spent its last attempt one count lower (replayed at it again,
    not parked: a suspected outage); how many."""
    return _one_lower(messages, count_attribute, known, lambda found: found[0] >= last_attempt)


def _one_lower(
    messages: Sequence[InboundMessage],
    count_attribute: str,
    known: Known,
    chosen: Callable[[tuple[int, float | None]], bool],
) -> tuple[list[InboundMessage], int]:
    lowered = 0
    out: list[InboundMessage] = []
    for message in messages:
        found = returned(message, count_attribute, known)
        if found is not None and chosen(found):
            values = {**message.attributes, count_attribute: attributes.number(found[0] - 1)}
            out.append(replace(message, attributes=values))
            lowered += 1
        else:
            out.append(message)
    return out, lowered


def _change(
    state: BreakerState,
    phase: Phase,
    now: float,
    cause: Cause,
    *,
    openings: int | None = None,
    next_probe: float | None = None,
    baseline: int | None = None,
    outages: tuple[Outage, ...] | None = None,
) -> BreakerState:
    outages = state.outages if outages is None else outages
    if phase is Phase.CLOSED:  # the outage is known until the breaker closes
        outages = tuple((start, now if end is None else end) for start, end in outages)
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
        outages=outages,
    )


def after_batch(
    state: BreakerState,
    signal: Signal | None,
    now: float,
    policy: BreakerPolicy,
    *,
    time_left: float | None = None,
) -> BreakerState | None:
    """Open on the signal unless open, or the DLQ's oldest message is within the margin."""
    if state.phase is Phase.OPEN or signal is None:
        return None
    if time_left is not None and time_left < policy.retention_margin_seconds:
        return None
    return _open(state, now, policy, signal.known_from)


def _open(state: BreakerState, now: float, policy: BreakerPolicy, start: float) -> BreakerState:
    """Open (again), the pause doubled; a reopening continues the outage already known."""
    openings = state.openings + 1
    outages = state.outages
    if not outages or outages[-1][1] is not None:
        outages = (*outages, (min(start, now), None))[-KEPT_OUTAGES:]
    next_probe = now + policy.pause_seconds(openings)
    return _change(
        state,
        Phase.OPEN,
        now,
        Cause.OUTAGE,
        openings=openings,
        next_probe=next_probe,
        outages=outages,
    )


def probe_sent(
    state: BreakerState, events: Iterable[tuple[float, Counts]], now: float, policy: BreakerPolicy
) -> BreakerState | None:
    """Half-open with a baseline depth and PROBE_REPLAYS sent since: hold, watching the depth."""
    if state.phase is not Phase.HALF_OPEN or state.holding or state.baseline is None:
        return None
    sent = sum(c.sent for _, c in in_window(events, now, policy, since=state.since))
    if sent < policy.probe_replays:
        return None
    return replace(state, holding=True, probe_size=sent, version=state.version + 1)


def on_tick(
    state: BreakerState,
    now: float,
    policy: BreakerPolicy,
    *,
    time_left: float | None = None,
    depth: int | None = None,
) -> BreakerState | None:
    """Open: closed when too little retention is left, half-open (at `depth`) once the pause is
    over. Half-open: open again when the probe's copies are back, closed after the probe's wait."""
    if state.phase is Phase.OPEN:
        if time_left is not None and time_left < policy.retention_margin_seconds:
            return _change(state, Phase.CLOSED, now, Cause.RETENTION, openings=0)
        due = state.next_probe is not None and now >= state.next_probe
        return _change(state, Phase.HALF_OPEN, now, Cause.PROBE, baseline=depth) if due else None
    if state.phase is not Phase.HALF_OPEN:
        return None
    missing = (1.0 - policy.return_ratio) * state.probe_size
    if state.holding and depth is not None and state.baseline is not None:  # noqa: SIM102
        if depth >= state.baseline - missing:
            return _open(state, now, policy, now)
    if now >= state.since + policy.probe_wait_seconds:
        return _change(state, Phase.CLOSED, now, Cause.RECOVERED, openings=0)
    return None


def by_operator(state: BreakerState, now: float, cause: Cause) -> BreakerState | None:
    """Closed by an operator (or a change of the event source): never resumed by itself."""
    if state.phase is Phase.CLOSED:
        return None
    return _change(state, Phase.CLOSED, now, cause, openings=0)
