"""One shutdown path for SIGINT, SIGTERM and SIGHUP: outside `Shutdown.run` a signal raises
`Interrupted` (one line, exit 128 + its number); under it the first lets the work finish what is
in flight, a second (or `GRACE_SECONDS`) writes the audit's end and the tally so far, and exits."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

if TYPE_CHECKING:
    from dlq_replay.audit import Action
    from dlq_replay.ops.export import ExportLeftover
    from dlq_replay.ops.redrive import Leftover

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# From the first signal to the exit, at most: requests in flight and the clean-up get this long.
GRACE_SECONDS = 4.0
_POLL_SECONDS = 0.1


def exit_code(signum: int) -> int:
    """What a shell expects of a process stopped by `signum`: 128 + its number."""
    return 128 + signum


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class Interrupted(KeyboardInterrupt):
    """A signal outside a command's own shutdown: unwind, print one line, exit 128 + signum."""

    def __init__(self, signum: int, message: str | None = None) -> None:
        super().__init__(message or f"interrupted ({signal_name(signum)})")
        self.signum = signum
        self.code = exit_code(signum)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    del frame
    raise Interrupted(signum)


def install_default_handlers() -> Callable[[], None]:
    """SIGINT, SIGTERM and SIGHUP raise `Interrupted` (main thread only); returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    # SIGTERM's last: whoever sees it caught (a supervisor, a test reading SigCgt) knows the
    # other two are too.
    order = sorted(SIGNALS, key=lambda sig: sig == signal.SIGTERM)
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in order}
    previous_hook = sys.unraisablehook

    def deliver_again(unraisable: Any) -> None:
        # Python drops an `Interrupted` raised in a weakref callback or a `__del__`: sent again
        # from a thread a moment later, it lands in the command's own code.
        if isinstance(unraisable.exc_value, Interrupted):
            again = threading.Timer(
                _POLL_SECONDS / 10, os.kill, (os.getpid(), unraisable.exc_value.signum)
            )
            again.daemon = True
            again.start()
            return
        previous_hook(unraisable)

    sys.unraisablehook = deliver_again

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = previous_hook

    return restore


def exit_with_on_signal(code: int) -> None:
    """A finished command's signals end the process at once with its `code`: a late signal
    changes neither the outcome it reported nor its exit status."""
    if threading.current_thread() is not threading.main_thread():
        return

    def finish(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        end_process(code)

    for sig in SIGNALS:
        signal.signal(sig, finish)


def end_process(code: int) -> NoReturn:
    """End the process with `code`, output flushed, without the interpreter's teardown: its
    collection of what boto3 and botocore hold takes 0.1-0.3 s after the work is done."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe, a write it interrupted
            stream.flush()
    os._exit(code)


