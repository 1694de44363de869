"""A redrive from the console is followed as the CLI's is: each copy carries
`dlq-replay-action` = `<the job's action id>/<moved message id>`, the job says how to follow it,
and the move's follow record (beside the audit trail) holds what it sent and its window."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from dlq_replay.demo.emulator import create_queues
from dlq_replay.follow.journal import FileFollowStore
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.receiving import drain

from .support import Browser, served
from .test_actions_stop import start_redrive, until

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

pytestmark = pytest.mark.emulator


def test_a_console_redrive_job_tags_its_copies_and_records_its_follow(
    endpoint: str, client: SQSClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    queues = create_queues(client, prefix=f"fol{uuid.uuid4().hex[:6]}")
    reason: dict[str, MessageAttributeValueTypeDef] = {
        "dlq-replay-park-reason": {"DataType": "String", "StringValue": "max-attempts"}
    }
    ids = [
        client.send_message(
            QueueUrl=queues.operator, MessageBody=f"order {n}", MessageAttributes=reason
        )["MessageId"]
        for n in range(12)
    ]
    name = queues.operator.rsplit("/", 1)[-1]

    with served(endpoint, queues) as console:
        browser = Browser(console.url)
        job_id = start_redrive(browser, name, rate="1000")
        job = console.console.job(job_id)
        until(lambda: job.state != "running")
        page = browser.request(f"/jobs/{job_id}").body

    assert job.state == "done", (job.error, job.lines)
    action_id = job.action_id
    assert action_id is not None
    line = f"followed as action {action_id}: dlq-replay audit --follow {action_id}"
    assert line in job.lines
    assert line in page
    deadline = time.monotonic() + 10
    copies = drain(client, queues.main)
    while len(copies) < len(ids) and time.monotonic() < deadline:
        copies += drain(client, queues.main)
    tags = sorted(m["MessageAttributes"][FOLLOW_ATTRIBUTE]["StringValue"] for m in copies)
    assert tags == sorted(f"{action_id}/{i}" for i in ids)
    move = FileFollowStore(tmp_path / "dlq-replay" / "follow.jsonl").follow(action_id)
    assert move is not None
    assert (move.sent, move.untracked, move.command) == (12, 0, "redrive")
    main = queue_info(client, queues.main)
    assert main.redrive is not None
    assert (
        move.window_seconds == (main.redrive.max_receive_count + 1) * main.visibility_timeout + 20
    )
    assert move.sent_at is not None
