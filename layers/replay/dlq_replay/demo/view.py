"""What the demo shows: the live tables while it runs and the summary line at the end."""

from __future__ import annotations

import time
from typing import Any

from dlq_replay.demo.scenario import DemoOptions, DemoResult, Tally
from dlq_replay.ops.depth import QueueDepth


def render(tally: Tally, started: float) -> Any:
    from rich.columns import Columns
    from rich.table import Table

    with tally.lock:
        queues = Table(title="queues", title_justify="left")
        for column in ("queue", "visible", "in flight", "delayed"):
            queues.add_column(column, justify="right" if column != "queue" else "left")
        for name in ("main", "dlq", "operator"):
            depth = tally.depths.get(name, QueueDepth(0, 0, 0))
            queues.add_row(name, str(depth.visible), str(depth.in_flight), str(depth.delayed))
        deliveries = Table(title="consumer deliveries by replay attempt", title_justify="left")
        deliveries.add_column("attempt", justify="right")
        deliveries.add_column("deliveries", justify="right")
        for attempt, count in sorted(tally.deliveries_by_attempt.items()):
            deliveries.add_row(str(attempt), str(count))
        outcomes = Table(
            title=f"outcomes ({time.monotonic() - started:.0f} s)", title_justify="left"
        )
        outcomes.add_column("what")
        outcomes.add_column("count", justify="right")
        outcomes.add_row("sent", str(len(tally.expected)))
        outcomes.add_row("processed", str(len(tally.processed)))
        for reason, count in sorted(tally.parked_by_reason.items()):
            outcomes.add_row(f"parked: {reason}", str(count))
        for what, count in sorted(tally.replay_outcomes.items()):
            outcomes.add_row(f"replay {what}", str(count))
    return Columns([queues, deliveries, outcomes])


def print_summary(result: DemoResult, options: DemoOptions) -> None:
    reasons = ", ".join(f"{k}={v}" for k, v in sorted(result.parked_by_reason.items())) or "none"
    attempts = ", ".join(f"{k}:{v}" for k, v in result.deliveries_by_attempt.items())
    if result.interrupted:
        status = "interrupted"
    elif result.completed:
        status = "complete"
    else:
        status = f"timed out after {options.timeout_seconds:.0f} s"
    # An interrupted run leaves messages in the queues: not done yet, not lost.
    missing = "not yet done" if result.interrupted else "lost"
    print(
        f"\ndemo {status} in {result.seconds} s: sent {result.sent}, processed {result.processed}, "
        f"parked {result.parked} ({reasons}), {missing} {result.lost}\n"
        f"consumer deliveries by replay attempt: {attempts}"
    )
