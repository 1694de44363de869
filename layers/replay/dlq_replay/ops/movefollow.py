"""An operator move (`redrive`, `import`) followed from the sending side: each copy gets the
move's tag where a slot is free, and the follow record its start and settle window, its counts
(at most once every `FLUSH_SECONDS`, and at the end, also of a stopped move) and its end. A
failed write never stops the move: the first problem is kept for the command to say.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from dlq_replay.core.attributes import Attribute, string
from dlq_replay.core.decision import with_room
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.follow.moves import FollowStore, settle_window
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE, follow_value
from dlq_replay.ops.queueinfo import QueueInfo, queue_info

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.targets.delivery import Delivery

FLUSH_SECONDS = 5.0
# How long a run abandoned on a second signal gives its follow record's end.
FOLLOW_END_SECONDS = 1.0


def tag_carried(
    body: str, carried: Mapping[str, Attribute], action_id: str, key: str
) -> dict[str, Attribute]:
    """The copy's attributes with the move's tag (replacing an older one) where a slot is free
    after every carried one; a key a tag cannot carry leaves the copy untagged."""
    kept = {name: value for name, value in carried.items() if name != FOLLOW_ATTRIBUTE}
    try:
        tag = string(follow_value(action_id, key))
    except ValueError:
        return kept
    return with_room(body, kept, [(FOLLOW_ATTRIBUTE, tag)])


def window_of(queue: QueueInfo) -> int:
    """The settle window of copies sent to `queue` (its DelaySeconds is the longest delay)."""
    policy = queue.redrive
    return settle_window(
        policy.max_receive_count if policy else None, queue.visibility_timeout, queue.delay_seconds
    )


def action_line(action_id: str, followed: bool | None) -> str:
    """The line a command prints of its action: followed, not (a native move), or not a move
    (`followed` None)."""
    if followed is None:
        return f"action {action_id}"
    if followed:
        return f"followed as action {action_id}: dlq-replay audit --follow {action_id}"
    return (
        f"action {action_id} is not followed: SQS's own move task cannot carry its id "
        "(to follow the copies, redrive with --client-side)"
    )


class MoveFollower:
    """The follow record of one move, written as it goes (`store` None: only counted, as a
    second process's, whose counts its parent writes); thread-safe."""

    def __init__(
        self,
        store: FollowStore | None,
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
        self.window_seconds = max(self._windows.values(), default=0)
        self._lock = threading.Lock()
        self._pending = (0, 0)  # (sent, untracked) not written yet
        self._started_at: float | None = None
        self._flushed_at = 0.0
        self._finished = False

    def start(self) -> None:
        """The move's start and window (once)."""
        if self._started_at is not None:
            return
        at = self._started_at = self._flushed_at = self._clock()
        window = self.window_seconds
        self._write(lambda store: store.started(self.action_id, window, at, command=self.command))

    def count(self, copies: Iterable[OutboundMessage | Delivery]) -> None:
        """Copies confirmed: those with this move's tag are sent, the others untracked."""
        tagged = [_is_tagged(copy, self.action_id) for copy in copies]
        self.add(sum(tagged), len(tagged) - sum(tagged))

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
        self._write(lambda store: store.finished(self.action_id, self._clock()))

    def finish_within(self, seconds: float, destinations: Iterable[str | None] = ()) -> None:
        """`finish` on a process about to exit: given up after `seconds`."""
        worker = threading.Thread(
            target=self.finish, args=(list(destinations),), name="follow-end", daemon=True
        )
        worker.start()
        worker.join(seconds)

    def _send(self, counts: tuple[int, int]) -> None:
        sent, untracked = counts
        if not sent and not untracked:
            return
        if not self._write(lambda store: store.sent(self.action_id, sent, untracked)):
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
        if wider > self.window_seconds:
            self.window_seconds = wider
            at = self._started_at or self._clock()
            self._write(
                lambda store: store.started(self.action_id, wider, at, command=self.command)
            )

    def _write(self, write: Callable[[FollowStore], None]) -> bool:
        if self.store is None:
            return True
        try:
            write(self.store)
        except Exception as error:  # the move goes on; the command says it once
            self._failed(error)
            return False
        return True

    def _failed(self, error: Exception) -> None:
        with self._lock:
            if self.problem is None:
                self.problem = f"not all of it was recorded: {_one_line(error)}"


def _is_tagged(copy: OutboundMessage | Delivery, action_id: str) -> bool:
    """(A delivery to a serverless target is no SQS copy: never tagged.)"""
    value = copy.attributes.get(FOLLOW_ATTRIBUTE) if isinstance(copy, OutboundMessage) else None
    return value is not None and (value.string_value or "").startswith(f"{action_id}/")


def _one_line(error: Exception) -> str:
    """`Code: message` of a service's refusal, else the error's type and text, on one line."""
    response = getattr(error, "response", None)
    found = response.get("Error", {}) if isinstance(response, dict) else {}
    if isinstance(found, dict) and found.get("Code"):
        text = f"{found['Code']}: {found.get('Message', '')}"
    else:
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())
