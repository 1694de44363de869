"""Stopping the console mid-redrive (Ctrl-C: SIGINT to `dlq-replay console`) ends the action as
an interrupted `dlq-replay redrive` ends: nothing lost, nothing left hidden, the tally it
prints is what the queues hold, and the audit trail records it `interrupted`, exit code 130."""

from __future__ import annotations

import json
import re
import signal
import sys
import time
import uuid
from typing import TYPE_CHECKING

import pytest
from dlq_replay.demo.emulator import create_queues

from .support import Browser, depth, park, spawned

if TYPE_CHECKING:
    from pathlib import Path

    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator
TOTAL = 40


def test_stopping_the_console_mid_redrive_loses_nothing(
    endpoint: str, client: SQSClient, tmp_path: Path
) -> None:
    queues = create_queues(client, prefix=f"int{uuid.uuid4().hex[:6]}")
    name = queues.operator.rsplit("/", 1)[-1]
    park(client, queues.operator, [f"order {n}" for n in range(TOTAL)])
    command = [
        sys.executable, "-m", "dlq_replay.cli.main", "console", "--endpoint-url", endpoint,
        "--main-queue-url", queues.main, "--operator-queue-url", queues.operator,
    ]  # fmt: skip
    process = spawned(command, tmp_path)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.search(r"(http://[^/]+/[A-Za-z0-9_-]{32})/$", first.strip())
        assert found, first
        browser = Browser(found.group(1))
        assert browser.request("/").status == 200
        browser.request(f"/q/{name}")
        deadline = time.monotonic() + 20
        while browser.json(f"/api/q/{name}/snapshot")["state"] == "reading":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        order = {"scope": "filter", "to": "main", "rate": "8", "csrf": browser.csrf()}
        assert browser.request(f"/q/{name}/redrive", order).status == 200
        while _moved(browser.json("/api/jobs/1")) < 5:
            assert time.monotonic() < deadline + 20
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    moved = int(re.search(r"moved \(sent and deleted\): (\d+)", out).group(1))  # type: ignore[union-attr]
    seen = int(re.search(r"seen \(received\): (\d+)", out).group(1))  # type: ignore[union-attr]
    assert 5 <= moved < TOTAL, out
    assert "rerun to continue, nothing is lost" in out
    # The trail says what the page said: stopped, as a Ctrl-C'd `dlq-replay redrive` is.
    trail = (tmp_path / "dlq-replay" / "audit.jsonl").read_text().splitlines()
    (end,) = [record for line in trail if (record := json.loads(line))["phase"] == "end"]
    assert (end["command"], end["origin"]) == ("redrive", "console")
    assert (end["outcome"], end["exit_code"]) == ("interrupted", 130)
    assert end["tally"]["moved"] == moved
    assert end["tally"]["interrupted"] == "console stopped"
    assert end["left"] == "no message is left hidden"
    assert seen <= TOTAL
    # Nothing lost, nothing hidden: what the tally says moved is in the main queue, the rest
    # is back in the operator queue, visible.
    attributes = client.get_queue_attributes(
        QueueUrl=queues.operator, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
    assert depth(client, queues.main) == moved
    assert depth(client, queues.operator) == TOTAL - moved


def _moved(job: dict[str, object]) -> int:
    rows = dict(job["rows"])  # type: ignore[call-overload]
    return int(rows.get("moved (sent and deleted)", 0))
