"""A console action runs in the console, not in its page: left unasked it keeps running (no
watchdog), and a stop, by its Stop button or by the console's own stop, ends it as a stopped
`dlq-replay redrive` ends, in the page ("stopped") and in the audit trail (`interrupted`, exit
code 130, the tally so far and what was left), with the keys of the CLI's end record."""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.demo.emulator import create_queues

from .support import Browser, depth, park, served, spawned

if TYPE_CHECKING:
    from dlq_replay.demo.emulator import Queues
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator
MOVED = "moved (sent and deleted)"


def trail(state: Path) -> list[dict[str, Any]]:
    """The records of this machine's audit file (XDG_STATE_HOME=state)."""
    path = state / "dlq-replay" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def end_of(state: Path, action_id: str) -> dict[str, Any]:
    (end,) = [r for r in trail(state) if r["action_id"] == action_id and r["phase"] == "end"]
    return end


def until(check: Any, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
    return found


def start_redrive(browser: Browser, name: str, rate: str) -> str:
    """The filter's whole result (every parked message) to the main queue, at `rate` a
    second; the job's id."""
    browser.request(f"/q/{name}")
    until(lambda: browser.json(f"/api/q/{name}/snapshot")["state"] != "reading")
    order = {"scope": "filter", "to": "main", "rate": rate, "csrf": browser.csrf()}
    answer = browser.request(f"/q/{name}/redrive", order)
    found = re.search(r'data-job="(\d+)"', answer.body)
    assert found, answer.body
    return found.group(1)


def parked(client: SQSClient, prefix: str, count: int) -> tuple[Queues, str]:
    queues = create_queues(client, prefix=f"{prefix}{uuid.uuid4().hex[:6]}")
    park(client, queues.operator, [f"order {n}" for n in range(count)])
    return queues, queues.operator.rsplit("/", 1)[-1]


def assert_stopped_end(end: dict[str, Any], by: str, moved: int, total: int) -> None:
    assert (end["outcome"], end["exit_code"]) == ("interrupted", 130), end
    assert end["origin"] == "console"
    assert end["tally"]["interrupted"] == by
    assert end["tally"]["moved"] == moved
    assert end["tally"]["adds_up"] is True
    assert end["selection_size"] == total
    assert end["left"] == "no message is left hidden"


def test_a_redrive_left_unasked_keeps_running_and_its_stop_button_ends_it_interrupted(
    endpoint: str, client: SQSClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    total = 30
    queues, name = parked(client, "left", total)
    with served(endpoint, queues) as console:
        browser = Browser(console.url)
        job_id = start_redrive(browser, name, rate="2")
        job = console.console.job(job_id)
        asked = time.monotonic()

        # Nobody asks for its progress: the page is closed, or the tab frozen.
        time.sleep(3.5)

        assert console.asked(f"/api/jobs/{job_id}", since=asked) == 0
        assert console.asked(f"/jobs/{job_id}/fragment", since=asked) == 0
        assert job.state == "running"
        assert not job.stop.is_set()
        assert job in console.console.jobs.running()
        assert "pages" not in {thread.name for thread in threading.enumerate()}  # no watchdog
        seen = job.seen
        assert until(lambda: job.seen > seen)  # and it goes on moving

        assert browser.request(f"/jobs/{job_id}/stop", {"csrf": browser.csrf()}).status == 200
        until(lambda: job.state != "running")
        page = browser.request(f"/jobs/{job_id}").body

    assert job.state == "stopped"
    assert '<strong id="job-state">stopped</strong>' in page
    assert "stopped: rerun to continue, nothing is lost" in job.lines
    moved = dict(job.rows)[MOVED]
    assert 0 < moved < total
    assert job.action_id is not None
    assert_stopped_end(end_of(tmp_path, job.action_id), "Stop button", moved, total)
    assert depth(client, queues.main) == moved
    assert depth(client, queues.operator) == total - moved


def test_the_console_s_stop_ends_a_redrive_as_the_cli_s_interrupted_redrive_ends(
    endpoint: str, client: SQSClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stop_all()` (the console's SIGINT and SIGTERM) and Ctrl-C to `dlq-replay redrive`: two
    end records `interrupted`, 130, with the same keys, in the record and in its tally."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    total = 30
    queues, name = parked(client, "all", total)
    with served(endpoint, queues) as console:
        browser = Browser(console.url)
        job = console.console.job(start_redrive(browser, name, rate="6"))
        until(lambda: dict(job.rows).get(MOVED, 0) >= 3)

        lines = console.console.jobs.stop_all()

    assert job.state == "stopped"
    assert any("stopped with the console" in line for line in lines), lines
    moved = dict(job.rows)[MOVED]
    assert job.action_id is not None
    stopped = end_of(tmp_path, job.action_id)
    assert_stopped_end(stopped, "console stopped", moved, total)

    cli_queues, _ = parked(client, "cli", total)
    interrupted = cli_redrive_interrupted(endpoint, client, cli_queues, tmp_path)

    assert (interrupted["outcome"], interrupted["exit_code"]) == ("interrupted", 130)
    assert interrupted["origin"] == "cli"
    assert interrupted["tally"]["interrupted"] == "SIGINT"
    assert interrupted["left"] == "no message is left hidden"
    assert set(interrupted) == set(stopped)
    assert set(interrupted["tally"]) == set(stopped["tally"])


def cli_redrive_interrupted(
    endpoint: str, client: SQSClient, queues: Queues, state: Path
) -> dict[str, Any]:
    """`dlq-replay redrive` of the operator queue at 6 a second, Ctrl-C once some moved; its
    end record."""
    command = [
        sys.executable, "-m", "dlq_replay.cli.main", "redrive", "--endpoint-url", endpoint,
        "--from", queues.operator, "--to", queues.main, "--client-side", "--rate", "6",
        "--json",
    ]  # fmt: skip
    process = spawned(command, state)
    try:
        until(lambda: depth(client, queues.main) >= 3)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert json.loads(out)["interrupted"] == "SIGINT"
    (end,) = [r for r in trail(state) if r["phase"] == "end" and r["origin"] == "cli"]
    return end
