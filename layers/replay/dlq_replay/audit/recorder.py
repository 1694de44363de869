"""Recording one action: its `begin` written in the background from the moment the action is
named, `gate()` before its first change, its `end` with the tally or the error.

The begin is written on a thread while the command does its own checks (reading the stack,
the queues), so the audit costs the action no time unless the write is slower than those
checks; `gate()` then waits for it and refuses the action when it failed: an action that
cannot be recorded does not run. Two threads: one asks STS who the caller is, the other opens
the store (which may read the stack) and writes the begin once the identity is known.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from dlq_replay.audit.identity import Identity
from dlq_replay.audit.model import AuditRecord, Origin, Outcome, Phase, utc_text
from dlq_replay.audit.store import AuditStore

EXIT_OK, EXIT_FAILED = 0, 1
# How long the begin waits for STS to name the caller: past it, the caller is recorded as
# unknown (an endpoint where STS is unreachable must not hold an operator up for long).
IDENTITY_PATIENCE_SECONDS = 3.0
SIGNAL_EXITS = 128  # 128 + the signal's number: a signal stopped the command


class AuditError(Exception):
    """The begin record could not be written: the action must not run."""


def _now() -> datetime:
    return datetime.now(UTC)


def _plain(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def outcome_of(exit_code: int) -> Outcome:
    if exit_code == EXIT_OK:
        return Outcome.OK
    if exit_code >= SIGNAL_EXITS:
        return Outcome.INTERRUPTED
    return Outcome.FAILED if exit_code == EXIT_FAILED else Outcome.ERROR


class Recorder:
    """The audit of one action (start(), gate(), note(), finish())."""

    def __init__(
        self,
        command: str,
        origin: Origin,
        request: Mapping[str, Any],
        *,
        open_store: Callable[[], AuditStore],
        identify: Callable[[], Identity],
        describe: Callable[[BaseException], str] = _plain,
    ) -> None:
        self.started = _now()
        self.begin = AuditRecord(
            action_id=uuid.uuid4().hex,
            phase=Phase.BEGIN,
            started_at=utc_text(self.started),
            at=utc_text(self.started),
            command=command,
            origin=origin,
            identity=Identity.unknown("not asked yet"),
            request=dict(request),
        )
        self.store: AuditStore | None = None
        self.failure: str | None = None  # why the begin could not be written
        self.waited = 0.0  # seconds gate() waited for the begin
        self._open_store = open_store
        self._identify = identify
        self._describe = describe
        self._identity = self.begin.identity
        self._details: dict[str, Any] = {}
        self._tally: Mapping[str, Any] | None = None
        self._writer: threading.Thread | None = None
        self.identity_patience = IDENTITY_PATIENCE_SECONDS

    def start(self) -> None:
        """Ask who the caller is and write the begin, both in the background."""
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

    def _join(self) -> None:
        """Wait for the begin (an STS call still hanging is left to its daemon thread)."""
        if self._writer is not None:
            self._writer.join()

    def gate(self) -> None:
        """Return once the begin is written; AuditError when it could not be."""
        waiting = _now()
        self._join()
        self.waited += (_now() - waiting).total_seconds()
        if self.failure is not None:
            raise AuditError(
                f"the action was not recorded in the audit trail, so it did not run: {self.failure}"
            )

    def note(self, *, queues: tuple[str, ...] = (), selection_size: int | None = None) -> None:
        """What the action works on, once the command has resolved it (for the end)."""
        if queues:
            self._details["queues"] = tuple(queues)
        if selection_size is not None:
            self._details["selection_size"] = selection_size

    def tally(self, tally: Mapping[str, Any]) -> None:
        """The action's final tally (for the end)."""
        self._tally = tally

    def finish(self, exit_code: int | None, error: BaseException | None = None) -> str | None:
        """Write the end: the exit code's outcome, or the error's. What went wrong with the
        audit itself, in one line, else None."""
        self._join()
        if self.store is None:
            return f"the action was not recorded in the audit trail: {self.failure}"
        if error is not None:
            interrupted = isinstance(error, KeyboardInterrupt)
            outcome = Outcome.INTERRUPTED if interrupted else Outcome.ERROR
            text: str | None = self._describe(error)
        else:
            outcome, text = outcome_of(exit_code or 0), None
        end = replace(
            self.begin,
            phase=Phase.END,
            at=utc_text(_now()),
            outcome=outcome,
            exit_code=exit_code,
            tally=self._tally,
            error=text,
            **self._details,
        )
        try:
            self.store.write(end)
        except Exception as failure:  # the action is over: say so, mask nothing
            return f"the result was not recorded in the audit trail: {self._describe(failure)}"
        return None
