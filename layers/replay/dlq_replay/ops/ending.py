"""When a client-side move is done: as soon as the source is known empty, and never while
messages are merely in flight elsewhere or delayed.

A mover's receives are short polls (no wait) while the source hands out messages, so none
sits in a long poll once the source runs dry. A receive that brings nothing is not yet the end
(a short poll asks only some of SQS's servers; a message may be delayed or held by another
consumer): the mover then reads the source's counters and stops only when nothing is visible,
nothing delayed, and nothing in flight but what this run holds itself. Otherwise it receives
again: with a long poll (`--wait-seconds`) while messages are visible or delayed, after a
short pause (growing to a second) while they are only in flight elsewhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlq_replay.sqs.depth import queue_depth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# Between two looks while messages are only in flight elsewhere (or receives do not wait):
# from the first, doubling to the last.
FIRST_PAUSE_SECONDS = 0.05
LAST_PAUSE_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Held:
    """What a run holds: messages received and not deleted, and running totals of the
    messages it received and of those it deleted, to bound how `held` moved meanwhile."""

    held: int
    taken: int
    dropped: int


class SourceEnd:
    """The end-of-source rule of one run; each mover follows it with its own `MoverEnd`."""

    def __init__(
        self,
        sqs: SQSClient,
        url: str,
        wait_seconds: int,
        stop: threading.Event,
        held: Callable[[], Held],
    ) -> None:
        self.sqs = sqs
        self.url = url
        self.wait_seconds = wait_seconds
        self.stop = stop
        self.held = held

    def mover(self) -> MoverEnd:
        return MoverEnd(self)


class MoverEnd:
    """One mover's side: the wait of its next receive, and whether it is done."""

    def __init__(self, rule: SourceEnd) -> None:
        self._rule = rule
        self.wait_seconds = 0  # of the next receive
        self._pause = FIRST_PAUSE_SECONDS

    def flowing(self) -> None:
        """A receive brought messages: short polls again."""
        self.wait_seconds = 0
        self._pause = FIRST_PAUSE_SECONDS

    def done(self) -> bool:
        """After a receive that brought nothing: whether the source is empty but for what the
        run holds. If not, the next receive is set up (and a pause taken) as the module says.

        The counters are read while other movers receive and delete, so what the run held at
        that moment lies between what it held before, minus what it deleted meanwhile, and
        what it held before plus what it received meanwhile; the source counts as empty only
        with the smaller of the two."""
        rule = self._rule
        before = rule.held()
        depth = queue_depth(rule.sqs, rule.url)
        after = rule.held()
        least = before.held - (after.dropped - before.dropped)
        if depth.visible + depth.delayed + max(0, depth.in_flight - least) == 0:
            return True
        if depth.visible + depth.delayed and rule.wait_seconds:
            self.wait_seconds = rule.wait_seconds  # SQS answers as soon as one shows up
            return False
        # In flight elsewhere (or by this run, in a receive's answer not yet read): they can
        # only come back, so look again shortly, then less and less often.
        self.wait_seconds = 0
        rule.stop.wait(self._pause)
        self._pause = min(LAST_PAUSE_SECONDS, self._pause * 2)
        return False
