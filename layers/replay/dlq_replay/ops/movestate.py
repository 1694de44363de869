"""What a client-side move knows at any moment (`ops.clientmove` does the moving): the messages
in hand and the counts, changed only under `lock`, and their snapshots (`RedriveTally`, and
`Leftover` for an abandoned run); and when the move is done (`MoverEnd`): once the source is
known empty, never while messages are merely in flight elsewhere or delayed.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

from dlq_replay.ops.pacing import FixedRate
from dlq_replay.ops.redrive import Leftover, RedriveRequest, RedriveTally, Stop
from dlq_replay.sqs.depth import queue_depth

Snapshot = TypeVar("Snapshot", RedriveTally, Leftover)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.ops.companion import Companion

# Between two looks while messages are only in flight elsewhere (or receives do not wait):
# from the first, doubling to the last.
FIRST_PAUSE_SECONDS = 0.05
LAST_PAUSE_SECONDS = 1.0


class MoverEnd:
    """One worker's end-of-source rule: an empty short poll asks only some of SQS's servers, so
    the counters decide; until they say empty, receive again (a long poll while messages are
    visible or delayed, after a growing pause while they are only in flight elsewhere)."""

    def __init__(self, move: MoveState) -> None:
        self._move = move
        self.wait_seconds = 0  # of the next receive
        self._pause = FIRST_PAUSE_SECONDS

    def flowing(self) -> None:
        """A receive brought messages: short polls again."""
        self.wait_seconds = 0
        self._pause = FIRST_PAUSE_SECONDS

    def done(self) -> bool:
        """After an empty receive: whether the source is empty but for what the run holds (the
        least it can have held while the counters were read, as other movers delete meanwhile)."""
        move = self._move
        held, dropped = move.held()
        depth = queue_depth(move.sqs, move.request.source.url)
        least = held - (move.held()[1] - dropped)
        if depth.visible + depth.delayed + max(0, depth.in_flight - least) == 0:
            return True
        if depth.visible + depth.delayed and move.request.wait_seconds:
            self.wait_seconds = move.request.wait_seconds  # SQS answers as one shows up
            return False
        # In flight elsewhere (or by this run, in a receive's answer not yet read): they can
        # only come back, so look again shortly, then less and less often.
        self.wait_seconds = 0
        move.stop.wait(self._pause)
        self._pause = min(LAST_PAUSE_SECONDS, self._pause * 2)
        return False


def combined(one: Snapshot, other: Snapshot) -> Snapshot:
    """Two moves' tallies (or leftovers) as one, a redrive's own and its second process's
    (`ops.companion`): counts added (per key too), the later of two times, flags and reasons
    of either, the first's error text for a code."""
    values: dict[str, Any] = {}
    for name in (f.name for f in fields(one)):
        mine: Any = getattr(one, name)
        theirs: Any = getattr(other, name)
        if name in ("hidden_until", "receiving_until"):
            values[name] = max((t for t in (mine, theirs) if t is not None), default=None)
        elif isinstance(mine, int) and not isinstance(mine, bool):
            values[name] = mine + theirs
        elif name == "errors":
            values[name] = {**theirs, **mine}
        elif isinstance(mine, Mapping):
            values[name] = {key: mine.get(key, 0) + theirs.get(key, 0) for key in {*mine, *theirs}}
        else:
            values[name] = mine or theirs
    return replace(one, **values)


class MoveState:
    """The state of one client-side move; snapshots of it go out as RedriveTally."""

    stop: threading.Event  # the mover's: the interrupt, the pace, the budget, an error

    def __init__(
        self,
        sqs: SQSClient,
        request: RedriveRequest,
        interrupt: threading.Event,
        pace: FixedRate,
        companion: Companion | None,
    ) -> None:
        self.sqs = sqs
        self.request = request
        self.interrupt = interrupt  # the caller's: a signal
        self.pace = pace
        self.companion = companion  # a second process of the move, and its counts
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.in_hand: dict[str, str] = {}  # message id -> receipt handle, not deleted yet
        self.hidden_until: dict[str, float] = {}  # message id -> end of its hide time
        self.dropped = 0  # messages deleted from in_hand (MoverEnd)
        self.moved = 0
        self.sent_not_deleted = 0
        self.given_back = 0
        self.in_flight = 0  # copies whose send or whose original's delete is in flight
        self.reserved = 0  # messages asked for by receives still in flight (for --limit)
        self.receives = self.receiving_up_to = 0  # ReceiveMessage calls in flight, and asked
        self.unsettled = 0  # received, neither sent, failed, skipped nor given back yet
        self.deleting = self.releasing = 0  # messages whose delete / release is in flight
        self.failures: Counter[str] = Counter()
        self.skips: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()  # target ARN -> records delivered
        self.errors: dict[str, str] = {}  # a failure's code -> its first message
        self.stopped: Stop | None = None
        self.not_released = 0
        self.released = False

    def tally(self) -> RedriveTally:
        """A snapshot, the second process's counts included (call it under the lock, or once
        the run has ended)."""
        own = RedriveTally(
            seen=len(self.seen),
            moved=self.moved,
            sent_not_deleted=self.sent_not_deleted,
            failed=sum(self.failures.values()),
            skipped=sum(self.skips.values()),
            given_back=self.given_back,
            unsettled=self.unsettled,
            dry_run=self.request.dry_run,
            failures=dict(self.failures),
            skips=dict(self.skips),
            stopped=self.stopped,
            interrupted=self.interrupt.is_set(),
            not_released=self.not_released,
            hidden_until=self._hidden_until() if self.not_released else None,
            pace=self.pace.report(),
            delivered=dict(self.delivered),
            errors=dict(self.errors),
        )
        other = self.companion.tally if self.companion is not None else None
        return own if other is None else combined(own, other)

    def _hidden_until(self) -> float | None:
        return max((self.hidden_until.get(m, 0.0) for m in self.in_hand), default=None)

    def leftover(self) -> Leftover:
        """What stays if the run is abandoned now (safe from any thread)."""
        return self.abandoned()[1]

    def abandoned(self) -> tuple[RedriveTally, Leftover]:
        """The tally and what stays hidden if the run is abandoned now, from one moment
        (safe from any thread)."""
        with self.lock:
            # A receive answered at the end of its long poll hides what it brings from then.
            answered_by = time.time() + self.request.wait_seconds + self.request.hide_seconds
            left = Leftover(
                hidden=self.not_released if self.released else len(self.in_hand),
                hidden_until=self._hidden_until(),
                sent_not_deleted=self.sent_not_deleted,
                unconfirmed=self.in_flight,
                receives=self.receives,
                receiving_up_to=self.receiving_up_to,
                receiving_until=answered_by if self.receives else None,
                deleting=self.deleting,
                releasing=self.releasing,
            )
            other = self.companion.leftover if self.companion is not None else None
            return self.tally(), left if other is None else combined(left, other)

    def held(self) -> tuple[int, int]:
        """The messages in hand, and how many it has deleted from them so far."""
        with self.lock:
            return len(self.in_hand), self.dropped
