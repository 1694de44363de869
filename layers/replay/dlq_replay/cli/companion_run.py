"""The second process of `dlq-replay redrive` (`ops.companion`): its setup, in the parent, and
its part of the move, in the child (`python -m`), reported to the parent in frames on stdout."""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from dlq_replay.cli.options import endpoint, sqs_client
from dlq_replay.cli.prestart import take
from dlq_replay.cli.selection import selector_from
from dlq_replay.cli.shutdown import end_process
from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.companion import Companion, CompanionSetup
from dlq_replay.ops.movefollow import MoveFollower
from dlq_replay.ops.receiving import ReceiveBudget
from dlq_replay.ops.redrive import RedriveRequest

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def companion_setup(args: argparse.Namespace) -> CompanionSetup:
    """The child's client: the command's profile, region, endpoint and long poll."""
    return CompanionSetup(args.profile, args.region, endpoint(args), args.wait_seconds)


def early_companion(args: argparse.Namespace) -> Companion | None:
    """The child `cli.prestart` started, given its setup if the move fits it; else let go."""
    started = take()
    if started is None:
        return None
    shared = (args.limit, args.rate, args.until_failing, args.keep, args.dry_run)
    if args.processes == 1 or any(shared) or args.target_arns or not selector_from(args).empty:
        if started.stdin is not None:
            started.stdin.close()
        return None
    return Companion(companion_setup(args), started=started).spawn()


def _frames(out: IO[bytes]) -> Callable[..., None]:
    """The frames to the parent, one whole frame at a time (the move's threads all report)."""
    lock = threading.Lock()

    def send(*frame: Any) -> None:
        data = pickle.dumps(frame)
        # OSError: the parent is gone (an abandoned run), the move still ends.
        with lock, contextlib.suppress(OSError):
            out.write(data)
            out.flush()

    return send


def main() -> int:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # The frames own stdout; anything a library prints goes to stderr (the parent's /dev/null).
    frame = _frames(os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)
    source = sys.stdin.buffer
    try:
        try:
            setup: CompanionSetup = pickle.load(source)  # noqa: S301 (the parent's, on a pipe)
        except EOFError:  # let go before its setup (`cli.prestart`)
            return 0
        sqs = sqs_client(
            argparse.Namespace(
                profile=setup.profile,
                region=setup.region,
                endpoint_url=setup.endpoint_url,
                command="redrive",
                wait_seconds=setup.wait_seconds,
            )
        )
        try:
            move: tuple[RedriveRequest, ReceiveBudget | None] = pickle.load(source)  # noqa: S301
        except EOFError:  # no move for it after all
            return 0
        return _move(sqs, *move, stop, frame)
    except Exception as error:
        frame("failed", f"{type(error).__name__}: {error}")
        return 1


def _move(
    sqs: SQSClient,
    request: RedriveRequest,
    budget: ReceiveBudget | None,
    stop: threading.Event,
    frame: Callable[..., None],
) -> int:
    follower = None
    if request.follow_id is not None:
        follower = MoveFollower(None, request.follow_id, "redrive")
    move = ClientMove(sqs, request, stop=stop, follower=follower, budget=budget)

    def followed() -> tuple[int, int]:
        return (follower.sent, follower.untracked) if follower is not None else (0, 0)

    tally = move.run(lambda tally: frame("progress", tally, move.leftover(), followed()))
    frame("end", tally, move.leftover(), followed(), move.sighting, move.source_urls)
    return 128 + signal.SIGINT if stop.is_set() else 0  # as the CLI's Ctrl-C: 130


if __name__ == "__main__":
    end_process(main())  # without the interpreter's teardown, as the CLI ends
