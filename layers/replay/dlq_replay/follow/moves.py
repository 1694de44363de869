"""Operator moves (`redrive`, `import`) followed to their end: copies sent, copies come back,
when it settled, the notice. Pure: the model and what both stores (table, file) share.

A move settles `window_seconds` after the end of its sending or its last return, whichever is
later. A move whose end was never written (its process was killed) settles from its last write
of counts instead, with a window of at least `UNFINISHED_SECONDS`: a running move writes its
counts every few seconds, so a quarter of an hour without one means nothing is sending.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from dlq_replay.follow.recovery import iso_time
from dlq_replay.follow.tag import FollowTag

if TYPE_CHECKING:
    from dlq_replay.follow.journal import FileFollowStore
    from dlq_replay.follow.tables import DynamoFollowStore

# Where a move's and the replay's counts are kept: the stack's table, else this machine's file.
FollowStore: TypeAlias = "DynamoFollowStore | FileFollowStore"

# How long the table keeps a move's counts and keys.
FOLLOW_KEEP_SECONDS = 90 * 24 * 3600
UNFINISHED_SECONDS = 15 * 60
_PERCENT = re.compile(r"[0-9]{1,3}")
# The consumer's next poll and the replay's pick-up from the DLQ: a long poll's longest wait.
SETTLE_MARGIN_SECONDS = 20


def settle_window(
    max_receive_count: int | None, visibility_timeout: int, longest_delay: int
) -> int:
    """Seconds with no new return before a move settles: `maxReceiveCount` + 1 visibility
    timeouts (SQS moves a failed copy to the DLQ at the receive after the last), the longest
    delay, and the margin. Without a redrive policy one receive is allowed."""
    for name, value in (("visibility timeout", visibility_timeout), ("delay", longest_delay)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number of seconds, 0 or more: {value!r}")
    receives = 1 if max_receive_count is None else max_receive_count
    if isinstance(receives, bool) or not isinstance(receives, int) or receives < 1:
        raise ValueError(f"maxReceiveCount must be 1 or more: {max_receive_count!r}")
    return (receives + 1) * visibility_timeout + longest_delay + SETTLE_MARGIN_SECONDS


class MoveFollow(NamedTuple):
    """One move: `untracked` copies had no free slot for the tag; `returned` counts distinct
    keys; `sent_at` is the end of sending (None: not written)."""

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
        """When the move settles if no other copy comes back; None with no time of sending."""
        if self.sent_at is not None:
            return max(self.sent_at, self.last_return_at or 0.0) + self.window_seconds
        sending = [at for at in (self.started_at, self.last_sent_at) if at is not None]
        if not sending:
            return None
        last = max(*sending, self.last_return_at or 0.0)
        return last + max(self.window_seconds, UNFINISHED_SECONDS)

    def settled_at(self, now: float) -> float | None:
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
    """`the fix did not hold: 120 of 1,000 redriven at 14:02 came back (action ID)` (`tz`
    None: UTC)."""
    done = _DONE.get(notice.command or "", "moved")
    when = ""
    if notice.started_at is not None:
        when = " at " + datetime.fromtimestamp(notice.started_at, tz or UTC).strftime("%H:%M")
    return (
        f"the fix did not hold: {notice.returned:,} of {notice.sent:,} {done}{when} came back"
        f" (action {notice.action_id})"
    )


class FollowThreshold(NamedTuple):
    """When returns call for a notice: at least `minimum`, and at least `share` of what was
    sent (rounded up)."""

    share: float = 0.10
    minimum: int = 5

    def needed(self, sent: int) -> int:
        """In integers: 10 % of 1,000 is 100, not 101."""
        basis = round(self.share * 10_000)
        return max(self.minimum, -(-sent * basis // 10_000))

    def passed(self, returned: int, sent: int) -> bool:
        return returned >= self.needed(sent)

    @classmethod
    def from_percent(cls, text: str, *, minimum: int = 5) -> FollowThreshold:
        """From a whole number 1-100; ValueError with a one-line reason for anything else."""
        cleaned = text.strip() if isinstance(text, str) else ""
        if not _PERCENT.fullmatch(cleaned) or not 1 <= int(cleaned) <= 100:
            raise ValueError(f"a follow notice percent is a whole number from 1 to 100: {text!r}")
        return cls(share=int(cleaned) / 100, minimum=minimum)


def owes_notice(before: MoveFollow, returned: int, threshold: FollowThreshold, at: float) -> bool:
    """Whether returns counted at `at`, bringing the move to `returned`, owe its notice: seen
    starting (so `sent` is known), past the threshold, not told yet, not settled before."""
    if before.started_at is None or before.notified or before.sent <= 0:
        return False
    return before.settled_at(at) is None and threshold.passed(returned, before.sent)


def notice_after(
    before: MoveFollow, returned: int, threshold: FollowThreshold, at: float
) -> ReturnNotice | None:
    if not owes_notice(before, returned, threshold, at):
        return None
    return ReturnNotice(before.action_id, returned, before.sent, before.started_at, before.command)


def keys_by_action(tags: Iterable[FollowTag]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for tag in tags:
        found.setdefault(tag.action_id, set()).add(tag.key)
    return found


def check_counts(sent: int, untracked: int) -> None:
    if sent < 0 or untracked < 0:
        raise ValueError(f"counts are 0 or more: sent {sent}, untracked {untracked}")


def whole(value: Any) -> int:
    """A stored count (JSON number or Decimal); 0 for anything but a whole number >= 0."""
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


def move_of(action_id: str, summary: Mapping[str, Any], returned: int) -> MoveFollow:
    """A move from its summary's stored fields (the table's item, the file's lines folded)."""
    command = summary.get("command")
    return MoveFollow(
        action_id=action_id,
        sent=whole(summary.get("sent")),
        untracked=whole(summary.get("untracked")),
        window_seconds=whole(summary.get("window_seconds")),
        sent_at=moment(summary.get("sent_at")),
        returned=returned,
        last_return_at=moment(summary.get("last_return_at")),
        notified=moment(summary.get("notified")) is not None,
        started_at=moment(summary.get("started_at")),
        command=command if isinstance(command, str) else None,
        last_sent_at=moment(summary.get("last_sent_at")),
    )
