"""What reads (console snapshots, `peek`, `export`) saw of a queue's receive counts, kept across
reads and processes. A read cannot see a count without receiving, so the next one would receive
a message blind again and the one after that would move it on: a read is refused while a
remembered message would keep fewer than `reserve` receives after one more. Counts only rise:
a lower bound refuses a read too early, never lets one move a message. Per queue one small
JSON file, replaced atomically under a lock file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.receiving import ReceiveBudget, Sighting

try:  # POSIX: one process at a time changes a queue's file
    import fcntl
except ImportError:  # pragma: no cover - Windows: the rename alone keeps the file whole
    fcntl = None  # type: ignore[assignment]

FORMAT = "dlq-replay-receives/1"
MAX_IDS = 1000  # ids kept per queue, the highest counts; the others fold into `counts`


class ReadRefusedError(OpsError):
    """A read that could move a message on (the receives it keeps are too few)."""


def state_folder() -> Path:
    """`$XDG_STATE_HOME/dlq-replay/receives` (XDG's place for state: `~/.local/state`)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "dlq-replay" / "receives"


@dataclass(slots=True)
class Remembered:
    """One queue's memory: per id (count, last seen), and per other count (id, last seen)."""

    ids: dict[str, tuple[int, float]]
    counts: dict[int, tuple[str, float]]


class ReceiveMemory:
    """The receive counts reads saw, per queue, in files under `folder`."""

    def __init__(self, folder: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.folder = folder
        self.clock = clock

    @classmethod
    def local(cls) -> ReceiveMemory:
        return cls(state_folder())

    def path(self, queue: QueueInfo) -> Path:
        digest = hashlib.sha256(queue.arn.encode()).hexdigest()[:24]
        return self.folder / f"{digest}.json"

    def load(self, queue: QueueInfo) -> Remembered:
        """What is remembered of `queue`, without what its retention period has removed;
        ReadRefusedError when the file is not a memory of it (nothing can be known then)."""
        path = self.path(queue)
        try:
            text = path.read_text("utf-8")
        except FileNotFoundError:
            return Remembered({}, {})
        except (OSError, UnicodeDecodeError) as error:
            raise self._unreadable(path, str(error)) from None
        try:
            found = parse(text, queue.arn)
        except ValueError as error:
            raise self._unreadable(path, str(error)) from None
        oldest = self.clock() - queue.retention_seconds
        return Remembered(
            {k: v for k, v in found.ids.items() if v[1] >= oldest},
            {k: v for k, v in found.counts.items() if v[1] >= oldest},
        )

    def refusal(
        self, queue: QueueInfo, budget: ReceiveBudget, taken: frozenset[str] = frozenset()
    ) -> str | None:
        """The line refusing a read of `queue` now, or None when every remembered message
        (but those in `taken`) keeps `budget.reserve` receives after one more."""
        memory = self.load(queue)
        found = [(c, m) for m, (c, _) in memory.ids.items() if m not in taken]
        found += [(c, m) for c, (m, _) in memory.counts.items() if m not in taken]
        count, message_id = max(found, default=(0, ""))
        if not found or not budget.stop_after(count):
            return None
        left = budget.left(count)
        if not message_id.isprintable():  # the file is anyone's: a newline in an id split the line
            message_id = repr(message_id)
        return (
            f"{queue.name}: message {message_id} has {left} receive{'' if left == 1 else 's'} "
            f"left of maxReceiveCount {budget.max_receive_count} (it moves to "
            f"{budget.target_name} on the receive after that); a read now could move it. "
            "Redrive or export --delete it (that receive is kept for it), or raise the queue's "
            "maxReceiveCount."
        )

    def check(
        self,
        queue: QueueInfo,
        budget: ReceiveBudget,
        *,
        takes_all: bool = False,
        taken: frozenset[str] = frozenset(),
    ) -> None:
        """`refusal`'s line as ReadRefusedError: refused when a remembered message's next receive
        would itself move it on (SQS would move it instead of handing it over); unless the read
        takes every message it receives (a move, a delete), those it gives back (all but
        `taken`, whose receive is their move) keep `budget.reserve`."""
        refused = self.refusal(queue, replace(budget, reserve=0))
        if refused is None and not takes_all:
            refused = self.refusal(queue, budget, taken)
        if refused is not None:
            raise ReadRefusedError(refused)

    def record(self, queue: QueueInfo, sighting: Sighting) -> None:
        """Add what one run saw (and forget what it deleted). An unreadable file is left as it
        is: reads stay refused until it is deleted."""
        if not (sighting.near or sighting.counts or sighting.removed):
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(queue)
        with path.with_suffix(".lock").open("a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            try:
                memory = self.load(queue)
            except ReadRefusedError:
                return
            now = self.clock()
            for message_id, count in sighting.near.items():
                earlier = memory.ids.get(message_id, (0, now))[0]
                memory.ids[message_id] = (max(count, earlier), now)
            for count, message_id in sighting.counts.items():
                memory.counts[count] = (message_id, now)
            for message_id in sighting.removed:
                memory.ids.pop(message_id, None)
            _write(path, dumps(queue.arn, _bounded(memory)))

    def forget(self, queue: QueueInfo, message_ids: Iterable[str]) -> None:
        """Messages a delete of ours removed from `queue`."""
        self.record(queue, Sighting(removed=set(message_ids)))

    def _unreadable(self, path: Path, why: str) -> ReadRefusedError:
        return ReadRefusedError(
            f"{path} is not a receive memory ({why}); delete it to read again (what earlier "
            "reads saw of the queue's receive counts is then forgotten)"
        )


def _bounded(memory: Remembered) -> Remembered:
    """At most MAX_IDS ids, the highest counts: the others keep only their count."""
    if len(memory.ids) <= MAX_IDS:
        return memory
    ranked = sorted(memory.ids.items(), key=lambda item: item[1][0], reverse=True)
    counts = dict(memory.counts)
    for message_id, (count, seen) in ranked[MAX_IDS:]:
        if seen >= counts.get(count, ("", 0.0))[1]:
            counts[count] = (message_id, seen)
    return Remembered(dict(ranked[:MAX_IDS]), counts)


def dumps(arn: str, memory: Remembered) -> str:
    return json.dumps(
        {
            "format": FORMAT,
            "queue": arn,
            "ids": {k: [count, round(seen, 3)] for k, (count, seen) in memory.ids.items()},
            "counts": {str(c): [k, round(seen, 3)] for c, (k, seen) in memory.counts.items()},
        },
        separators=(",", ":"),
    )


def parse(text: str, arn: str) -> Remembered:
    """A memory file's text; ValueError (saying what is wrong) when it is not one of `arn`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} object")
    if data.get("queue") != arn:
        raise ValueError(f"it names another queue, {str(data.get('queue'))[:80]!r}")
    ids, counts = data.get("ids"), data.get("counts")
    if not isinstance(ids, dict) or not isinstance(counts, dict):
        raise ValueError("ids and counts must be objects")
    return Remembered(
        {str(k): _entry(v, int) for k, v in ids.items()},
        {_count(k): _entry(v, str) for k, v in counts.items()},
    )


def _entry(value: Any, first: type[Any]) -> tuple[Any, float]:
    if not (isinstance(value, list) and len(value) == 2):
        raise ValueError("an entry is not a [value, time] pair")
    head, seen = value
    if isinstance(head, bool) or not isinstance(head, first) or isinstance(seen, bool):
        raise ValueError(f"an entry holds {json.dumps(head)[:40]}, not a {first.__name__}")
    if not isinstance(seen, int | float) or seen != seen:  # noqa: PLR0124 - NaN
        raise ValueError("an entry's time is not a number")
    if first is int and head < 0:
        raise ValueError("a receive count is negative")
    try:
        return head, float(seen)
    except OverflowError:
        raise ValueError("an entry's time is out of range") from None


def _count(key: str) -> int:
    if not (key.isascii() and key.isdigit()):
        raise ValueError(f"a count key {key[:20]!r} is not a count")
    return int(key)


def _write(path: Path, text: str) -> None:
    """Replace `path` with `text` at once: a reader sees the old file or the new one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".receives-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
