"""The follow-up counts without a table: JSON Lines in `$XDG_STATE_HOME/dlq-replay/follow.jsonl`
beside the audit's local trail, appended with O_APPEND in one write each, never rewritten:

- `{"kind": "recovery", "queue", "hour", "counters": {...}}`: one invocation's tally;
- `{"kind": "started", "action_id", "window_seconds", "at", "command"}`, `{"kind": "sent",
  "action_id", "sent", "untracked", "at"}`, `{"kind": "finished", "action_id", "at"}`;
- `{"kind": "returned", "action_id", "keys": [...], "at"}`: keys new to the move;
- `{"kind": "notified", "action_id", "at"}`.

A move's returns are its distinct keys as read. Counting returns holds an exclusive `flock`
while it reads and appends, so processes decide each key's novelty and the notice in turn.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dlq_replay.follow.moves import (
    FollowThreshold,
    MoveFollow,
    ReturnNotice,
    check_counts,
    keys_by_action,
    moment,
    move_of,
    notice_after,
    whole,
)
from dlq_replay.follow.recovery import (
    RecoverySummary,
    RecoveryTally,
    hour_bucket,
    summarize,
)
from dlq_replay.follow.tag import FollowTag, valid_action_id

FILE_NAME = "follow.jsonl"


def default_follow_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "dlq-replay" / FILE_NAME


def _later(last: Any, at: float | None) -> float | None:
    last = moment(last)
    return last if at is None or (last is not None and last >= at) else at


def _fold(lines: Iterable[Mapping[str, Any]]) -> dict[str, tuple[dict[str, Any], set[str]]]:
    """Each move's lines as the table's summary item holds them, and its keys come back."""
    moves: dict[str, tuple[dict[str, Any], set[str]]] = {}
    for line in lines:
        action_id = line.get("action_id")
        if not isinstance(action_id, str) or not valid_action_id(action_id):
            continue
        summary, keys = moves.setdefault(action_id, ({}, set()))
        kind, at = line.get("kind"), moment(line.get("at"))
        if kind == "started":
            window, command = line.get("window_seconds"), line.get("command")
            summary.update(window_seconds=window, started_at=at, command=command)
        elif kind == "sent":
            for count in ("sent", "untracked"):
                summary[count] = whole(summary.get(count)) + whole(line.get(count))
            summary["last_sent_at"] = _later(summary.get("last_sent_at"), at)
        elif kind == "finished":
            summary["sent_at"] = at
        elif kind == "notified":
            summary["notified"] = at or 0.0  # a time, as the table's
        elif kind == "returned" and isinstance(line.get("keys"), list):
            keys.update(key for key in line["keys"] if isinstance(key, str))
            summary["last_return_at"] = _later(summary.get("last_return_at"), at)
    return moves


class FileFollowStore:
    """The replay's recovery counts and the moves followed, in the local file: appended to in
    single writes, read whole; a torn or foreign line is skipped."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        threshold: FollowThreshold | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.path = path or default_follow_path()
        self.where = str(self.path)
        self.threshold = threshold or FollowThreshold()
        self._now = now

    @contextmanager
    def _opened(self, *, lock: bool = False) -> Iterator[int]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            if lock:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield descriptor
        finally:
            os.close(descriptor)  # closing releases the lock

    def _append(self, lines: Iterable[Mapping[str, Any]], descriptor: int) -> None:
        text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
        size = os.fstat(descriptor).st_size
        if text and size and os.pread(descriptor, 1, size - 1) != b"\n":
            text = "\n" + text  # after a torn line (a writer that died): not glued to it
        # No fsync: the counts are to survive the process, not the machine.
        os.write(descriptor, text.encode())

    def append(self, line: Mapping[str, Any]) -> None:
        with self._opened() as descriptor:
            self._append([line], descriptor)

    def lines(self) -> Iterator[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return
        for line in text.splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("kind"), str):
                yield data

    def add(self, queue: str, tally: RecoveryTally, at: float) -> None:
        counters = tally.to_counters()
        if counters:
            line = {"kind": "recovery", "queue": queue, "hour": hour_bucket(at)}
            self.append(line | {"counters": counters})

    def window(
        self, queue: str, since: float, until: float, *, settled_before: float | None = None
    ) -> RecoverySummary:
        stored = (
            (line.get("hour"), line["counters"])
            for line in self.lines()
            if line["kind"] == "recovery"
            and line.get("queue") == queue
            and isinstance(line.get("counters"), dict)
        )
        return summarize(stored, since, until, settled_before)

    def _line(self, kind: str, action_id: str, **values: Any) -> None:
        if not valid_action_id(action_id):
            raise ValueError(f"not an action id: {action_id!r}")
        self.append({"kind": kind, "action_id": action_id, **values})

    def started(
        self, action_id: str, window_seconds: int, at: float, *, command: str | None = None
    ) -> None:
        window = max(0, int(window_seconds))
        self._line("started", action_id, window_seconds=window, at=at, command=command)

    def sent(self, action_id: str, sent: int, untracked: int) -> None:
        check_counts(sent, untracked)
        self._line("sent", action_id, sent=sent, untracked=untracked, at=self._now())

    def finished(self, action_id: str, at: float) -> None:
        self._line("finished", action_id, at=at)

    def returns(self, tags: Iterable[FollowTag], at: float) -> list[ReturnNotice]:
        by_action = keys_by_action(tags)
        if not by_action:
            return []
        notices: list[ReturnNotice] = []
        with self._opened(lock=True) as descriptor:
            moves = _fold(self.lines())
            lines: list[dict[str, Any]] = []
            for action_id, keys in sorted(by_action.items()):
                summary, known = moves.get(action_id, ({}, set()))
                new = sorted(keys - known)
                if not new:
                    continue
                line = {"kind": "returned", "action_id": action_id, "keys": new, "at": at}
                lines.append(line)
                before = move_of(action_id, summary, len(known))
                notice = notice_after(before, len(known) + len(new), self.threshold, at)
                if notice is not None:
                    lines.append({"kind": "notified", "action_id": action_id, "at": at})
                    notices.append(notice)
            self._append(lines, descriptor)
        return notices

    def follow(self, action_id: str) -> MoveFollow | None:
        return self.follows([action_id]).get(action_id)

    def follows(self, action_ids: Iterable[str]) -> dict[str, MoveFollow]:
        wanted = set(action_ids)
        lines = (line for line in self.lines() if line.get("action_id") in wanted)
        moves = _fold(lines).items()
        return {action_id: move_of(action_id, s, len(keys)) for action_id, (s, keys) in moves}
