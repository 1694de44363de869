"""`dlq-replay audit --follow ID` in a real process, on this machine's file trail (no table, no
AWS call): exit 0 when the move settled with nothing back, 1 with returns, 130 when SIGINT or
SIGTERM stops the wait (the move goes on; the process says how far it got), and any text as the
id is one line, exit 2, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from dlq_replay.follow.journal import FileFollowStore
from dlq_replay.follow.tag import FollowTag
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .support import assert_one_line_error, run_cli

MAIN = [sys.executable, "-m", "dlq_replay.cli.main"]


def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def move(tmp_path: Path, *, window: int, ended_ago: float, returned: int = 0) -> str:
    """A move's follow record in the file beside the local audit trail; its id."""
    action_id = uuid.uuid4().hex
    store = FileFollowStore(state(tmp_path) / "dlq-replay" / "follow.jsonl")
    now = time.time()
    store.started(action_id, window, now - 600, command="redrive")
    store.sent(action_id, 20, 1)
    store.finished(action_id, now - ended_ago)
    store.returns([FollowTag(action_id, f"k{i}") for i in range(returned)], now - ended_ago)
    return action_id


def follow(tmp_path: Path, action_id: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*MAIN, "audit", "--follow", action_id, "--poll-seconds", "0.2", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(state(tmp_path))},
    )


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=60)
    assert "Traceback" not in err, err
    return process.returncode, out, err


def test_a_move_settled_with_nothing_back_exits_0(tmp_path: Path) -> None:
    action_id = move(tmp_path, window=30, ended_ago=120)

    code, out, _ = finished(follow(tmp_path, action_id))

    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith(f"following action {action_id} (redrive): sent 20 · returned 0")
    assert lines[-1].endswith(": none of 20 came back"), lines


def test_a_move_settled_with_returns_exits_1_and_json_is_one_object(tmp_path: Path) -> None:
    action_id = move(tmp_path, window=30, ended_ago=120, returned=4)

    code, out, err = finished(follow(tmp_path, action_id, "--json"))

    assert code == 1, err
    answer = json.loads(out)  # the whole of stdout: one object
    assert answer["outcome"] == "settled"
    assert answer["followed"]["sent"] == 20
    assert answer["followed"]["returned"] == 4
    assert answer["followed"]["untracked"] == 1
    assert f"following action {action_id}" in err  # progress on stderr under --json


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_wait_with_130(tmp_path: Path, signum: int) -> None:
    action_id = move(tmp_path, window=3600, ended_ago=0, returned=2)
    process = follow(tmp_path, action_id)
    assert process.stdout is not None
    first = process.stdout.readline()  # it is waiting
    assert first.startswith(f"following action {action_id}"), first
    assert "settling until" in first, first

    process.send_signal(signum)
    code, out, _ = finished(process)

    assert code == 130
    assert out.splitlines()[-1] == "stopped before it settled: 2 of 20 came back so far"


def test_a_return_while_waiting_is_printed_as_it_comes(tmp_path: Path) -> None:
    action_id = move(tmp_path, window=3600, ended_ago=0)
    process = follow(tmp_path, action_id)
    assert process.stdout is not None
    process.stdout.readline()
    store = FileFollowStore(state(tmp_path) / "dlq-replay" / "follow.jsonl")

    store.returns([FollowTag(action_id, "a"), FollowTag(action_id, "b")], time.time())
    line = process.stdout.readline()
    process.send_signal(signal.SIGINT)
    code, _, _ = finished(process)

    assert line.strip() == "+2 returned (2 of 20)"
    assert code == 130


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=120))
def test_any_text_as_the_id_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """Hostile ids (controls, bidi, dashes, the empty text, lone surrogates as a shell passes
    undecodable bytes): refused by argparse or not found, one line, exit 2, no traceback."""
    result = run_cli(capsys, "audit", f"--follow={text}", "--poll-seconds", "0.1")

    assert_one_line_error(result, 2)
    assert result.out == ""
    line = result.err.strip().splitlines()[-1]
    assert not any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 for char in line), line
