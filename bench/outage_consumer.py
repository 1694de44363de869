"""The outage scenario's own consumer of the main queue (bench/bench_outage.py).

Not the demo's: a plain receive loop. A message it fails is left alone, so it comes back when
the queue's visibility timeout ends and, after `maxReceiveCount` receives, goes to the DLQ, as
a real consumer's failures do. Until `recovery` it fails every message (the outage); from then
on it deletes what it receives, except the poison messages (always failed) and a random share
of the rest (`failure_rate`, drawn per message received). Every delete is counted by the id in
the message's body, so the harness can tell consumed, consumed twice and lost apart, and by the
replay count the copy carried (how many of its attempts the replay had spent).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlq_replay.consumer import replay_attempt

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import DeleteMessageBatchRequestEntryTypeDef

# Long poll of each receive: moto honours it, so an idle consumer costs next to no CPU.
WAIT_SECONDS = 1


def body_of(message_id: str) -> str:
    return json.dumps({"id": message_id})


def id_of(body: str) -> str:
    return str(json.loads(body)["id"])


@dataclass(frozen=True)
class Behaviour:
    """When and what the consumer fails."""

    recovery: float  # the clock's time the outage ends (the start, for no outage)
    failure_rate: float = 0.0
    poison: frozenset[str] = frozenset()
    seed: int = 1


class Consumer:
    """Receives from the main queue until stopped; `deliveries` counts each id deleted,
    `replays` the deleted copies by their replay count."""

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        behaviour: Behaviour,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sqs = sqs
        self._url = queue_url
        self._behaviour = behaviour
        self._clock = clock
        self._random = random.Random(behaviour.seed)
        self.deliveries: Counter[str] = Counter()
        self.replays: Counter[int] = Counter()
        self.received = 0
        self.last_consumed: float | None = None

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.poll_once()

    def poll_once(self) -> None:
        messages = self._sqs.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=WAIT_SECONDS,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        ).get("Messages", [])
        self.received += len(messages)
        now = self._clock()
        ids: dict[str, tuple[str, int]] = {}
        entries: list[DeleteMessageBatchRequestEntryTypeDef] = []
        for index, message in enumerate(messages):
            message_id = id_of(message["Body"])
            if not self._fails(message_id, now):
                ids[str(index)] = (message_id, replay_attempt(message))
                entries.append({"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]})
        if not entries:
            return
        response = self._sqs.delete_message_batch(QueueUrl=self._url, Entries=entries)
        for deleted in response.get("Successful", []):
            message_id, replays = ids[deleted["Id"]]
            self.deliveries[message_id] += 1
            self.replays[replays] += 1
            self.last_consumed = self._clock()

    def _fails(self, message_id: str, now: float) -> bool:
        behaviour = self._behaviour
        if now < behaviour.recovery or message_id in behaviour.poison:
            return True
        return self._random.random() < behaviour.failure_rate
