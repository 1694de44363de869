"""The second process of a client-side `redrive` (`ops.companion`), started as the command line
is read, before the command's modules are imported: the child imports boto3 on the other core
while the command does (about 0.3 s each). The command `take`s it, then gives it its move or
lets it go (it exits at the end of its input)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a child starts: every command's start-up reads this module
    import subprocess

CHILD = [sys.executable, "-m", "dlq_replay.cli.companion_run"]
# A move the command line makes client-side whatever the queues are (a rewrite, or asked).
_CLIENT_SIDE = frozenset({"--client-side", "--reset-count"})
_STARTED: list[subprocess.Popen[bytes]] = []  # the one child this process started early


def prestart(arguments: list[str]) -> None:
    """Start the child for `dlq-replay redrive ...` when the command line makes the move
    client-side, does not ask for one process, and 2 cores or more are usable."""
    if arguments[:1] != ["redrive"] or not _CLIENT_SIDE & set(arguments):
        return
    if "--processes" in arguments or any(a.startswith("--processes=") for a in arguments):
        return  # asked for: the command starts it once the options are read, if 2
    if usable_cores() < 2:
        return
    import subprocess

    try:
        child = subprocess.Popen(  # noqa: S603 (this interpreter, our module)
            CHILD,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # no terminal: see ops.companion.Companion.spawn
        )
    except OSError:
        return  # the command starts one later, or moves alone
    _STARTED.append(child)


def usable_cores() -> int:
    """The cores this process may run on (a container's, a taskset's), else the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def take() -> subprocess.Popen[bytes] | None:
    """The child started early, if any (once)."""
    return _STARTED.pop() if _STARTED else None
