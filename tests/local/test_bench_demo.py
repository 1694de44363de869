"""The demo benchmark's check of the README's outage claim (bench/bench_demo.py): it runs the
command the README shows, and fails on a park, a loss or an unfinished run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from dlq_replay.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from bench_demo import outage_command, outage_verdict  # noqa: E402

DONE = (
    "demo complete in 88.0 s: sent 300, processed {p}, parked {k} ({r}), not yet done 0, lost {l}"
)


def test_the_outage_command_is_the_readmes_and_the_cli_takes_it() -> None:
    command = outage_command()
    assert command[:3] == [sys.executable, "-m", "dlq_replay.cli.main"]
    words = command[3:]
    assert words[0] == "demo"
    assert " ".join(words) in (ROOT / "README.md").read_text(encoding="utf-8")
    args = build_parser().parse_args(words)
    assert (args.outage_seconds, args.failure_rate, args.poison_rate) == (60, 0.0, 0.0)
    assert args.invalid_rate == 0.0
    assert not args.no_breaker


@pytest.mark.parametrize(
    ("output", "returncode", "problem"),
    [
        (DONE.format(p=300, k=0, r="none", l=0), 0, None),
        (DONE.format(p=281, k=19, r="max-attempts=19", l=0), 0, "parked 19"),
        (DONE.format(p=299, k=0, r="none", l=1), 1, "exit 1"),
        ("demo timed out (limit 224 s): sent 300", 1, "no complete summary"),
    ],
)
def test_a_park_a_loss_or_an_unfinished_run_fails_the_check(
    output: str, returncode: int, problem: str | None
) -> None:
    verdict = outage_verdict(output, returncode)
    if problem is None:
        assert verdict is None
    else:
        assert verdict is not None
        assert problem in verdict
