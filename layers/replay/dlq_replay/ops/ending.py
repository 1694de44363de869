"""When a client-side move is done: as soon as the source is known empty, and never while
messages are merely in flight elsewhere or delayed.

A mover's receives are short polls (no wait) while the source hands out messages, so none
sits in a long poll once the source runs dry. A receive that brings nothing is not yet the end
(a short poll asks only some of SQS's servers; a message may be delayed or held by another
consumer): the mover then reads the source's counters, and stops only when nothing is visible,
nothing delayed, and nothing in flight but what this run holds itself. Otherwise its next
receive is a long poll (`--wait-seconds`), and it looks again after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlq_replay.ops.depth import queue_depth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# Between two looks at the counters when receives do not wait (--wait-seconds 0).
PAUSE_SECONDS = 0.5
# Looks at the counters in a row while the run's own receives and deletes blur them.
UNSURE_LOOKS = 5


@dataclass(frozen=True, slots=True)
class Held:
    """What a run holds: messages received and not deleted, and running totals of the
    messages it received and of those it deleted, to bound how `held` moved meanwhile."""

    held: int
    taken: int
    dropped: int


class SourceEnd:
    """The end-of-source rule of one run, shared by its movers."""

    def __init__(self, sqs: SQSClient, url: str, wait_seconds: int, stop: threading.Event) -> None:
        self._sqs = sqs
        self._url = url
        self._wait_seconds = wait_seconds
        self._stop = stop

    def wait_seconds(self, long_poll: bool) -> int:
        return self._wait_seconds if long_poll else 0

    def pending(self, held: Callable[[], Held]) -> int:
        """Messages of the source a receive may still bring: visible, delayed, or in flight
        beyond what this run holds (received, not deleted). 0: the source is empty but for
        what the run holds, and the mover may stop.

        The counters are read while other movers receive and delete, so what the run held at
        that moment is only known to lie between its holding before minus what it deleted
        meanwhile and its holding before plus what it received meanwhile; the source is
        empty only when it is empty for both, and a look is taken again while the two
        disagree."""
        for _ in range(UNSURE_LOOKS):
            before = held()
            depth = queue_depth(self._sqs, self._url)
            after = held()
            most = before.held + after.taken - before.taken
            least = before.held - (after.dropped - before.dropped)
            surely = depth.visible + depth.delayed + max(0, depth.in_flight - most)
            maybe = depth.visible + depth.delayed + max(0, depth.in_flight - least)
            if maybe == 0 or surely > 0:
                break
        if maybe and not self._wait_seconds:
            self._stop.wait(PAUSE_SECONDS)  # no long poll to wait in: do not spin
        return maybe
