"""Every exit path of an interrupted command tells the truth: graceful, grace exceeded (the
endpoint became slow after the signal) and second signal, for each of SIGINT, SIGTERM and
SIGHUP, with and without the latency proxy (`tools/interrupt.py`, the real console command on
the emulator).

On every path a `--json` command prints its tally and the tally adds up; what it says stays
hidden is at least what the queue shows hidden one second after the exit, and at most that
plus what receives in flight asked for and what deletes or releases in flight name. The worker,
a service, exits 0 after a SIGTERM it obeyed cleanly; any abandoned stop exits 128 + the
signal's number. The cases are spread so each path meets each signal, each command and both
kinds of connection without running the whole product of them (test_signals.py runs the
graceful path of every command and signal behind the proxy)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tools.interrupt import Run, RunOutcome, Scenario, console_command

from .support import dlq_replay_command

GRACEFUL, GRACE, SECOND = "graceful", "grace exceeded", "second signal"
INT, TERM, HUP = signal.SIGINT, signal.SIGTERM, signal.SIGHUP

# (exit path, signal, command, through the latency proxy). The grace can only be exceeded
# behind the proxy (it turns slow after the signal); without it, two signals 50 ms apart are
# the Ctrl-C pressed twice of the report (600 messages, 16 batches in flight).
CASES = [
    (GRACEFUL, INT, "redrive", False),
    (GRACEFUL, HUP, "export", False),
    (GRACEFUL, TERM, "worker", False),
    (GRACEFUL, TERM, "import", True),
    (GRACE, INT, "export", True),
    (GRACE, TERM, "redrive", True),
    (GRACE, HUP, "import", True),
    (GRACE, INT, "worker", True),
    (SECOND, INT, "redrive", False),
    (SECOND, TERM, "export", False),
    (SECOND, HUP, "redrive", True),
    (SECOND, HUP, "worker", True),
]


def _id(case: tuple[str, int, str, bool]) -> str:
    path, signum, command, proxy = case
    via = "proxy" if proxy else "direct"
    return f"{command}-{signal.Signals(signum).name}-{path.replace(' ', '_')}-{via}"


def _scenario(
    endpoint: str,
    tmp_path: Path,
    path: str,
    signum: int,
    command: str,
    proxy: bool,
) -> Scenario:
    script = console_command()
    many = command == "redrive" and path == SECOND and not proxy
    return Scenario(
        endpoint=endpoint,
        command=command,
        signum=signum,
        workdir=tmp_path,
        dlq_replay=script if Path(script[0]).exists() else dlq_replay_command(),
        messages=600 if many else 100,
        concurrency=16 if many else 2,
        prefix=f"x{command[:3]}{signum}",
        proxy=proxy,
        slow_after_signal=30.0 if path == GRACE else 0.0,
        slow_lead=0.3,  # with slow_after_signal: a request is surely held when the signal comes
        second_signal=0.05 if path == SECOND else None,
    )


def _said_hidden(tally: dict[str, Any]) -> tuple[int, int]:
    """What the command says stays hidden (an upper bound), and how much of it may be gone a
    second later without the bound being loose: asked for by receives, named by deletes and
    releases in flight."""
    left = tally.get("left")
    if left is None:  # graceful: what SQS refused to make visible again
        return int(tally["not_released"]), 0
    slack = left["receiving_up_to"] + left.get("deleting", 0) + left.get("releasing", 0)
    slack += left.get("settling", 0)
    return int(left["hidden_at_most"]), slack


def _check_tally(outcome: RunOutcome, command: str, path: str, signame: str) -> None:
    tally = outcome.tally
    assert tally is not None, f"no --json tally on stdout: {outcome.stdout!r} {outcome.stderr}"
    assert tally["adds_up"], tally
    assert tally["interrupted"] == signame, tally
    if path != GRACEFUL and "exiting now" in outcome.stderr:
        assert tally["abandoned"], tally
    if command == "import":
        return
    said, slack = _said_hidden(tally)
    actual = outcome.hidden_later
    assert said >= actual, f"said {said} hidden, {actual} were: {outcome.stderr}"
    assert said <= actual + slack, f"said {said} hidden, {actual} were: {outcome.stderr}"


@pytest.mark.slow
@pytest.mark.usefixtures("atomic_receive")
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_every_exit_path_says_what_is_true(
    emulator_endpoint: str, tmp_path: Path, case: tuple[str, int, str, bool]
) -> None:
    path, signum, command, proxy = case
    signame = signal.Signals(signum).name
    run = Run(_scenario(emulator_endpoint, tmp_path, path, signum, command, proxy))
    try:
        outcome = run.interrupted()
    finally:
        run.close()
    err = outcome.stderr
    assert "Traceback" not in err + outcome.stdout
    abandoned = "exiting now" in err
    if path == GRACE:
        assert f"{signame}: requests still in flight after 4 s" in err, err
    if path == SECOND and proxy:
        assert f"second signal ({signame})" in err, err
    if abandoned or command != "worker" or signum != TERM:
        assert outcome.code == 128 + signum, err
    else:
        assert outcome.code == 0, err  # a service stopped cleanly by SIGTERM
    if command != "worker":
        _check_tally(outcome, command, path, signame)
