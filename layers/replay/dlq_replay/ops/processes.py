"""A client-side move split over two processes: this one and a second one forked from it, each
with its own SQS client and half the batches in flight.

Why: a move is bound by the CPU its SQS calls cost in botocore (signing, serialising, parsing),
and one Python process computes on one core at a time. SQS hands each message to one receiver,
so two processes can receive from the same source as 16 threads of one do; each deletes exactly
the originals whose copy it sent, and each waits, before it ends, while the other still holds
messages (`ops.ending`). The tallies add up across both.

The second process is forked (a copy of this one, ready in milliseconds, where a new
interpreter would import boto3 again): only on Linux and only while this process runs one
thread, the one case where a fork copies no lock another thread holds. It ignores SIGINT,
SIGTERM and SIGHUP (a terminal's Ctrl-C reaches both) and takes its orders over a pipe from
this process, which keeps the shutdown rules of one process (`cli.shutdown`):
- `run` lets it start; a stop of this run (the caller's stop token, the receive budget, an
  error) stops it too, and a stop or an error of it stops this one;
- `abandoned` (the command exits at once) ends it where it stands, after it has sent what it
  holds and has in flight at that moment, counted as this process counts its own;
- if this process dies, the second one sees its pipe close and stops as after a signal; if
  the second dies, this one moves on (what it held comes back after its hide time) and
  `run` ends with an OpsError.

Not split: a paced move (--rate, --until-failing) and a --limit share one budget across the
batches; a copy (--keep) or a dry run holds every message it saw until the end, and a process
does not know what the other saw.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from dlq_replay.ops.clientmove import ClientMove, prepare
from dlq_replay.ops.errors import OpsError
from dlq_replay.ops.receiving import ReceiveBudget, usable_budget
from dlq_replay.ops.redrive import Leftover, RedriveRequest, RedriveTally
from dlq_replay.sqs.sending import MAX_BATCH_ENTRIES

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.targets.deliverer import Deliverer

# Below this many messages one process: the move takes a few tenths of a second of CPU.
SPLIT_FROM_MESSAGES = 200
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# How long an abandoning command waits for the second process to say what it holds.
ABANDON_ANSWER_SECONDS = 1.0

# The orders (this process to the second) and the reports (back).
GO, STOP, ABANDON = "go", "stop", "abandon"
PROGRESS, DONE, FAILED, ABANDONED = "progress", "done", "failed", "abandoned"

Snapshot = tuple[RedriveTally, Leftover]


def why_not_split(request: RedriveRequest) -> str | None:
    """Why this move cannot be split over two processes; None when it can."""
    if sys.platform != "linux":
        return "a second process is forked on Linux only"
    if threading.active_count() != 1:
        return "a fork needs a process running one thread"
    if request.concurrency < 2:
        return "--concurrency 1 leaves no batch for a second process"
    shared = [
        flag
        for flag, on in (
            ("--rate", request.rate is not None),
            ("--until-failing", request.until_failing is not None),
            ("--limit", request.limit is not None),
            ("--keep", request.keep),
            ("--dry-run", request.dry_run),
            ("--target-arn", bool(request.target_arns)),
        )
        if on
    ]
    if shared:
        return f"{', '.join(shared)}: one process keeps the whole count"
    return None


def prepare_move(
    sqs: SQSClient,
    make_sqs: Callable[[], SQSClient],
    request: RedriveRequest,
    *,
    processes: int | None,
    approximate: int,
    stop: threading.Event,
    deliverer: Deliverer | None = None,
) -> tuple[ClientMove | SplitMove, str | None]:
    """The move in two processes when asked (`processes`) or, unasked, from
    SPLIT_FROM_MESSAGES messages on (`approximate`), if it can be split; else in one, with why
    when two were asked for. A move that delivers to targets (`deliverer`) is never split."""
    wanted = processes or (2 if approximate >= SPLIT_FROM_MESSAGES else 1)
    why_not = why_not_split(request) if wanted == 2 else None
    if wanted == 2 and why_not is None:
        return split_move(sqs, make_sqs, request, stop=stop), None
    return prepare(sqs, request, stop=stop, deliverer=deliverer), why_not if processes else None


def split_move(
    sqs: SQSClient,
    make_sqs: Callable[[], SQSClient],
    request: RedriveRequest,
    *,
    stop: threading.Event,
) -> SplitMove:
    """The move, checked and split (call `why_not_split` first): half of the batches in flight
    here, half in a second process forked now, which waits for `run`. `make_sqs` makes the
    second process's own client (a client's connections are not shared across a fork)."""
    budget = usable_budget(sqs, request.source, request.reserve)
    here = request.concurrency - request.concurrency // 2
    local = ClientMove(
        sqs,
        replace(request, concurrency=here),
        budget,
        clock=time.monotonic,
        sleep=None,
        stop=stop,
    )
    other = replace(request, concurrency=request.concurrency // 2)
    ours, theirs = multiprocessing.Pipe()
    context = multiprocessing.get_context("fork")
    second = context.Process(
        target=_second_process,
        args=(theirs, make_sqs, other, budget),
        name="redrive-second",
        daemon=True,
    )
    # Blocked across the fork: a signal in between would raise in the child before it ignores
    # them, and is delivered to this process once unblocked.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        second.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    theirs.close()
    return SplitMove(local, second, ours, other.concurrency)


class SplitMove:
    """Both halves of a split move, seen as one (`ClientMove`'s run, abandoned, leftover)."""

    def __init__(
        self,
        local: ClientMove,
        second: Any,  # multiprocessing's fork Process (untyped in typeshed's context API)
        conn: Connection,
        second_concurrency: int,
    ) -> None:
        self.local = local
        self.second = second
        self.conn = conn
        self.second_concurrency = second_concurrency
        self.lock = threading.Lock()  # guards the reports and the pipe's sending end
        self.local_tally = RedriveTally(dry_run=local.request.dry_run)
        self.reported: Snapshot = (RedriveTally(), Leftover(0, None, 0, 0))
        self.stop_acknowledged = False  # the second process's reports come after its stop
        self.final: RedriveTally | None = None
        self.failure: BaseException | None = None
        self.frozen = False  # the second process ended where it stood (abandoned)
        self.reports_over = threading.Event()

    def run(self, on_progress: Callable[[RedriveTally], None] | None) -> RedriveTally:
        def local_progress(tally: RedriveTally) -> None:
            with self.lock:
                self.local_tally = tally
                merged_tally = merged(tally, self.reported[0])
            if on_progress is not None:
                on_progress(merged_tally)

        reader = threading.Thread(target=self._read, args=(on_progress,), name="redrive-reports")
        reader.start()
        forwarder = threading.Thread(target=self._forward_stop, name="redrive-stop-2", daemon=True)
        forwarder.start()
        self._order(GO)
        try:
            tally = self.local.run(local_progress)
        except BaseException:
            self._order(STOP)
            raise
        finally:
            if self.local.stopped is not None or self.local.interrupt.is_set():
                self._order(STOP)
            reader.join()
            self.second.join()
        if self.failure is not None:
            raise self.failure
        if self.final is None:
            raise OpsError(
                f"the second process ended early (exit code {self.second.exitcode}): what it held "
                "comes back by itself after --hide-seconds; rerun to move it"
            )
        return merged(tally, self.final)

    def _forward_stop(self) -> None:
        """The caller's stop token (a signal) stops the second process too."""
        while not self.reports_over.is_set():
            if self.local.interrupt.wait(0.2):
                self._order(STOP)
                return

    def _order(self, order: str) -> None:
        with self.lock:
            if not self.reports_over.is_set():
                with contextlib.suppress(OSError):  # it has ended already
                    self.conn.send(order)

    def _read(self, on_progress: Callable[[RedriveTally], None] | None) -> None:
        """The second process's reports, until its last (or its end)."""
        try:
            for kind, payload in _received(self.conn):
                with self.lock:
                    if kind == FAILED:
                        self.failure = payload
                    elif kind == DONE:
                        self.final = payload
                    else:
                        self.reported = payload
                        self.stop_acknowledged |= payload[0].interrupted
                    merged_tally = merged(self.local_tally, self.reported[0])
                if kind == FAILED or (kind == DONE and payload.stopped is not None):
                    self.local.stop.set()  # its error or budget stops this half too
                if kind in (DONE, FAILED, ABANDONED):
                    return
                if on_progress is not None:
                    on_progress(merged_tally)
        finally:
            self.reports_over.set()

    def leftover(self) -> Leftover:
        return self.abandoned()[1]

    def abandoned(self) -> Snapshot:
        """The tally and what stays hidden if the command exits now, both processes counted:
        the second process is ended where it stands, after it said what it holds."""
        if not self.frozen:
            self.frozen = True
            self._order(ABANDON)
            self.reports_over.wait(ABANDON_ANSWER_SECONDS)
            self.second.kill()
        tally, left = self.local.abandoned()
        with self.lock:
            other_tally, other_left = self._second_snapshot()
        return merged(tally, other_tally), merged_leftover(left, other_left)

    def _second_snapshot(self) -> Snapshot:
        """What the second process last said it holds (under the lock); when it said so before
        it saw the stop, each of its movers may have begun one more receive since."""
        tally, left = self.reported
        if self.final is not None:
            return self.final, Leftover(self.final.not_released, self.final.hidden_until, 0, 0)
        if self.stop_acknowledged:
            return tally, left
        more = self.second_concurrency
        until = time.time() + self.local.request.wait_seconds + self.local.request.hide_seconds
        return tally, replace(
            left,
            receives=left.receives + more,
            receiving_up_to=left.receiving_up_to + more * MAX_BATCH_ENTRIES,
            receiving_until=max(left.receiving_until or 0.0, until),
        )


def _received(conn: Connection) -> Iterator[Any]:
    """What the other process sends, until it ends."""
    while True:
        try:
            yield conn.recv()
        except (EOFError, OSError):
            return


def _second_process(
    conn: Connection,
    make_sqs: Callable[[], SQSClient],
    request: RedriveRequest,
    budget: ReceiveBudget | None,
) -> None:
    """The forked half: its own client and movers, driven by the first process's orders."""
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    send_lock = threading.Lock()
    stop = threading.Event()

    def send(kind: str, payload: Any) -> None:
        with send_lock:
            try:
                conn.send((kind, payload))
            except OSError:  # the first process is gone: stop as after a signal
                stop.set()

    try:
        move = ClientMove(make_sqs(), request, budget, clock=time.monotonic, sleep=None, stop=stop)
        if not _wait_for_go(conn):
            return
        threading.Thread(target=_obey, args=(conn, move, send), daemon=True).start()
        tally = move.run(lambda _: send(PROGRESS, move.abandoned()))
    except Exception as error:
        try:
            send(FAILED, error)
        except Exception:  # an error that does not pickle: its words
            send(FAILED, OpsError(f"the second process: {type(error).__name__}: {error}"))
        return
    send(DONE, tally)


def _wait_for_go(conn: Connection) -> bool:
    try:
        return bool(conn.recv() == GO)
    except (EOFError, OSError):
        return False


def _obey(conn: Connection, move: ClientMove, send: Callable[[str, Any], None]) -> None:
    """The first process's orders; its end (the pipe closes) counts as a stop."""
    for order in _received(conn):
        if order == ABANDON:
            send(ABANDONED, move.abandoned())
            os._exit(0)  # where it stands, as the first process is about to
        move.interrupt.set()
        send(PROGRESS, move.abandoned())
    move.interrupt.set()


def merged(first: RedriveTally, second: RedriveTally) -> RedriveTally:
    """Two processes' tallies as one run's."""
    ends = [t for t in (first.hidden_until, second.hidden_until) if t is not None]
    return RedriveTally(
        seen=first.seen + second.seen,
        moved=first.moved + second.moved,
        sent_not_deleted=first.sent_not_deleted + second.sent_not_deleted,
        failed=first.failed + second.failed,
        skipped=first.skipped + second.skipped,
        given_back=first.given_back + second.given_back,
        unsettled=first.unsettled + second.unsettled,
        dry_run=first.dry_run,
        failures=dict(Counter(first.failures) + Counter(second.failures)),
        skips=dict(Counter(first.skips) + Counter(second.skips)),
        stopped=first.stopped or second.stopped,
        interrupted=first.interrupted,
        not_released=first.not_released + second.not_released,
        hidden_until=max(ends) if ends else None,
        pace=first.pace,
        processes=first.processes + second.processes,
    )


def merged_leftover(first: Leftover, second: Leftover) -> Leftover:
    """Two processes' leftovers as one run's."""

    def latest(a: float | None, b: float | None) -> float | None:
        return max(a, b) if a is not None and b is not None else a if b is None else b

    return Leftover(
        hidden=first.hidden + second.hidden,
        hidden_until=latest(first.hidden_until, second.hidden_until),
        sent_not_deleted=first.sent_not_deleted + second.sent_not_deleted,
        unconfirmed=first.unconfirmed + second.unconfirmed,
        receives=first.receives + second.receives,
        receiving_up_to=first.receiving_up_to + second.receiving_up_to,
        receiving_until=latest(first.receiving_until, second.receiving_until),
        deleting=first.deleting + second.deleting,
        releasing=first.releasing + second.releasing,
    )
