"""Operator moves followed to their end: how many copies a move (`redrive`, `import`) sent,
how many came back to a DLQ the replay watches, and when it settled. Pure: the model, the
settle rule, the notice's threshold and text, what a store of them answers, and the counting
both stores (the table's and the file's) share.

The settle rule: a move settles `window_seconds` after the end of its sending or its last
return, whichever is later. A move whose end was never written (its process was killed, or a
second Ctrl-C gave the write its 1 s and it did not make it) settles from its last write of
sending instead (its start, or a batch's counts: each keeps its time), with a window of at
least `UNFINISHED_SECONDS`: a move still running writes its counts every few seconds while
copies go out, so a quarter of an hour without one means nothing is sending any more.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from typing import Any, NamedTuple, Protocol

from dlq_replay.follow.recovery import iso_time
from dlq_replay.follow.tag import FollowTag

# How long the table keeps a move's counts and keys (the audit keeps the move itself).
FOLLOW_KEEP_SECONDS = 90 * 24 * 3600
# The least window of a move whose end was never written (see the module's docstring).
UNFINISHED_SECONDS = 15 * 60
_PERCENT = re.compile(r"[0-9]{1,3}")
# The consumer's receive that moves a failed copy to the DLQ, and the replay's receive of it
# there, come moments after it is ready while their pollers run: a long poll's longest wait.
SETTLE_MARGIN_SECONDS = 20


def settle_window(
    max_receive_count: int | None, visibility_timeout: int, longest_delay: int
) -> int:
    """Seconds a move waits with no new return before it settles: the destination's
    `maxReceiveCount` + 1 visibility timeouts (every receive of a copy the consumer fails ends
    at that timeout, and SQS moves it to the DLQ only at the receive after the last one) plus
    the longest delay a copy was sent with, plus `SETTLE_MARGIN_SECONDS` for the consumer's
    next poll and the replay's pick-up from the DLQ. A destination without a redrive policy
    sends nothing back by itself: one receive is allowed. It does not include a backlog ahead
    of the copies on the destination (an operator who knows of one waits longer)."""
    for name, value in (("visibility timeout", visibility_timeout), ("delay", longest_delay)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number of seconds, 0 or more: {value!r}")
    receives = 1 if max_receive_count is None else max_receive_count
    if isinstance(receives, bool) or not isinstance(receives, int) or receives < 1:
        raise ValueError(f"maxReceiveCount must be 1 or more: {max_receive_count!r}")
    return (receives + 1) * visibility_timeout + longest_delay + SETTLE_MARGIN_SECONDS


class MoveFollow(NamedTuple):
    """One move as followed: `sent` copies carried the tag, `untracked` had no free slot,
    `returned` distinct moved messages came back; `sent_at` is when the sending ended (None:
    not written), `last_sent_at` the time of its last write of counts."""

    action_id: str
    sent: int = 0
    untracked: int = 0
    window_seconds: int = 0
    sent_at: float | None = None
    returned: int = 0
    last_return_at: float | None = None
    notified: bool = False
    started_at: float | None = None
    command: str | None = None
    last_sent_at: float | None = None

    def settles_at(self) -> float | None:
        """When the move settles if no other copy comes back (the module's rule); None for a
        move with no time of sending at all."""
        if self.sent_at is not None:
            return max(self.sent_at, self.last_return_at or 0.0) + self.window_seconds
        sending = [at for at in (self.started_at, self.last_sent_at) if at is not None]
        if not sending:
            return None
        last = max(*sending, self.last_return_at or 0.0)
        return last + max(self.window_seconds, UNFINISHED_SECONDS)

    def settled_at(self, now: float) -> float | None:
        """When the move settled, once `now` is past it; None before."""
        settled = self.settles_at()
        return settled if settled is not None and now >= settled else None

    def to_json(self, now: float) -> dict[str, int | str | None]:
        """The audit's `followed` object."""
        settled = self.settled_at(now)
        return {
            "sent": self.sent,
            "returned": self.returned,
            "untracked": self.untracked,
            "settled_at": None if settled is None else iso_time(settled),
        }


class ReturnNotice(NamedTuple):
    """A move whose returns passed the threshold before it settled: published once."""

    action_id: str
    returned: int
    sent: int
    started_at: float | None
    command: str | None = None


_DONE = {"redrive": "redriven", "import": "imported"}


def notice_text(notice: ReturnNotice, tz: tzinfo | None) -> str:
    """`the fix did not hold: 120 of 1,000 redriven at 14:02 came back (action ID)`: the time
    the move started in `tz` (None: UTC), the command's past participle where known."""
    done = _DONE.get(notice.command or "", "moved")
    when = ""
    if notice.started_at is not None:
        when = " at " + datetime.fromtimestamp(notice.started_at, tz or UTC).strftime("%H:%M")
    return (
        f"the fix did not hold: {notice.returned:,} of {notice.sent:,} {done}{when} came back"
        f" (action {notice.action_id})"
    )


class _Threshold(NamedTuple):
    share: float
    minimum: int


class FollowThreshold(_Threshold):
    """When returns call for a notice: at least `minimum`, and at least `share` of what was
    sent (rounded up)."""

    __slots__ = ()

    def __new__(cls, share: float = 0.10, minimum: int = 5) -> FollowThreshold:
        if not 0 < share <= 1:
            raise ValueError(f"the share must be above 0 and at most 1: {share!r}")
        if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
            raise ValueError(f"the minimum must be 1 or more: {minimum!r}")
        return super().__new__(cls, share, minimum)

    def needed(self, sent: int) -> int:
        """Returns that call for the notice after `sent` copies (integer arithmetic: 10 % of
        1,000 is 100, not 101)."""
        basis = round(self.share * 10_000)
        return max(self.minimum, -(-sent * basis // 10_000))

    def passed(self, returned: int, sent: int) -> bool:
        return returned >= self.needed(sent)

    @classmethod
    def from_percent(cls, text: str, *, minimum: int = 5) -> FollowThreshold:
        """From `FOLLOW_NOTICE_PERCENT` or the CLI's option: a whole number 1-100; ValueError
        with a one-line reason for anything else."""
        cleaned = text.strip() if isinstance(text, str) else ""
        if not _PERCENT.fullmatch(cleaned) or not 1 <= int(cleaned) <= 100:
            raise ValueError(f"a follow notice percent is a whole number from 1 to 100: {text!r}")
        return cls(share=int(cleaned) / 100, minimum=minimum)


def owes_notice(before: MoveFollow, returned: int, threshold: FollowThreshold, at: float) -> bool:
    """Whether a store that just counted returns at `at`, bringing the move from `before` to
    `returned`, owes the move its notice: started where the store saw it (so `sent` is known;
    returns for a move never seen starting are counted, never noticed), past the threshold,
    not told yet, and not settled before these returns (a late return reopens a settled move
    without a notice: the fix held for its window)."""
    if before.started_at is None or before.notified or before.sent <= 0:
        return False
    return before.settled_at(at) is None and threshold.passed(returned, before.sent)


def notice_after(
    before: MoveFollow, returned: int, threshold: FollowThreshold, at: float
) -> ReturnNotice | None:
    """The notice `owes_notice` says is owed, else None."""
    if not owes_notice(before, returned, threshold, at):
        return None
    return ReturnNotice(before.action_id, returned, before.sent, before.started_at, before.command)


def keys_by_action(tags: Iterable[FollowTag]) -> dict[str, set[str]]:
    """Returned copies as each move's distinct keys (a batch may hold one key twice)."""
    found: dict[str, set[str]] = {}
    for tag in tags:
        found.setdefault(tag.action_id, set()).add(tag.key)
    return found


def check_counts(sent: int, untracked: int) -> None:
    """ValueError for a negative count (a store adds them up)."""
    if sent < 0 or untracked < 0:
        raise ValueError(f"counts are 0 or more: sent {sent}, untracked {untracked}")


def whole(value: Any) -> int:
    """A stored count (a JSON number or DynamoDB's Decimal), 0 for anything that is not a whole
    number of 0 or more: what a store reads was written by anybody."""
    if isinstance(value, Decimal) and value.is_finite() and value >= 0:
        return int(value) if value == value.to_integral_value() else 0
    return value if type(value) is int and value >= 0 else 0


def moment(value: Any) -> float | None:
    """A stored time in epoch seconds, None for anything that is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError):  # a huge int, a signalling NaN
        return None
    return number if math.isfinite(number) else None


class FollowStore(Protocol):
    """Where moves' counts are kept. Every method may be called from several processes at
    once (the redrive's batches, the Lambda's concurrent invocations)."""

    def started(
        self, action_id: str, window_seconds: int, at: float, *, command: str | None = None
    ) -> None:
        """A move began (its window known from its destination)."""
        ...

    def sent(self, action_id: str, sent: int, untracked: int) -> None:
        """One batch of the move sent: `sent` tagged copies, `untracked` without a free slot."""
        ...

    def finished(self, action_id: str, at: float) -> None:
        """The move's sending ended: its window runs from here."""
        ...

    def returns(self, tags: Iterable[FollowTag], at: float) -> list[ReturnNotice]:
        """Count returned copies, each (action, key) once ever; the notices this call, and no
        other, must publish."""
        ...

    def follow(self, action_id: str) -> MoveFollow | None:
        """The move as followed, or None when nothing of it was recorded."""
        ...

    def follows(self, action_ids: Iterable[str]) -> dict[str, MoveFollow]:
        """Several moves at once (the audit's list); unknown ids are left out."""
        ...
