"""The one shutdown path (`cli.shutdown`), in process: a real signal to this process's main
thread, the work in its own thread, the exit replaced by a recorder."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable

import pytest
from dlq_replay.cli.shutdown import (
    Interrupted,
    Shutdown,
    exit_code,
    hidden_at_most_text,
    hidden_until_text,
    install_default_handlers,
)
from dlq_replay.ops.redrive import Leftover


class ExitCalledError(Exception):
    """What the recorder raises instead of leaving the process (so `run` stops there)."""


def signal_main(signum: int) -> None:
    signal.pthread_kill(threading.main_thread().ident or 0, signum)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_work_sees_the_stop_and_its_result_is_the_truth(
    capsys: pytest.CaptureFixture[str], signum: int
) -> None:
    shutdown = Shutdown(grace_seconds=10)
    previous = signal.getsignal(signum)

    def work() -> str:
        signal_main(signum)
        assert shutdown.stop.wait(5)
        return "tally"

    assert shutdown.run(work, lambda: "unused") == "tally"
    assert shutdown.code == exit_code(signum) == 128 + signum
    assert signal.getsignal(signum) is previous  # handed back
    assert f"{signal.Signals(signum).name}: stopping" in capsys.readouterr().err


def recorded_exits() -> tuple[list[int], Callable[[int], None]]:
    """An `exit_now` that records its code and stops the run, as `os._exit` would."""
    exits: list[int] = []

    def exit_now(code: int) -> None:
        exits.append(code)
        raise ExitCalledError

    return exits, exit_now


def test_work_still_running_after_the_grace_is_abandoned_with_what_is_left(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exits, exit_now = recorded_exits()
    shutdown = Shutdown(grace_seconds=0.3, exit_now=exit_now)
    release = threading.Event()

    def work() -> str:
        signal_main(signal.SIGTERM)
        release.wait(10)  # a request that never comes back
        return "late"

    with pytest.raises(ExitCalledError):
        shutdown.run(work, lambda: "3 messages stay hidden")
    release.set()
    assert exits == [143]
    err = capsys.readouterr().err
    assert "requests still in flight after 0.3 s: exiting now; 3 messages stay hidden" in err


def test_a_second_signal_exits_at_once_with_its_own_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exits, exit_now = recorded_exits()
    shutdown = Shutdown(grace_seconds=30, exit_now=exit_now)
    release = threading.Event()

    def work() -> None:
        signal_main(signal.SIGINT)
        shutdown.stop.wait(5)
        signal_main(signal.SIGHUP)
        release.wait(10)

    with pytest.raises(ExitCalledError):
        shutdown.run(work, lambda: "nothing left")
    release.set()
    assert exits == [129]
    assert "second signal (SIGHUP): exiting now; nothing left" in capsys.readouterr().err


def test_hidden_until_names_the_time_or_that_nothing_is_hidden() -> None:
    assert hidden_until_text(0, None) == "no message is left hidden"
    assert hidden_until_text(2, 0.0) == (
        "2 messages stay hidden until 00:00:00 UTC at the latest (then visible again by themselves)"
    )


def test_an_abandoned_run_prints_its_tally_after_the_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The abandon path too gives a `--json` reader its object (it wrote 0 bytes before)."""
    exits, exit_now = recorded_exits()
    shutdown = Shutdown(grace_seconds=0.3, exit_now=exit_now)
    release = threading.Event()

    def work() -> None:
        signal_main(signal.SIGINT)
        release.wait(10)

    with pytest.raises(ExitCalledError):
        shutdown.run(work, lambda: "left", lambda why: print(f'{{"abandoned": "{why}"}}'))
    release.set()
    assert exits == [130]
    captured = capsys.readouterr()
    assert captured.out == '{"abandoned": "SIGINT: requests still in flight after 0.3 s"}\n'


def test_what_receives_in_flight_may_hide_is_said_as_an_upper_bound() -> None:
    text = hidden_at_most_text(
        Leftover(0, None, 0, 0, receives=5, receiving_up_to=50, receiving_until=0.0)
    )
    assert text == (
        "none received is left hidden; up to 50 more may be hidden by 5 receives in flight, "
        "until 00:00:00 UTC"
    )
    assert "no message is left hidden" not in text
    assert hidden_at_most_text(Leftover(0, None, 0, 0)) == "no message is left hidden"


LATE_SIGNAL = """
import os, signal, sys, time
from dlq_replay.cli.main import main
sys.argv = ["dlq-replay", "plan", "--json"]
code = main()
print("after the command", flush=False)
os.kill(os.getpid(), signal.{signame})
time.sleep(10)
sys.exit(99)  # not reached: the signal ends the process with the command's code
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_after_the_command_finished_keeps_its_exit_code_and_output(
    signum: signal.Signals,
) -> None:
    """A second Ctrl-C that lands as a finished command exits was a traceback (SIGINT) or a
    death by signal (SIGTERM, SIGHUP); it now ends the process with the command's own code,
    what it printed flushed."""
    done = subprocess.run(
        [sys.executable, "-c", LATE_SIGNAL.format(signame=signum.name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.rstrip().endswith("after the command")


CONSOLE = """
import atexit, logging, sys
from dlq_replay.cli.main import console
atexit.register(print, "interpreter teardown")
logging.getLogger("probe").addHandler(logging.StreamHandler(sys.stderr))
logging.getLogger("probe").warning("logged before the end")
sys.argv = ["dlq-replay", "plan", "--json", "--max-attempts", "{attempts}"]
console()
"""


@pytest.mark.parametrize(("attempts", "code"), [("3", 0), ("0", 2)])
def test_the_console_script_ends_without_the_interpreter_teardown(attempts: str, code: int) -> None:
    """`dlq-replay` ends once its command is done (0.1-0.3 s of teardown saved): everything it
    printed and logged goes out, and its exit code is kept; a usage error exits as usual."""
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE.format(attempts=attempts)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == code, done.stderr
    assert "logged before the end" in done.stderr
    if code == 0:
        assert done.stdout.rstrip().endswith("}")  # the whole JSON document
        assert "interpreter teardown" not in done.stdout
    else:
        assert "interpreter teardown" in done.stdout  # SystemExit: the usual way out


class _Collected:
    """An object whose collection runs a weakref callback, as the garbage collector runs them."""


def _collect_then_go_on(held: list[_Collected]) -> None:
    """Drop the last reference (its callback runs now), then go on working for up to 2 s: the
    signal must reach this code."""
    held.clear()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        pass


def test_a_signal_that_lands_in_a_weakref_callback_still_stops_the_command() -> None:
    """Python prints and drops an exception raised in a weakref callback (or a `__del__`): a
    signal that came just then would be lost, and the command would go on (it once ended 0
    after SIGHUP, tests/local/test_signals.py). It is delivered again in the command's code."""
    restore = install_default_handlers()
    try:
        held = [_Collected()]
        ref = weakref.ref(held[0], lambda _: signal.raise_signal(signal.SIGHUP))
        with pytest.raises(Interrupted) as stopped:
            _collect_then_go_on(held)
        assert stopped.value.signum == signal.SIGHUP
        assert ref() is None
    finally:
        restore()
