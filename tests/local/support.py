"""Helpers for the tests of what runs outside Lambda (plain functions and small classes).

The queues, the real redrive and draining come from `integration.harness`; what is here is
specific to the local runtime: messages that carry their own id in the body (so a test can
account for every one of them wherever it ends up), recording handlers for the event source,
and the `dlq-replay` command as a subprocess.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dlq_replay.sqs.depth import queue_depth
from integration.harness import drain_within

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef


def body_of(message_id: str) -> str:
    return json.dumps({"id": message_id})


def id_of(body: str) -> str:
    return str(json.loads(body)["id"])


def send_ids(sqs: SQSClient, queue_url: str, ids: Sequence[str]) -> None:
    """One message per id (body `{"id": ...}`), in batches of 10."""
    for start in range(0, len(ids), 10):
        entries: list[SendMessageBatchRequestEntryTypeDef] = [
            {"Id": str(index), "MessageBody": body_of(message_id)}
            for index, message_id in enumerate(ids[start : start + 10])
        ]
        response = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        assert not response.get("Failed"), response.get("Failed")


def drain_ids(sqs: SQSClient, queue_url: str) -> list[str]:
    """Receive and delete every message visible now; the ids their bodies carry."""
    return [id_of(m["Body"]) for m in drain_within(sqs, queue_url, batches=200)]


def depth(sqs: SQSClient, queue_url: str) -> dict[str, int]:
    found = queue_depth(sqs, queue_url)
    return {"visible": found.visible, "in_flight": found.in_flight, "delayed": found.delayed}


def assert_partition(sent: Iterable[str], places: Mapping[str, Sequence[str]]) -> None:
    """Every sent id is in exactly one place (no loss, no duplicate), and nothing else is."""
    sent_set = set(sent)
    counts: Counter[str] = Counter()
    for ids in places.values():
        counts.update(ids)
    lost = sorted(sent_set - set(counts))
    twice = sorted(i for i, n in counts.items() if n > 1)
    unknown = sorted(set(counts) - sent_set)
    where = {name: len(ids) for name, ids in places.items()}
    assert not lost, f"lost {len(lost)} messages: {lost[:5]} (found: {where})"
    assert not twice, f"{len(twice)} messages in two places: {twice[:5]} (found: {where})"
    assert not unknown, f"unexpected messages: {unknown[:5]}"


class RecordingHandler:
    """A Lambda-style handler that records every event and fails the bodies it is told to."""

    def __init__(self, fail_ids: Iterable[str] = ()) -> None:
        self.fail_ids = set(fail_ids)
        self.events: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        failures = []
        with self.lock:
            self.events.append(event)
            self.threads.add(threading.current_thread().name)
            for record in event["Records"]:
                body_id = id_of(record["body"])
                self.calls[body_id] += 1
                if body_id in self.fail_ids:
                    failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    @property
    def batch_sizes(self) -> list[int]:
        return [len(event["Records"]) for event in self.events]


class WiredQueues(Protocol):
    """The queues of a replay: the demo's (`create_queues`) or the operator tests' (`Queues`)."""

    @property
    def dlq(self) -> str: ...
    @property
    def main(self) -> str: ...
    @property
    def operator(self) -> str: ...


def worker_command(queues: WiredQueues, endpoint: str, *options: str) -> list[str]:
    """`dlq-replay worker` on `queues` through `endpoint`, then `options`."""
    return [
        *dlq_replay_command(),
        "worker",
        "--dlq-url",
        queues.dlq,
        "--main-queue-url",
        queues.main,
        "--operator-queue-url",
        queues.operator,
        "--endpoint-url",
        endpoint,
        *options,
    ]


def dlq_replay_command() -> list[str]:
    """The `dlq-replay` console script of this environment (or the same entry point)."""
    script = Path(sys.executable).with_name("dlq-replay")
    if script.exists():
        return [str(script)]
    return [
        sys.executable,
        "-c",
        "from dlq_replay.cli.main import console; console()",
    ]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for a `dlq-replay` subprocess: nothing of the developer's AWS setup or of
    the function's variables leaks in (the audit trail's file stays the test's: XDG_STATE_HOME);
    `extra` is added on top."""
    keep = (
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "PYTHONPATH",
        "SYSTEMROOT",
        "TMPDIR",
        "XDG_STATE_HOME",
    )
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env
