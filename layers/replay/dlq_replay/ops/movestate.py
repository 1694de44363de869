"""What a client-side move knows at any moment (`ops.clientmove` does the moving): the
messages in hand and the counts, changed only under `lock`, and the snapshots of them that go
out while it runs or once it ended (`RedriveTally`, and `Leftover` for an abandoned run)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from dlq_replay.ops.ending import Held
from dlq_replay.ops.pacing import Pace
from dlq_replay.ops.redrive import Leftover, RedriveRequest, RedriveTally, Stop


class MoveState:
    """The state of one client-side move; snapshots of it go out as RedriveTally."""

    def __init__(
        self,
        request: RedriveRequest,
        *,
        interrupt: threading.Event,
        wall: Callable[[], float],
        pace: Pace,
    ) -> None:
        self.request = request
        self.lock = threading.Lock()
        self.interrupt = interrupt  # the caller's: a signal
        self.wall = wall
        self.pace = pace
        self.seen: set[str] = set()
        self.in_hand: dict[str, str] = {}  # message id -> receipt handle, not deleted yet
        self.hidden_until: dict[str, float] = {}  # message id -> end of its hide time
        self.taken = self.dropped = 0  # messages received, and deleted from in_hand (SourceEnd)
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
        """A snapshot (call it under the lock, or once the run has ended)."""
        return RedriveTally(
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

    def _hidden_until(self) -> float | None:
        ends = [self.hidden_until.get(m, 0.0) for m in self.in_hand]
        return max(ends) if ends else None

    def leftover(self) -> Leftover:
        """What stays if the run is abandoned now (safe from any thread)."""
        return self.abandoned()[1]

    def abandoned(self) -> tuple[RedriveTally, Leftover]:
        """The tally and what stays hidden if the run is abandoned now, from one moment
        (safe from any thread)."""
        with self.lock:
            # A receive answered at the end of its long poll hides what it brings from then.
            answered_by = self.wall() + self.request.wait_seconds + self.request.hide_seconds
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
            return self.tally(), left

    def held(self) -> Held:
        with self.lock:
            return Held(len(self.in_hand), self.taken, self.dropped)
