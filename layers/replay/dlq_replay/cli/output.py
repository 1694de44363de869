"""How the commands print: rich tables and progress bars on a terminal, JSON with --json."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from dlq_replay.audit import Action
    from dlq_replay.cli.shutdown import Shutdown
    from dlq_replay.ops.export import ExportLeftover
    from dlq_replay.ops.movefollow import MoveFollower
    from dlq_replay.ops.queueinfo import QueueInfo
    from dlq_replay.ops.redrive import Leftover

T = TypeVar("T")

# A row of a tally: (label, count); a Mapping after a row breaks it down by code, indented.
TallyRow = tuple[str, int] | Mapping[str, int]


def make_console(*, stderr: bool = False) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # Not a terminal: wide enough that tables keep whole queue names (scripts use --json).
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 160
    return Console(file=stream, markup=False, highlight=False, emoji=False, width=width)


def destination_name(queue: QueueInfo | None) -> str:
    """The name of where messages go: one queue, or each message's own source queue."""
    return queue.name if queue is not None else "their source queues"


def count_table(heading: str, rows: Sequence[TallyRow]) -> Table:
    """The two-column tally the moving commands print (redrive, export, import)."""
    from rich.table import Table

    table = Table()
    table.add_column(heading)
    table.add_column("count", justify="right")
    for row in rows:
        items = [row] if isinstance(row, tuple) else [(f"  {k}", v) for k, v in sorted(row.items())]
        for label, count in items:
            table.add_row(label, str(count))
    return table


def note(text: str) -> None:
    print(f"dlq-replay: {text}", file=sys.stderr)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=_json_default))


def report_tally(
    args: argparse.Namespace,
    action: Action,
    tally: Mapping[str, Any],
    human: Callable[[], None],
    *,
    followed: bool | None = None,
    **more: Any,
) -> None:
    """A run's tally, final or so far: to its audit, then on stdout (JSON with `more`, else
    `human()`), with a recorded action's id (`audit --follow` takes it)."""
    action.tally(tally)
    said = {"action_id": action.action_id} if action.recorded else {}
    if getattr(args, "json", False):
        print_json({**tally, **said, **more})
        return
    human()
    if said:
        from dlq_replay.ops.movefollow import action_line

        print(action_line(action.action_id, followed), flush=True)


@dataclass(frozen=True)
class TallyReport(Generic[T]):
    """How a moving command (redrive, export, import, delete) runs and says its tally, whole or
    so far: `json(tally)` with --json, else `human(tally)`; a move's follower ends with it."""

    args: argparse.Namespace
    action: Action
    shutdown: Shutdown
    json: Callable[[T], Mapping[str, Any]]
    human: Callable[[T], None]
    follower: MoveFollower | None = None

    def __call__(self, tally: T, **more: Any) -> None:
        followed = self.follower is not None or None
        human = partial(self.human, tally)
        report_tally(self.args, self.action, self.json(tally), human, followed=followed, **more)

    def run(
        self,
        job: Callable[[Callable[[T], None]], T],
        bar: tuple[str, int, Callable[[T], int]],
        now: Callable[[], tuple[T, Leftover | ExportLeftover | None]],
        left: Callable[[], str],
        *,
        grows: bool = False,
        sent_to: Mapping[str, str | None] | None = None,
    ) -> T:
        """`job(show)` under the shutdown, its bar (what, total, the count of a tally) at least
        the count when it `grows`. Abandoned: `left()` says what is left, and the tally `now()`
        is said with it (and what stays hidden), the follower given what time allows to end."""

        def report(why: str) -> None:
            tally, leftover = now()
            if self.follower is not None:  # what was sent is followed, as far as time allows
                from dlq_replay.ops.movefollow import FOLLOW_END_SECONDS

                self.follower.finish_within(FOLLOW_END_SECONDS, (sent_to or {}).values())
            more: dict[str, Any] = {"abandoned": why}
            if leftover is not None:
                more["left"] = {**asdict(leftover), "hidden_at_most": leftover.at_most}
            self(tally, **more)

        what, total, count = bar
        with progress_bars(self.args) as progress:
            task = progress.add_task(what, total=total or None)

            def show(tally: T) -> None:
                done = count(tally)
                grown = max(total, done) or None if grows else None
                progress.update(task, completed=done, total=grown)

            return self.shutdown.run(lambda: job(show), left, report, lambda: self.json(now()[0]))


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, frozenset | set | tuple):
        return sorted(value) if isinstance(value, frozenset | set) else list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class Bars(Protocol):
    """The part of rich's Progress the moving commands use."""

    def add_task(self, description: str, *, total: float | None = ...) -> Any: ...

    def update(
        self, task_id: Any, *, total: float | None = ..., completed: float | None = ...
    ) -> None: ...


class _NoBars:
    """Progress bars that draw nothing, without importing rich."""

    def add_task(self, *args: Any, **kwargs: Any) -> Any:
        return 0

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


# What makes rich draw on a stream that is not a terminal; where none is set, rich would not.
_RICH_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@contextmanager
def progress_bars(args: argparse.Namespace) -> Iterator[Bars]:
    """rich's bars on stderr when it is a terminal. Otherwise (--json, a pipe, a file) none,
    and rich is not imported for them: 40 ms before a script's first receive."""
    undrawn = not sys.stderr.isatty() and not any(
        name in os.environ for name in _RICH_TERMINAL_VARIABLES
    )
    if getattr(args, "json", False) or undrawn:
        yield _NoBars()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = make_console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    ) as progress:
        yield progress


def duration(seconds: float) -> str:
    """A human duration with at most two units: 0s, 45s, 1m 30s, 2h 5m, 1d 3h."""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    units = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))
    parts: list[str] = []
    for name, size in units:
        amount, total = divmod(total, size)
        if amount or parts:
            parts.append(f"{amount}{name}")
        if len(parts) == 2:
            break
    while parts and parts[-1].startswith("0"):
        parts.pop()
    return " ".join(parts)


def plural(count: int, noun: str) -> str:
    """`1 message`, `2 messages`: the count with its noun (nouns that take an s)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
