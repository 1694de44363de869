"""An operator move (`redrive`, `import`, CLI or console) followed from the sending side: each
copy gets the move's tag where a slot is free, and the move's follow record gets its start
(with the settle window of where the copies went), its counts, aggregated, and its end.

The counts are written at most once every `FLUSH_SECONDS` while the copies go out, and once
more at the end, also when the move was stopped (what was sent is followed). A write that
fails never stops the move: the copies already carry their tag, so their returns are still
counted; the first problem is kept for the command to say in one line.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from dlq_replay.core.attributes import Attribute, string
from dlq_replay.core.decision import with_room
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.follow.moves import FollowStore, settle_window
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE, follow_value
from dlq_replay.ops.queueinfo import QueueInfo, queue_info

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.targets.delivery import Delivery

# The longest a move's counts wait in memory before they are written.
FLUSH_SECONDS = 5.0
# How long a run abandoned on a second signal gives its follow record's end before it exits.
FOLLOW_END_SECONDS = 1.0


def tag_carried(
    body: str, carried: Mapping[str, Attribute], action_id: str, key: str
) -> dict[str, Attribute]:
    """The attributes a copy carries, with the move's tag where a slot is free (after every
    carried attribute: never refused, never clamped). An older move's tag is replaced; a key
    a tag cannot carry leaves the copy untagged."""
    kept = {name: value for name, value in carried.items() if name != FOLLOW_ATTRIBUTE}
    try:
        tag = string(follow_value(action_id, key))
    except ValueError:
        return kept
    return with_room(body, kept, [(FOLLOW_ATTRIBUTE, tag)])


def is_tracked(copy: OutboundMessage | Delivery, action_id: str) -> bool:
    """Whether a copy carries this move's tag (a delivery to a serverless target never does:
    it is no SQS copy)."""
    if not isinstance(copy, OutboundMessage):
        return False
    value = copy.attributes.get(FOLLOW_ATTRIBUTE)
    # `tag_carried` wrote it (checked there), so its prefix names the move.
    text = value.string_value if value is not None else None
    return text is not None and text.startswith(f"{action_id}/")


def window_of(queue: QueueInfo) -> int:
    """The settle window of copies sent to `queue` (sent with no delay of their own: the
    queue's DelaySeconds is the longest delay)."""
    policy = queue.redrive
    return settle_window(
        policy.max_receive_count if policy else None, queue.visibility_timeout, queue.delay_seconds
    )


class _Trail(Protocol):
    """Where an audit trail is kept (audit/store.py's stores, which ops/ does not import)."""

    def follow_store(self) -> FollowStore: ...


class Audited(Protocol):
    """What the follower reads of an audited action (audit/recorder.py's `Action`)."""

    @property
    def recorded(self) -> bool: ...

    @property
    def action_id(self) -> str: ...

    @property
    def store(self) -> _Trail | None: ...


def follower_of(
    action: Audited,
    command: str,
    sqs: SQSClient,
    destinations: Sequence[QueueInfo | None] = (),
) -> MoveFollower | None:
    """The follower of an audited move, its record beside the action's trail (the trail's
    table, or a file beside its file); None for one not recorded (a dry run) or whose trail
    is not open yet (call it after `action.gate`).
    `destinations`: the queues known to receive the copies (None: each one's source queue,
    learnt as the move goes)."""
    if not action.recorded or action.store is None:
        return None
    known = [queue for queue in destinations if queue is not None]
    store = action.store.follow_store()
    return MoveFollower(store, action.action_id, command, sqs=sqs, destinations=known)


def action_line(action_id: str, followed: bool | None) -> str:
    """The one line a command prints of its action: followed (how to follow it), not
    followed (a native move), or not a move (purge, delete, pause)."""
    if followed is None:
        return f"action {action_id}"
    if followed:
        return f"followed as action {action_id}: dlq-replay audit --follow {action_id}"
    return (
        f"action {action_id} is not followed: SQS's own move task cannot carry its id "
        "(to follow the copies, redrive with --client-side)"
    )


class MoveFollower:
    """The follow record of one move, written as it goes. `count` may be called from several
    threads at once (the redrive's workers)."""

    def __init__(
        self,
        store: FollowStore,
        action_id: str,
        command: str,
        *,
        sqs: SQSClient | None = None,
        destinations: Sequence[QueueInfo] = (),
        clock: Callable[[], float] = time.time,
        flush_seconds: float = FLUSH_SECONDS,
    ) -> None:
        self.store = store
        self.action_id = action_id
        self.command = command
        self.problem: str | None = None  # the first write that failed, in one line
        self.sent = self.untracked = 0  # every copy counted so far
        self._sqs = sqs
        self._clock = clock
        self._flush_seconds = flush_seconds
        self._windows = {queue.url: window_of(queue) for queue in destinations}
        self._window = max(self._windows.values(), default=0)
        self._lock = threading.Lock()
        self._pending = (0, 0)  # (sent, untracked) not written yet
        self._started_at: float | None = None
        self._flushed_at = 0.0
        self._finished = False

    @property
    def window_seconds(self) -> int:
        return self._window

    def start(self) -> None:
        """The move begins: its start and window (once)."""
        if self._started_at is not None:
            return
        self._started_at = self._clock()
        self._flushed_at = self._started_at
        self._write(
            lambda: self.store.started(
                self.action_id, self._window, self._started_at or 0.0, command=self.command
            )
        )

    def count(self, copies: Iterable[OutboundMessage | Delivery]) -> None:
        """Copies SQS (or the target) confirmed: tagged ones are sent, others untracked."""
        sent = untracked = 0
        for copy in copies:
            if is_tracked(copy, self.action_id):
                sent += 1
            else:
                untracked += 1
        self.add(sent, untracked)

    def add(self, sent: int, untracked: int) -> None:
        """Copies counted elsewhere (a second process of the move: `ops.companion`)."""
        if not sent and not untracked:
            return
        with self._lock:
            self.sent += sent
            self.untracked += untracked
            pending = (self._pending[0] + sent, self._pending[1] + untracked)
            now = self._clock()
            if now - self._flushed_at < self._flush_seconds:
                self._pending = pending
                return
            self._pending, self._flushed_at = (0, 0), now
        self._send(pending)

    def finish(self, destinations: Iterable[str | None] = ()) -> None:
        """The sending ended (done, stopped or failed): the rest of the counts, a wider window
        if the copies went to queues not known at the start (`--to source`), then the end."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            pending, self._pending = self._pending, (0, 0)
        self.start()
        self._send(pending)
        self._widen(destinations)
        self._write(lambda: self.store.finished(self.action_id, self._clock()))

    def finish_within(self, seconds: float, destinations: Iterable[str | None] = ()) -> None:
        """`finish` on a process about to exit (an abandoned run): given up after `seconds`."""
        worker = threading.Thread(
            target=self.finish, args=(list(destinations),), name="follow-end", daemon=True
        )
        worker.start()
        worker.join(seconds)

    def _send(self, counts: tuple[int, int]) -> None:
        sent, untracked = counts
        if not sent and not untracked:
            return

        def write() -> None:
            self.store.sent(self.action_id, sent, untracked)

        if not self._write(write):
            with self._lock:  # kept for the next write, the last one at the end
                self._pending = (self._pending[0] + sent, self._pending[1] + untracked)

    def _widen(self, destinations: Iterable[str | None]) -> None:
        unknown = sorted({url for url in destinations if url and url not in self._windows})
        if not unknown or self._sqs is None:
            return
        for url in unknown:
            try:
                self._windows[url] = window_of(queue_info(self._sqs, url))
            except Exception as error:  # the window stays what it was; said once
                self._failed(error)
        wider = max(self._windows.values(), default=0)
        if wider > self._window:
            self._window = wider
            at = self._started_at or self._clock()
            self._write(lambda: self.store.started(self.action_id, wider, at, command=self.command))

    def _write(self, write: Callable[[], None]) -> bool:
        try:
            write()
        except Exception as error:  # the move goes on; the command says it once
            self._failed(error)
            return False
        return True

    def _failed(self, error: Exception) -> None:
        with self._lock:
            if self.problem is None:
                self.problem = f"not all of it was recorded: {_one_line(error)}"


def _one_line(error: Exception) -> str:
    """`Code: message` of a service's refusal, else the error's type and text, on one line."""
    response = getattr(error, "response", None)
    found = response.get("Error", {}) if isinstance(response, dict) else {}
    if isinstance(found, dict) and found.get("Code"):
        text = f"{found['Code']}: {found.get('Message', '')}"
    else:
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())
