"""What the demo shows: the live tables while it runs and the summary at the end."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dlq_replay.breaker.breaker_state import BreakerState, Phase
from dlq_replay.demo.scenario import Accounting, DemoResult, Tally
from dlq_replay.sqs.depth import QueueDepth

if TYPE_CHECKING:
    from rich.console import JustifyMethod

# One row per outcome of the replay, by action (`failed`: the SQS call failed); parked: by reason.
OUTCOME_LABELS = {
    "replay": "replayed to the main queue",
    "release": "sent on after a long wait",
    "defer": "long delay: waiting copy written to the DLQ",
    "hold": "waiting copy hidden again until due",
    "skip": "FIFO: waits behind its group",
    "fail": "not replayed: unusable record",
    "failed": "not replayed yet: SQS call failed",
}


@dataclass(frozen=True, slots=True)
class DemoView:
    """A demo's queues (the tally's depth labels), those empty once done, whether the consumer
    tells replay attempts apart, and words."""

    queues: tuple[str, ...] = ("main", "dlq", "operator")
    settled: tuple[str, ...] = ("main", "dlq")
    attempts: bool = True
    processed: str = "processed by the consumer"
    labels: Mapping[str, str] = field(default_factory=lambda: OUTCOME_LABELS)


SQS_VIEW = DemoView()


def outcome_rows(tally: Tally, view: DemoView = SQS_VIEW) -> list[tuple[str, int]]:
    """The outcomes table's rows. Call with the tally's lock held."""
    rows = [("sent", len(tally.expected)), (view.processed, len(tally.processed))]
    if tally.consumer_backoffs:
        rows.append(("backed off by the consumer", tally.consumer_backoffs))
    rows += [
        (label, tally.replay_outcomes[outcome])
        for outcome, label in view.labels.items()
        if tally.replay_outcomes[outcome]
    ]
    rows += [
        (f"parked: {reason}", count) for reason, count in sorted(tally.parked_by_reason.items())
    ]
    return rows


def breaker_progress(
    state: BreakerState | None, *, elapsed: float, now: float, waiting: int | None
) -> str:
    """Why the counts do not move while the breaker is open, and until when, in seconds since
    the demo began (`now`: the wall clock at `elapsed`). Empty while closed."""
    if state is None or state.phase is Phase.CLOSED:
        return ""

    def at(moment: float) -> float:
        return max(0.0, elapsed - (now - moment))

    in_dlq = "" if waiting is None else f", {waiting} waiting in the DLQ"
    since = f"since {at(state.since):.0f} s"
    if state.phase is Phase.OPEN:
        probe = state.next_probe if state.next_probe is not None else now
        left = max(0.0, probe - now)
        probing = f"probing at {at(probe):.0f} s (in {left:.0f} s)"
        return f"outage breaker open {since}, {probing}{in_dlq}"
    if state.holding:
        return (
            f"outage breaker probing {since}: {state.probe_size} copies sent, watching the DLQ "
            f"for them{in_dlq}"
        )
    return f"outage breaker probing {since}{in_dlq}"


def breaker_progress_of(tally: Tally, elapsed: float) -> str:
    """`breaker_progress` of the tally's breaker, now. Call with the tally's lock held."""
    if tally.breaker is None:
        return ""
    dlq = tally.depths.get("dlq")
    return breaker_progress(
        tally.breaker.latest,
        elapsed=elapsed,
        now=time.time(),
        waiting=None if dlq is None else dlq.total,
    )


def _table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    first: JustifyMethod = "left",
) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        table.add_column(column, justify="right" if index else first)
    for row in rows:
        table.add_row(*map(str, row))
    return table


def render(tally: Tally, started: float, view: DemoView = SQS_VIEW) -> Any:
    from rich.columns import Columns
    from rich.console import Group
    from rich.text import Text

    with tally.lock:
        breaker = breaker_progress_of(tally, time.monotonic() - started)
        depths = {name: tally.depths.get(name, QueueDepth(0, 0, 0)) for name in view.queues}
        rows = [(name, d.visible, d.in_flight, d.delayed) for name, d in depths.items()]
        tables = [_table("queues", ("queue", "visible", "in flight", "delayed"), rows)]
        if view.attempts:
            attempts = sorted(tally.deliveries_by_attempt.items())
            title = "consumer deliveries by replay attempt"
            tables.append(_table(title, ("attempt", "deliveries"), attempts, first="right"))
        title = f"outcomes ({time.monotonic() - started:.0f} s)"
        tables.append(_table(title, ("what", "count"), outcome_rows(tally, view)))
    if breaker:
        return Group(Columns(tables), Text(breaker, style="bold yellow"))
    return Columns(tables)


def exit_code(result: Accounting) -> int:
    if result.interrupted:
        return 130
    return 0 if result.lost == 0 and result.completed else 1


def status_words(result: Accounting) -> str:
    if result.interrupted:
        return "interrupted"
    if result.completed:
        return "complete"
    return f"timed out (limit {result.timeout_seconds:.0f} s)"


def park_reasons(result: Accounting) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(result.parked_by_reason.items())) or "none"


def summary(result: DemoResult) -> str:
    """Where every message ended, and how often the consumer saw them."""
    first = result.deliveries_by_attempt.get(0, 0)
    later = ", ".join(f"{k}:{v}" for k, v in result.deliveries_by_attempt.items() if k > 0)
    backoffs = result.consumer_backoffs
    backed_off = f", {backoffs} backed off by the consumer" if backoffs else ""
    return (
        f"demo {status_words(result)} in {result.seconds} s: sent {result.sent}, "
        f"processed {result.processed}, parked {result.parked} ({park_reasons(result)}), "
        f"not yet done {result.not_yet_done}, lost {result.lost}\n"
        f"consumer deliveries by replay attempt: 0:{first} (first deliveries)"
        + (f", {later}" if later else "")
        + f"; {result.replays} replayed"
        + backed_off
        + f"\n{breaker_line(result)}"
    )


def breaker_line(result: DemoResult) -> str:
    if not result.breaker:
        return "outage breaker: off"
    if not result.breaker_openings:
        return "outage breaker: never opened"
    times = "once" if result.breaker_openings == 1 else f"{result.breaker_openings} times"
    line = f"outage breaker: opened {times}, open {result.breaker_open_seconds:g} s in all"
    if result.outage_seconds:
        return f"{line}, for the staged {result.outage_seconds:g} s outage"
    # No outage staged: opening held the replay back for nothing, which must not read as normal.
    return (
        f"{line}, with no outage staged (the consumer failed only some messages): a false "
        "alarm that held the replay back; --no-breaker runs without it"
    )
