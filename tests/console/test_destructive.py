"""Purge and delete from the console: behind the queue's name typed back (the CLI's check), the
chosen messages only, a tally that adds up, and both in the audit trail. Plain HTTP."""

from __future__ import annotations

import re
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.demo.emulator import create_queues

from .support import Browser, depth, park, served

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


def finished(browser: Browser, answer_body: str) -> dict[str, Any]:
    job_id = re.search(r'data-job="(\d+)"', answer_body)
    assert job_id, answer_body
    deadline = time.monotonic() + 20
    while (job := browser.json(f"/api/jobs/{job_id.group(1)}"))["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return job  # type: ignore[no-any-return]


def test_delete_and_purge_need_the_name_typed_back(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"del{uuid.uuid4().hex[:6]}")
    name = queues.operator.rsplit("/", 1)[-1]
    park(client, queues.operator, [f"keep {n}" for n in range(5)])
    park(client, queues.operator, [f"drop {n}" for n in range(3)], reason="rejected")
    with served(endpoint, queues) as console:
        browser = Browser(console.url)
        browser.request(f"/q/{name}")
        deadline = time.monotonic() + 20
        while browser.json(f"/api/q/{name}/snapshot")["state"] == "reading":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        csrf = browser.csrf()
        order = {"scope": "filter", "reason": "rejected", "csrf": csrf}

        wrong = finished(
            browser, browser.request(f"/q/{name}/delete", {**order, "confirm": "x"}).body
        )
        assert wrong["state"] == "failed"
        assert name in wrong["error"]
        assert depth(client, queues.operator) == 8

        done = finished(
            browser, browser.request(f"/q/{name}/delete", {**order, "confirm": name}).body
        )
        assert done["state"] == "done", done
        assert dict(done["rows"])["deleted"] == 3
        assert done["adds_up"]
        assert depth(client, queues.operator) == 5
        bodies = [
            m["Body"]
            for m in client.receive_message(QueueUrl=queues.operator, MaxNumberOfMessages=10)[
                "Messages"
            ]
        ]
        assert all(body.startswith("keep") for body in bodies)

        refused = browser.request(f"/q/{name}/purge", {"confirm": name.upper(), "csrf": csrf})
        assert finished(browser, refused.body)["state"] == "failed"
        purged = browser.request(f"/q/{name}/purge", {"confirm": name, "csrf": csrf})
        assert finished(browser, purged.body)["state"] == "done"
        assert depth(client, queues.operator) == 0

        audit = browser.request("/audit").body
        assert re.search(r"<td>delete</td><td>console</td>", audit)
        assert re.search(r"<td>purge</td><td>console</td>", audit)
