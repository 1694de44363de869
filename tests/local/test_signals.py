"""Every command that moves messages, stopped by each of SIGINT, SIGTERM and SIGHUP while its
work is in flight: the real `dlq-replay` console command in a subprocess, on the emulator
behind a latency proxy (`tools/interrupt.py`). After the interruption and after a rerun every
message is counted: none lost, none left hidden after a graceful stop, and a duplicate only
where the run said a copy was sent before its original could be deleted."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest
from emulation import Emulator

from tools.chaos import Faults
from tools.interrupt import COMMANDS, Run, Scenario, console_command

from .support import dlq_replay_command

SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}


def scenario(endpoint: str, command: str, signum: int, tmp_path: Path, **extra: float) -> Scenario:
    script = console_command()
    return Scenario(
        endpoint=endpoint,
        command=command,
        signum=signum,
        workdir=tmp_path,
        dlq_replay=script if Path(script[0]).exists() else dlq_replay_command(),
        messages=60,
        prefix=f"{command}-{signal.Signals(signum).name.lower()}",
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.emulator
@pytest.mark.usefixtures("atomic_receive")
@pytest.mark.parametrize("signame", list(SIGNALS))
@pytest.mark.parametrize("command", COMMANDS)
def test_a_signal_stops_the_command_gracefully_and_a_rerun_finishes(
    emulator_endpoint: str, tmp_path: Path, command: str, signame: str
) -> None:
    signum = SIGNALS[signame]
    run = Run(scenario(emulator_endpoint, command, signum, tmp_path))
    try:
        outcome = run.interrupted()
        # The worker, a service, exits 0 after a SIGTERM it obeyed cleanly.
        expected = 0 if (command, signum) == ("worker", signal.SIGTERM) else 128 + signum
        assert outcome.code == expected, outcome.stderr
        assert "Traceback" not in outcome.stderr + outcome.stdout
        assert f"{signame}: stopping" in outcome.stderr
        assert outcome.hidden_after == 0, "a graceful stop leaves nothing hidden"
        if outcome.tally is not None:
            assert outcome.tally["adds_up"], outcome.tally
            assert outcome.tally["interrupted"] == signame
        if command == "export":
            assert "exist only in the archive" in outcome.stderr
            assert str(run.archive) in outcome.stderr
        outcome = run.rerun(outcome)
    finally:
        run.close()
    assert outcome.lost == 0
    assert outcome.hidden_at_end == 0
    assert set(outcome.after_rerun) == set(run.ids)
    # A duplicate only where the first run said a copy was sent and its original not deleted.
    assert outcome.duplicates <= outcome.said


@pytest.mark.emulator
@pytest.mark.usefixtures("atomic_receive")
def test_an_export_interrupted_twice_then_finished_archives_each_message_once(
    emulator_endpoint: str, emulator: Emulator, tmp_path: Path
) -> None:
    """export --delete stopped while receiving, rerun with the same --file and stopped again
    while deleting, rerun to the end: one archive, and its import sends every id once."""
    run = Run(scenario(emulator_endpoint, "export", signal.SIGINT, tmp_path))
    try:
        first = run.interrupted()
        assert first.code == 130, first.stderr
        assert first.hidden_after == 0
        assert first.tally is not None
        deleted_first = first.tally["deleted"]
        assert f"{deleted_first} messages deleted from the queue exist only in the archive" in (
            first.stderr
        )
        # Stopped again, this time once the deletes have begun (the queue shrinks).
        run.setup = lambda: None  # type: ignore[method-assign]
        total = len(run.ids) - deleted_first
        run.in_flight = lambda: run_depth(run) < total  # type: ignore[method-assign]
        second = run.interrupted()
        assert second.code == 130, second.stderr
        assert second.hidden_after == 0
        assert second.tally is not None
        assert second.tally["continued"] == first.tally["exported"]
        outcome = run.rerun(second)
    finally:
        run.close()
    assert run.archives == [run.archive]  # one archive, continued
    lines = run.archive.read_text().splitlines()
    assert len(lines) == len(run.ids)
    assert outcome.lost == 0
    assert outcome.duplicates == 0
    assert set(outcome.after_rerun) == set(run.ids)


def run_depth(run: Run) -> int:
    """Messages of the source, visible or not."""
    attributes = run.sqs.get_queue_attributes(
        QueueUrl=run.source,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attributes.values())


def catches(pid: int, signum: int, timeout: float = 20.0) -> None:
    """Wait until process `pid` handles `signum` itself (Linux: SigCgt in /proc/PID/status)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = int(
            next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16
        )
        if caught >> (signum - 1) & 1:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never installed a handler for signal {signum}")


@pytest.mark.parametrize("signame", list(SIGNALS))
def test_a_signal_while_the_command_starts_is_one_line_and_its_exit_code(
    emulator_endpoint: str, tmp_path: Path, signame: str
) -> None:
    """Ctrl-C in the first second (while boto3 is imported, the queues looked up): no
    traceback, one line, 128 + the signal's number."""
    run = Run(scenario(emulator_endpoint, "redrive", SIGNALS[signame], tmp_path))
    try:
        run.proxy_url = run.proxy.start()
        run.setup()  # work to do, so it is still running when the signal comes
        process = run.start(run.args())
        # Started, not yet done with its imports and look-ups: the moment its handlers are in
        # (on a loaded machine the interpreter alone may take longer than a fixed sleep). They
        # go in together; Python catches SIGINT from the start, so SIGTERM's tells.
        catches(process.pid, signal.SIGTERM)
        process.send_signal(SIGNALS[signame])
        out, err = process.communicate(timeout=30)
    finally:
        run.close()
    assert process.returncode == 128 + SIGNALS[signame], err
    assert "Traceback" not in out + err


@pytest.mark.emulator
@pytest.mark.usefixtures("atomic_receive")
def test_a_second_signal_exits_at_once_and_says_what_is_left(
    emulator_endpoint: str, tmp_path: Path
) -> None:
    """Behind an SQS that has stopped answering in time, a second signal does not wait for the
    requests in flight: it exits with its own code and says what stays hidden, until when."""
    run = Run(
        scenario(emulator_endpoint, "redrive", signal.SIGINT, tmp_path, slow_after_signal=30.0)
    )
    try:
        run.proxy_url = run.proxy.start()
        run.setup()
        process = run.start(run.args())
        _wait(run)
        run.proxy.faults = Faults(spike=1.0, spike_seconds=30.0)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        run.proxy.faults = Faults()
        run.close()
    assert process.returncode == 143, err
    assert "Traceback" not in out + err
    (line,) = [line for line in err.splitlines() if "second signal (SIGTERM)" in line]
    assert re.search(r"\d+ messages? stays? hidden until \d\d:\d\d:\d\d UTC", line), line


def _wait(run: Run) -> None:
    deadline = time.monotonic() + 30
    while not run.in_flight():
        assert time.monotonic() < deadline, "the command never got to work"
        time.sleep(0.02)
