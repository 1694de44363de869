"""A second process for a plain client-side redrive: one process is bound by one core (about
2,000 messages a second, bench/bench_end_to_end.py). Each moves on its own, as two redrives side
by side would; the parent adds the child's counts to its own, forwards a stop to it, and waits
for it before it reports.

The child is `python -m dlq_replay.cli.companion_run`. In on its stdin: its client's settings,
then the request and its receive budget (or the end of its input: no move for it). Out on its
stdout, frames: ("progress", tally, leftover, followed) after each batch, then ("end", tally,
leftover, followed, sighting, source_urls) or ("failed", line). Both ends are this package, so
the frames are pickled.
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from dlq_replay.ops.receiving import ReceiveBudget, Sighting
from dlq_replay.ops.redrive import Leftover, RedriveRequest, RedriveTally

if TYPE_CHECKING:
    from dlq_replay.ops.movefollow import MoveFollower

# The child's start-up (an interpreter, boto3, a client: ~0.4 s) pays from about this many.
WORTH_IT_FROM = 1_000


def companion_fits(request: RedriveRequest) -> bool:
    """Only a move of everything, as fast as it goes, to SQS queues: what two processes cannot
    share (a limit, a pace, a selection's give-backs, a copy mode's holds, deliveries to
    targets, a dry run's count) stays one process's."""
    return (
        request.selector.empty
        and request.limit is None
        and request.rate is None
        and request.until_failing is None
        and not request.keep
        and not request.dry_run
        and not request.target_arns
    )


def processes_for(
    asked: int | None, request: RedriveRequest, approximate: int, cores: int
) -> tuple[int, str | None]:
    """How many processes move (1 or 2), and what to tell the operator: `asked` (--processes),
    else 2 from WORTH_IT_FROM messages with 2 `cores` or more (on one core the two would take
    turns), for a request a second process fits."""
    wanted = asked or (2 if approximate >= WORTH_IT_FROM and cores >= 2 else 1)
    if wanted == 1 or companion_fits(request):
        return wanted, None
    return 1, None if asked is None else (
        "--processes 2 applies to a move of everything, unpaced, to SQS queues (no --limit, "
        "--rate, --until-failing, selection, --keep, --dry-run or --target-arn): one process"
    )


@dataclass(frozen=True, slots=True)
class CompanionSetup:
    """What the child builds its SQS client from (the rest comes with the environment)."""

    profile: str | None
    region: str | None
    endpoint_url: str | None
    wait_seconds: int = 1  # the receives' long poll, on top of the client's read timeout


class Companion:
    """The parent's handle on the child: its latest counts, read as its frames arrive. The
    child is spawned first (`spawn`: its interpreter, boto3 and its client get ready while the
    parent's pre-flight runs), then given the move (`begin`) or let go (`cancel`)."""

    def __init__(
        self,
        setup: CompanionSetup,
        command: list[str] | None = None,
        *,
        started: subprocess.Popen[bytes] | None = None,
    ) -> None:
        """`started`: the child already spawned (`cli.prestart`), waiting for its setup."""
        self.setup = setup
        self.command = command or [sys.executable, "-m", "dlq_replay.cli.companion_run"]
        self.tally: RedriveTally | None = None
        self.leftover: Leftover | None = None
        self.sighting = Sighting()
        self.source_urls: dict[str, str | None] = {}
        self.problem: str | None = None  # one line: why the child did not do its part
        self.follower: MoveFollower | None = None  # the move's: gets the child's counts
        self._followed = (0, 0)
        self._process = started
        self._reader: threading.Thread | None = None
        self._stopped = self._set_up = False

    def spawn(self) -> Companion:
        """Start the child, which gets ready and waits for its move; one that cannot start
        leaves the move to the parent."""
        if self._set_up or self.problem is not None:
            return self
        try:
            if self._process is None:
                self._process = subprocess.Popen(  # noqa: S603 (this interpreter, our module)
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    # No terminal: it never prompts (for a profile's MFA code it fails, and the
                    # parent moves alone), and a stop reaches it from the parent, once.
                    start_new_session=True,
                )
            self._send(self.setup)
            self._set_up = True
        except OSError as error:
            self.problem = f"not started: {error}"
        return self

    def begin(self, request: RedriveRequest, budget: ReceiveBudget | None) -> None:
        """The child's move: `request`, beside the parent's, with its receive `budget` (read
        once, by the parent)."""
        process = self.spawn()._process
        if process is None or process.stdout is None or self.problem is not None:
            return
        try:
            self._send((request, budget))
        except OSError as error:
            self.problem = f"not started: {error}"
        self.cancel()  # the request is all it reads: it sees the end of its input
        self._reader = threading.Thread(
            target=self._read, args=(process.stdout,), name="companion", daemon=True
        )
        self._reader.start()

    def cancel(self) -> None:
        """No move for the child (or nothing more): the end of its input; it exits."""
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()

    def _send(self, value: object) -> None:
        assert self._process is not None
        assert self._process.stdin is not None
        self._process.stdin.write(pickle.dumps(value))
        self._process.stdin.flush()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            try:
                frame = pickle.load(stream)  # noqa: S301 (our own child's, on a pipe)
            except EOFError:
                return
            except Exception as error:
                self.problem = f"unreadable report: {type(error).__name__}: {error}"
                return
            if frame[0] == "failed":
                self.problem = str(frame[1])
                continue
            # The follow record gets what the child confirmed since its last frame.
            (sent, untracked), (before, before_untracked) = frame[3], self._followed
            self._followed = frame[3]
            if self.follower is not None:
                self.follower.add(sent - before, untracked - before_untracked)
            self.tally, self.leftover = frame[1], frame[2]
            if frame[0] == "end":
                self.sighting, self.source_urls = frame[4], frame[5]

    def stop(self) -> None:
        """The move stops before the end: so does the child (once; as a Ctrl-C stops it)."""
        process = self._process
        if process is not None and not self._stopped and process.poll() is None:
            self._stopped = True
            process.send_signal(signal.SIGINT)

    def join(self) -> None:
        """Wait for the child's end and its last frame."""
        if self._process is None:
            return
        code = self._process.wait()
        if self._reader is not None:
            self._reader.join()
        # 130: stopped; killed by the stop's signal itself: stopped before it could set up.
        stopped = (130, -signal.SIGINT, -signal.SIGTERM)
        if self.problem is None and code != 0 and code not in stopped:
            self.problem = f"exited with code {code}"
