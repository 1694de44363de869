"""Recording one action: `Action`, a context manager from the action's naming to its end. The
begin is written on threads while the command does its own checks; `gate()` waits for it and
refuses an action that cannot be recorded. Leaving the `with` block writes the end: a
KeyboardInterrupt or a set stop token is `interrupted`, 128 + the signal's number (else 130)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from dlq_replay.audit.model import (
    AuditOutcome,
    AuditPhase,
    AuditRecord,
    Identity,
    Origin,
    utc_text,
)
from dlq_replay.audit.store import AuditStore

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.ops.movefollow import MoveFollower
    from dlq_replay.ops.queueinfo import QueueInfo

EXIT_OK, EXIT_FAILED = 0, 1
# How long the begin waits for STS to name the caller, then records it as unknown.
IDENTITY_PATIENCE_SECONDS = 3.0
SIGNAL_EXITS = 128  # 128 + the signal's number: a signal stopped the command
EXIT_STOPPED = 130  # a stop without a signal of its own (a Stop button): as SIGINT's
# An abandoned run (a second signal) exits this long after it at the latest: the end's write.
ABANDON_SECONDS = 2.0


class AuditError(Exception):
    """The begin record could not be written: the action must not run."""


def _now() -> datetime:
    return datetime.now(UTC)


def _plain(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def outcome_of(exit_code: int) -> AuditOutcome:
    if exit_code == EXIT_OK:
        return AuditOutcome.OK
    if exit_code >= SIGNAL_EXITS:
        return AuditOutcome.INTERRUPTED
    return AuditOutcome.FAILED if exit_code == EXIT_FAILED else AuditOutcome.ERROR


class Action:
    """`with Action(...)` around the work, `gate()` before its first change, `ended(code)`."""

    def __init__(
        self,
        command: str,
        origin: Origin,
        request: Mapping[str, Any],
        *,
        open_store: Callable[[], AuditStore],
        identify: Callable[[], Identity],
        describe: Callable[[BaseException], str] = _plain,
        stop: threading.Event | None = None,
        announce: Callable[[AuditStore], None] | None = None,
        recorded: bool = True,
    ) -> None:
        started = utc_text(_now())
        self.begin = AuditRecord(
            action_id=uuid.uuid4().hex,
            phase=AuditPhase.BEGIN,
            started_at=started,
            at=started,
            command=command,
            origin=origin,
            identity=Identity.unknown("not asked yet"),
            request=dict(request),
        )
        self.recorded = recorded
        self.stop = stop  # set: the action was stopped (the end is `interrupted`)
        self.store: AuditStore | None = None
        self.failure: str | None = None  # why the begin could not be written
        self.problem: str | None = None  # why the end could not be written
        self.end: AuditRecord | None = None  # once written
        self.waited = 0.0  # seconds gate() waited for the begin (bench/bench_audit.py)
        self.identity_patience = IDENTITY_PATIENCE_SECONDS
        self._open_store = open_store
        self._identify = identify
        self._describe = describe
        self._announce = announce
        self._identity = self.begin.identity
        self._details: dict[str, Any] = {}
        self._tally: Mapping[str, Any] | None = None
        self._left: str | None = None
        self._code: int | None = None
        self._writer: threading.Thread | None = None
        self._ending = threading.Lock()  # one end, whoever writes it first

    @classmethod
    def unrecorded(cls, command: str, origin: Origin = Origin.CLI) -> Action:
        """A dry run's: the same calls, nothing written."""
        return cls(
            command,
            origin,
            {},
            open_store=_no_store,
            identify=lambda: Identity.unknown("not recorded"),
            recorded=False,
        )

    @property
    def action_id(self) -> str:
        return self.begin.action_id

    def follower(
        self, sqs: SQSClient, destinations: Sequence[QueueInfo | None] = ()
    ) -> MoveFollower | None:
        """The move's follower, its record beside the trail; None when not recorded (a dry run)
        or the trail not open yet. `destinations`: the queues known to receive the copies."""
        if not self.recorded or self.store is None:
            return None
        from dlq_replay.ops.movefollow import MoveFollower

        known = [queue for queue in destinations if queue is not None]
        store, command = self.store.follow_store(), self.begin.command
        return MoveFollower(store, self.action_id, command, sqs=sqs, destinations=known)

    def start(self) -> None:
        """Ask who the caller is and write the begin, both in the background (once)."""
        if not self.recorded or self._writer is not None:
            return
        asking = threading.Thread(target=self._ask, name="audit-identity", daemon=True)
        writing = threading.Thread(
            target=self._write_begin, args=(asking,), name="audit-begin", daemon=True
        )
        self._writer = writing
        asking.start()
        writing.start()

    def _ask(self) -> None:
        try:
            self._identity = self._identify()
        except Exception as error:  # any reason: the identity is unknown, and why
            self._identity = Identity.unknown(self._describe(error))

    def _write_begin(self, asking: threading.Thread) -> None:
        try:
            store = self._open_store()
            asking.join(self.identity_patience)
            identity = (
                Identity.unknown(f"STS did not answer within {self.identity_patience:g} s")
                if asking.is_alive()
                else self._identity
            )
            self.begin = replace(self.begin, identity=identity, at=utc_text(_now()))
            store.write(self.begin)
            self.store = store
        except Exception as error:  # any reason refuses the action (gate)
            self.failure = self._describe(error)

    def _join(self, timeout: float | None = None) -> None:
        if self._writer is not None:
            self._writer.join(timeout)

    def gate(self, *, queues: tuple[str, ...] = (), selection_size: int | None = None) -> None:
        """Before the first change: wait for the begin; AuditError when it was not written."""
        self.note(queues=queues, selection_size=selection_size)
        if not self.recorded:
            return
        self.start()
        waiting = time.monotonic()
        self._join()
        self.waited += time.monotonic() - waiting
        if self.failure is not None:
            raise AuditError(
                f"the action was not recorded in the audit trail, so it did not run: {self.failure}"
            )
        if self._announce is not None and self.store is not None:
            announce, self._announce = self._announce, None
            announce(self.store)

    def note(self, *, queues: tuple[str, ...] = (), selection_size: int | None = None) -> None:
        if queues:
            self._details["queues"] = tuple(queues)
        if selection_size is not None:
            self._details["selection_size"] = selection_size

    def tally(self, tally: Mapping[str, Any]) -> None:
        self._tally = tally

    def leftover(self, text: str) -> None:
        self._left = text

    def ended(self, exit_code: int) -> int:
        self._code = exit_code
        return exit_code

    def __enter__(self) -> Action:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(error, AuditError) or not self.recorded:
            return  # refused before it ran, or nothing to record
        self.problem = self.finish(self._code, error)

    def finish(self, exit_code: int | None, error: BaseException | None = None) -> str | None:
        """Write the end; what went wrong with the audit itself, in one line, else None."""
        self._join()
        return self._write_end(self._end_record(exit_code, error), deadline=None)

    def abandon(self, why: str, exit_code: int, left: str) -> str | None:
        """The process exits now (a second signal): write the end within `ABANDON_SECONDS`."""
        if not self.recorded:
            return None
        deadline = time.monotonic() + ABANDON_SECONDS
        self._left = left
        self._join(ABANDON_SECONDS)
        record = self._end_record(exit_code, None)
        return self._write_end(replace(record, abandoned=why), deadline=deadline)

    def _end_record(self, exit_code: int | None, error: BaseException | None) -> AuditRecord:
        text: str | None = None
        if isinstance(error, KeyboardInterrupt):
            code = getattr(error, "code", None)  # an `Interrupted`'s own: 128 + its signal
            exit_code = code if isinstance(code, int) and code >= SIGNAL_EXITS else EXIT_STOPPED
            outcome, text = AuditOutcome.INTERRUPTED, self._describe(error)
        elif error is not None:
            outcome, text = AuditOutcome.ERROR, self._describe(error)
        else:
            exit_code = EXIT_OK if exit_code is None else exit_code
            if self.stop is not None and self.stop.is_set() and exit_code < SIGNAL_EXITS:
                exit_code = EXIT_STOPPED
            outcome = outcome_of(exit_code)
        stopped = outcome is AuditOutcome.INTERRUPTED
        return replace(
            self.begin,
            phase=AuditPhase.END,
            at=utc_text(_now()),
            outcome=outcome,
            exit_code=exit_code,
            tally=self._tally,
            error=text,
            left=(self._left or "nothing is known to be left") if stopped else None,
            **self._details,
        )

    def _write_end(self, end: AuditRecord, deadline: float | None) -> str | None:
        """Write `end` once; a signal does not cut it short, a (monotonic) `deadline` does."""
        if not self._ending.acquire(blocking=False):
            return None  # another path is writing (or wrote) the end
        store = self.store
        if store is None:
            why = self.failure or f"its begin was not written within {ABANDON_SECONDS:g} s"
            return f"the action was not recorded in the audit trail: {why}"
        failure: list[BaseException] = []

        def write() -> None:
            try:
                store.write(end)
            except Exception as error:  # said below: the action is over, mask nothing
                failure.append(error)

        writer = threading.Thread(target=write, name="audit-end", daemon=True)
        writer.start()
        while writer.is_alive():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return f"the result was not recorded in the audit trail in {ABANDON_SECONDS:g} s"
            try:
                writer.join(0.1 if left is None else min(0.1, left))
            except KeyboardInterrupt:
                # Another signal: the end is written first, within the time a stop allows.
                if deadline is None:
                    deadline = time.monotonic() + ABANDON_SECONDS
        if failure:
            return f"the result was not recorded in the audit trail: {self._describe(failure[0])}"
        self.end = end
        return None


def _no_store() -> AuditStore:
    raise AuditError("not recorded")
