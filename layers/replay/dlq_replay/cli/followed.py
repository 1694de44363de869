"""What was followed, for people (CLI and console alike): the audit's `followed` column and
object, `audit --follow`'s wait for a move to settle, and the replay's recovery of the last day.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dlq_replay.follow.moves import FollowStore, MoveFollow
from dlq_replay.follow.recovery import HOUR, RecoverySummary

if TYPE_CHECKING:
    from dlq_replay.audit.model import AuditAction
    from dlq_replay.audit.store import AuditStore

MOVE_COMMANDS = frozenset({"redrive", "import"})
NOT_FOLLOWED = "not followed"
RECOVERY_HOURS = 24
STOPPED = 130  # `audit --follow` stopped before the move settled (any signal)


def is_move(action: AuditAction) -> bool:
    return action.record.command in MOVE_COMMANDS


def follows_of(store: FollowStore, actions: Iterable[AuditAction]) -> dict[str, MoveFollow]:
    """The follow records of the moves among `actions`, in one read."""
    ids = [action.record.action_id for action in actions if is_move(action)]
    return store.follows(ids) if ids else {}


def clock_text(at: float, now: float) -> str:
    """`14:32` (UTC) on the day of `now`, else `2026-12-05 14:32`."""
    moment = datetime.fromtimestamp(at, UTC)
    if moment.date() == datetime.fromtimestamp(now, UTC).date():
        return moment.strftime("%H:%M")
    return moment.strftime("%Y-%m-%d %H:%M")


def followed_text(move: MoveFollow | None, now: float) -> str:
    """The audit's `followed` cell: `sent 1,000 · returned 120 · untracked 0 · settled 14:32`
    (or `settling until 14:32`, or `sending` while its end is not written)."""
    if move is None:
        return NOT_FOLLOWED
    head = f"sent {move.sent:,} · returned {move.returned:,} · untracked {move.untracked:,}"
    settled = move.settled_at(now)
    if settled is not None:
        return f"{head} · settled {clock_text(settled, now)}"
    until = move.settles_at()
    if until is None or move.sent_at is None:
        return f"{head} · sending"
    return f"{head} · settling until {clock_text(until, now)}"


def followed_cells(
    actions: Iterable[AuditAction], follows: Mapping[str, MoveFollow], now: float
) -> dict[str, str]:
    """The moves' `followed` cells by action id (the CLI's table and the console's page)."""
    return {
        action.record.action_id: followed_text(follows.get(action.record.action_id), now)
        for action in actions
        if is_move(action)
    }


def none_followed_text(moves: int) -> str:
    listed = "the move listed" if moves == 1 else f"the {moves:,} moves listed"
    return (
        f"followed: {NOT_FOLLOWED}, {listed} (SQS's own move task cannot carry the action's "
        "id; a move recorded before following existed has none either)"
    )


def followed_json(
    action: AuditAction, follows: dict[str, MoveFollow], now: float
) -> dict[str, Any]:
    """`action.to_json()` with, for a move, its `followed` object (null: not followed)."""
    if not is_move(action):
        return action.to_json()
    move = follows.get(action.record.action_id)
    return action.to_json(followed=None if move is None else move.to_json(now))


def last_day(store: FollowStore, queue: str, now: float) -> RecoverySummary:
    return store.window(queue, now - RECOVERY_HOURS * HOUR, now)


def recovery_bars(summary: RecoverySummary) -> list[tuple[str, int]]:
    """The chart's bars: per attempt sent, came back, recovered, parked; then parked at once."""
    attempts = summary.to_json()["attempts"]
    bars: list[tuple[str, int]] = []
    for row in attempts:
        n = row["attempt"]
        if n < 1:
            continue
        bars += [
            (f"replay {n}: sent", row["sent"]),
            (f"replay {n}: came back", row["returned"]),
            (f"replay {n}: recovered", row["recovered"]),
            (f"replay {n}: parked", row["parked"]),
        ]
    at_once = summary.parked.get(0, 0)
    if at_once:
        bars.append(("parked before a replay", at_once))
    return bars


def exit_code(move: MoveFollow, settled_at: float | None) -> int:
    """How `audit --follow` ends: stopped (`settled_at` None), settled with returns, without."""
    if settled_at is None:
        return STOPPED
    return 1 if move.returned else 0


def progress_lines(before: MoveFollow, after: MoveFollow) -> list[str]:
    """What changed between two reads of a move."""
    lines: list[str] = []
    if after.sent_at is not None and before.sent_at is None:
        lines.append(f"sending ended: {after.sent:,} sent, {after.untracked:,} untracked")
    if after.returned > before.returned:
        added = after.returned - before.returned
        lines.append(f"+{added:,} returned ({after.returned:,} of {after.sent:,})")
    return lines


def end_line(move: MoveFollow, settled: float | None, now: float) -> str:
    back = f"{move.returned:,} of {move.sent:,}" if move.returned else f"none of {move.sent:,}"
    if settled is None:
        return f"stopped before it settled: {back} came back so far"
    return f"settled at {clock_text(settled, now)}: {back} came back"


class MoveWatch:
    """`audit --follow`: reads the move every `poll_seconds` (or at its settle time, if sooner)
    and says each change until it settles. `last` is the latest read, for a caller that stops."""

    def __init__(
        self,
        read: Callable[[], MoveFollow | None],
        first: MoveFollow,
        *,
        say: Callable[[str], None],
        poll_seconds: float,
        now: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._read, self._say, self._poll = read, say, poll_seconds
        self._now, self._sleep = now, sleep
        self._problem: str | None = None
        self.last = first

    def _latest(self) -> MoveFollow:
        """A fresh read; the last one while the store does not answer (said once a reason)."""
        try:
            found = self._read()
        except Exception as error:
            reason = " ".join(f"{type(error).__name__}: {error}".split())[:300]
            if reason != self._problem:
                self._problem = reason
                self._say(f"read failed ({reason}); trying again")
            return self.last
        self._problem = None
        return found or self.last

    def run(self) -> float:
        """When the move settled."""
        while True:
            at = self._now()
            settled = self.last.settled_at(at)
            if settled is not None:
                return settled
            until = self.last.settles_at()
            pause = self._poll if until is None else min(self._poll, max(until - at, 0.0) + 0.01)
            self._sleep(pause)
            latest = self._latest()
            for line in progress_lines(self.last, latest):
                self._say(line)
            self.last = latest


def start_line(move: MoveFollow, now: float) -> str:
    what = f" ({move.command})" if move.command else ""
    return f"following action {move.action_id}{what}: {followed_text(move, now)} (UTC)"


def recovery_report(store: AuditStore, queue: str | None, now: float) -> dict[str, Any]:
    """`status`'s `recovery` of the DLQ `queue` over the last day, from where the trail is, with
    the line `status` prints as `text` (a failed read too)."""
    if queue is None:
        text = "replay recovery: no DLQ known (pass --stack NAME or --dlq-url)"
        return {"queue": None, "where": None, "shared": False, "text": text, "error": None}
    recoveries = store.follow_store()
    where, shared = recoveries.where, store.shared
    found: dict[str, Any] = {"queue": queue, "where": where, "shared": shared, "error": None}
    local = "" if shared else f" (from {where}, this machine only: pass --stack NAME)"
    try:
        summary = last_day(recoveries, queue, now)
    except Exception as error:  # status reads on: the line says why
        reason = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        text = f"replay recovery of {queue}: not read from {where} ({reason})"
        return found | {"text": text, "error": reason}
    return (
        found | summary.to_json() | {"text": f"replay recovery of {queue}{local}: {summary.text()}"}
    )