class Shutdown:
    """The stop token of one command and the signal handlers that set it."""

    def __init__(
        self,
        grace_seconds: float = GRACE_SECONDS,
        *,
        exit_now: Callable[[int], None] = os._exit,
        audit: Action | None = None,
    ) -> None:
        self.stop = threading.Event()
        self.audit = audit  # its end is written before an abandoned run exits
        self._abandoning = False
        self.signum: int | None = None
        self.grace_seconds = grace_seconds
        self._signalled_at = 0.0
        self._left: Callable[[], str] = lambda: ""
        self._report: Callable[[str], None] | None = None
        self._tally: Callable[[], Mapping[str, Any]] | None = None
        self._exit_now = exit_now

    @property
    def code(self) -> int | None:
        """The exit code the signal asks for; None without a signal."""
        return None if self.signum is None else exit_code(self.signum)

    @property
    def name(self) -> str:
        return signal_name(self.signum) if self.signum is not None else ""

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if self.signum is not None:
            self._abandon(f"second signal ({signal_name(signum)})", exit_code(signum))
            return
        self.signum = signum
        self._signalled_at = time.monotonic()
        self.stop.set()
        print(
            f"dlq-replay: {signal_name(signum)}: stopping (finishing what is in flight; "
            "a second signal exits at once)",
            file=sys.stderr,
            flush=True,
        )

    def _abandon(self, why: str, code: int) -> None:
        if self._abandoning:
            return  # a third signal: the exit is already on its way, bounded
        self._abandoning = True
        # With the tally at hand, the end record first (bounded): the work goes on meanwhile,
        # so what is left is read again after it, for the line and the tally that say it.
        if self._tally is not None:
            if self.audit is not None:
                self.audit.tally(self._tally())
            self._abandon_audit(why, code)
        left = self._left_text()
        if sys.stderr.isatty():
            # A progress bar hides the cursor until it closes, which an exit now skips.
            sys.stderr.write("\n\x1b[?25h")
        print(f"dlq-replay: {why}: exiting now; {left}", file=sys.stderr, flush=True)
        if self._report is not None:
            try:
                self._report(why)
            except Exception as error:  # the exit must happen whatever the state
                print(
                    f"dlq-replay: no tally ({type(error).__name__}: {error})",
                    file=sys.stderr,
                    flush=True,
                )
        sys.stdout.flush()
        if self._tally is None:
            self._abandon_audit(why, code)
        self._exit_now(code)

    def _abandon_audit(self, why: str, code: int) -> None:
        if self.audit is None:
            return
        problem = self.audit.abandon(why, code, self._left_text())
        if problem:
            print(f"dlq-replay: audit: {problem}", file=sys.stderr, flush=True)

    def _left_text(self) -> str:
        try:
            return self._left()
        except Exception as error:  # the line must go out whatever the state
            return f"what is left is unknown ({type(error).__name__})"

    def run(
        self,
        work: Callable[[], T],
        left: Callable[[], str],
        report: Callable[[str], None] | None = None,
        tally: Callable[[], Mapping[str, Any]] | None = None,
    ) -> T:
        """`work()` in a thread under the signal handlers: its result, or its error raised here.
        On abandon: `tally()` for the audit's end record, `left()` the line, `report(why)`."""
        self._left = left
        self._report = report
        self._tally = tally
        result: list[T] = []
        failure: list[BaseException] = []

        def body() -> None:
            try:
                result.append(work())
            except BaseException as error:  # handed to the main thread
                failure.append(error)

        main = threading.current_thread() is threading.main_thread()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in SIGNALS} if main else {}
        try:
            thread = threading.Thread(target=body, name="work", daemon=True)
            thread.start()
            while thread.is_alive():
                thread.join(_POLL_SECONDS)
                late = time.monotonic() - self._signalled_at >= self.grace_seconds
                if self.signum is not None and thread.is_alive() and late:
                    self._abandon(
                        f"{self.name}: requests still in flight after {self.grace_seconds:g} s",
                        exit_code(self.signum),
                    )
                    break  # only when exit_now returns (tests)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if failure:
            raise failure[0]
        if not result:
            raise Interrupted(self.signum or signal.SIGINT, "abandoned")
        return result[0]


def hidden_until_text(count: int, until: float | None) -> str:
    """`3 messages stay hidden until 14:02:11 UTC at the latest (...)`, or that none does."""
    if count <= 0:
        return "no message is left hidden"
    noun = "message stays" if count == 1 else "messages stay"
    return (
        f"{count} {noun} hidden until {_when(until)} at the latest (then visible again by "
        "themselves)"
    )


def _when(until: float | None) -> str:
    if until is None:
        return "their visibility timeout ends"
    return time.strftime("%H:%M:%S UTC", time.gmtime(until))


def interrupted(stop: KeyboardInterrupt, message: str) -> Interrupted:
    """`stop` (a Ctrl-C or an `Interrupted`) with a better line, its exit code kept."""
    return Interrupted(stop.signum if isinstance(stop, Interrupted) else signal.SIGINT, message)


def hidden_at_most_text(left: Leftover | ExportLeftover) -> str:
    """What stays hidden at most: the messages in hand, and what receives in flight may hide."""
    text = hidden_until_text(left.hidden, left.hidden_until)
    if not left.receives:
        return text
    if left.hidden <= 0:
        text = "none received is left hidden"
    noun = "receive" if left.receives == 1 else "receives"
    return (
        f"{text}; up to {left.receiving_up_to} more may be hidden by {left.receives} {noun} in "
        f"flight, until {_when(left.receiving_until)}"
    )


def leftover_text(left: Leftover, where: str) -> str:
    """What an abandoned move leaves: hidden messages (at most) and possible duplicates."""
    parts = [hidden_at_most_text(left)]
    if left.sent_not_deleted:
        parts.append(
            f"sent, original not confirmed deleted: {left.sent_not_deleted} (a rerun sends again "
            f"those still in the {where})"
        )
    if left.unconfirmed:
        parts.append(
            f"{left.unconfirmed} copies were being sent, unconfirmed (a rerun may send them again)"
        )
    return "; ".join(parts)
