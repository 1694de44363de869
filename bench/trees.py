"""What the benchmarks that set this tree beside an older one share: the trees to measure,
the command line to show, and running a script's measurement in a process of its own that
imports `dlq_replay` from a given tree.

An older tree comes from `git archive <rev> layers | tar -x -C /tmp/old`, then
`--before /tmp/old/layers/replay`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def trees(before: Path | None) -> list[tuple[str, Path | None]]:
    """The trees to measure, labelled, the older one first; None is this one (as installed)."""
    return [("now", None)] if before is None else [("before", before), ("now", None)]


def shown(script: str, argv: Sequence[str] | None) -> str:
    """The command line that reproduces a run, for its first line of output."""
    arguments = sys.argv[1:] if argv is None else argv
    return " ".join([f"python bench/{Path(script).name}", *arguments])


def run_in_tree(
    script: str, tree: Path | None, arguments: Sequence[str], wrapper: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """`script` with `arguments`, under `wrapper` (e.g. valgrind), importing `dlq_replay` from
    `tree` (None: the environment's); it must succeed."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [*wrapper, sys.executable, script, *arguments]
    return subprocess.run(command, env=env, check=True, capture_output=True, text=True)
