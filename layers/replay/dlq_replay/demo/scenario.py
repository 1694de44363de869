"""The demo's traffic: its options, messages, flaky consumer, and the tally of what each saw."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.breaker.rule import BreakerPolicy
from dlq_replay.consumer import (
    ConsumerSettings,
    FailureOptions,
    ParkMessage,
    VisibilityHeartbeat,
    replay_attempt,
    settle_failure,
)
from dlq_replay.core.attributes import PARK_REASON_ATTRIBUTE
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.decision import Action
from dlq_replay.demo.emulator import (
    DLQ_VISIBILITY_TIMEOUT,
    MAIN_MAX_RECEIVE_COUNT_WITH_BACKOFF,
    MAIN_VISIBILITY_TIMEOUT,
)
from dlq_replay.engine.report import Outcome
from dlq_replay.ops.receiving import drain
from dlq_replay.sqs.depth import QueueDepth, queue_depth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import (
        ChangeMessageVisibilityBatchRequestEntryTypeDef,
        DeleteMessageBatchRequestEntryTypeDef,
    )

    from dlq_replay.breaker.worker_side import BreakerStats


@dataclass(frozen=True, slots=True)
class DemoOptions:
    messages: int = 300
    failure_rate: float = 0.3
    poison_rate: float = 0.05
    invalid_rate: float = 0.02  # the consumer parks these at once (ParkMessage)
    consumer_backoff: bool = False  # retry in the main queue with backoff before the DLQ
    max_attempts: int = 3
    base_seconds: int = 1
    multiplier: float = 2.0
    cap_seconds: int = 2
    jitter: str = "full"
    pollers: int = 2
    consumers: int = 2
    timeout_seconds: float | None = None  # None: settle_timeout's bound for the work
    seed: int | None = None
    live: bool = True
    outage_seconds: float = 0.0  # the consumer fails every message for this long at the start
    breaker: bool = True  # the outage breaker (--no-breaker: off)

    @property
    def backoff(self) -> BackoffPolicy:
        return BackoffPolicy(
            self.base_seconds, self.multiplier, self.cap_seconds, Jitter(self.jitter)
        )


# The breaker's window and pauses on the demo's time scale (seconds, not minutes); real thresholds.
DEMO_BREAKER_POLICY = BreakerPolicy(
    window_seconds=30.0, first_pause_seconds=5.0, max_pause_seconds=20.0
)


# Per attempt, at most: the backoff cap, then both visibility timeouts till a failed replay is back.
_SECONDS_PER_ATTEMPT_BEYOND_CAP = MAIN_VISIBILITY_TIMEOUT + DLQ_VISIBILITY_TIMEOUT
_SECONDS_PER_MESSAGE = 0.1
_SECONDS_BASE = 60


def settle_timeout(options: DemoOptions) -> float:
    """How long the demo waits: the option, else a bound growing with the work (never cut short)."""
    if options.timeout_seconds is not None:
        return options.timeout_seconds
    receives = main_max_receive_count(options) if options.consumer_backoff else 0
    per_attempt = (1 + receives) * options.cap_seconds + _SECONDS_PER_ATTEMPT_BEYOND_CAP
    work = options.messages * _SECONDS_PER_MESSAGE + options.max_attempts * per_attempt
    # An outage adds its length, and the breaker's last pause after it.
    outage = options.outage_seconds + DEMO_BREAKER_POLICY.max_pause_seconds * options.breaker
    return _SECONDS_BASE + work + (outage if options.outage_seconds else 0.0)


def main_max_receive_count(options: DemoOptions) -> int:
    return MAIN_MAX_RECEIVE_COUNT_WITH_BACKOFF if options.consumer_backoff else 1


@dataclass
class Tally:
    """What the demo saw, updated from several threads."""

    expected: set[str] = field(default_factory=set)
    processed: set[str] = field(default_factory=set)
    deliveries_by_attempt: Counter[int] = field(default_factory=Counter)  # first receives
    receives: Counter[str] = field(default_factory=Counter)  # by message id, every receive
    consumer_backoffs: int = 0  # failures the consumer hid for a backoff delay
    replay_outcomes: Counter[str] = field(default_factory=Counter)
    parked_by_reason: Counter[str] = field(default_factory=Counter)
    depths: dict[str, QueueDepth] = field(default_factory=dict)
    breaker: BreakerStats | None = None  # the outage breaker's, when it is on
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_outcome(self, outcome: Outcome) -> None:
        """The replay's `on_outcome` hook."""
        decision = outcome.decision
        with self.lock:
            if outcome.failure is not None:
                self.replay_outcomes["failed"] += 1
            elif decision.action is Action.PARK:
                reason = decision.reason.value if decision.reason is not None else "?"
                self.parked_by_reason[reason] += 1
            else:
                self.replay_outcomes[decision.action.value] += 1


ALWAYS = 10**9  # a poison message fails every delivery
INVALID = ParkMessage("invalid-order", "demo: the order has no sku")


def draw_kind(options: DemoOptions, rng: random.Random) -> str:
    """A message's kind (invalid, poison, transient or ok), drawn at the options' rates."""
    roll = rng.random()
    if roll < options.invalid_rate:
        return "invalid"
    if (roll := roll - options.invalid_rate) < options.poison_rate:
        return "poison"
    return "transient" if roll < options.poison_rate + options.failure_rate else "ok"


def send_batches(sqs: SQSClient, queue_url: str, entries: list[Any]) -> list[Any]:
    """SendMessageBatch ten entries at a time (each given its Id); the entries refused."""
    failed: list[Any] = []
    for start in range(0, len(entries), 10):
        batch: list[Any] = [
            {"Id": str(n), **entry} for n, entry in enumerate(entries[start : start + 10])
        ]
        failed += sqs.send_message_batch(QueueUrl=queue_url, Entries=batch).get("Failed", [])
    return failed


def send_messages(
    sqs: SQSClient, queue_url: str, options: DemoOptions, rng: random.Random
) -> set[str]:
    """Send the demo's messages; each body says how it will behave at the consumer."""
    bodies: dict[str, str] = {}
    for index in range(options.messages):
        kind = draw_kind(options, rng)
        fail_until = ALWAYS if kind == "poison" else 0
        if kind == "transient":
            fail_until = rng.randint(1, max(1, options.max_attempts - 1))
        message_id = f"m{index:05d}"
        bodies[message_id] = json.dumps({"id": message_id, "kind": kind, "fail_until": fail_until})
    send_batches(sqs, queue_url, [{"MessageBody": body} for body in bodies.values()])
    return set(bodies)


@dataclass(frozen=True, slots=True)
class Consumer:
    """How the demo's consumer fails: the consumer toolkit's settings, and the queue it reads."""

    queue_url: str
    settings: ConsumerSettings
    backoff: bool
    logger: logging.Logger
    outage_until: float = 0.0  # time.monotonic() before which every message fails


def consume(sqs: SQSClient, consumer: Consumer, tally: Tally, stop: threading.Event) -> None:
    """The flaky consumer; an emulator error is shrugged off (the message comes back later)."""
    while not stop.is_set():
        try:
            _consume_batch(sqs, consumer, tally)
        except (ClientError, BotoCoreError):
            stop.wait(0.5)


def _consume_batch(sqs: SQSClient, consumer: Consumer, tally: Tally) -> None:
    """One receive: a message fails its first `fail_until` deliveries, an invalid one is parked;
    what succeeded is deleted and what goes to the DLQ given back, in one batch call each."""
    queue_url = consumer.queue_url
    messages = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=1,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    ).get("Messages", [])
    done: list[DeleteMessageBatchRequestEntryTypeDef] = []  # Id: the demo's id of the message
    give_back: list[ChangeMessageVisibilityBatchRequestEntryTypeDef] = []
    for index, message in enumerate(messages):
        body = json.loads(message["Body"])
        with tally.lock:
            if message.get("Attributes", {}).get("ApproximateReceiveCount") == "1":
                tally.deliveries_by_attempt[replay_attempt(message)] += 1
            tally.receives[str(body["id"])] += 1
            receives = tally.receives[str(body["id"])]
        error: Exception | None = None
        with VisibilityHeartbeat(sqs, queue_url, message["ReceiptHandle"], timeout=5):
            if time.monotonic() < consumer.outage_until:
                error = RuntimeError("demo: the consumer is down")
            elif body["kind"] == "invalid":
                error = INVALID
            elif receives <= int(body["fail_until"]):
                error = RuntimeError("demo: a transient failure")
        if error is None:
            done.append({"Id": str(body["id"]), "ReceiptHandle": message["ReceiptHandle"]})
        elif consumer.backoff or isinstance(error, ParkMessage):
            settings, logger = consumer.settings, consumer.logger
            parked = settle_failure(
                sqs, queue_url, message, error, settings, options=FailureOptions(logger=logger)
            )
            with tally.lock:
                if parked:
                    tally.parked_by_reason[f"consumer:{INVALID.reason}"] += 1
                else:
                    tally.consumer_backoffs += 1
        else:
            # Give it back at once: the next receive exceeds maxReceiveCount → DLQ.
            receipt = message["ReceiptHandle"]
            give_back.append({"Id": str(index), "ReceiptHandle": receipt, "VisibilityTimeout": 0})
    if give_back:
        sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=give_back)
    if done:
        deleted = sqs.delete_message_batch(QueueUrl=queue_url, Entries=done)
        with tally.lock:  # a delete that failed: the message comes back, not yet processed
            tally.processed.update(entry["Id"] for entry in deleted.get("Successful", []))


def watch_depths(
    sqs: SQSClient, queues: Mapping[str, str], tally: Tally, stop: threading.Event
) -> None:
    """Every half second, the depth of each queue (label → URL) into the tally."""
    while not stop.wait(0.5):
        for label, url in queues.items():
            try:
                depth = queue_depth(sqs, url)
            except (ClientError, BotoCoreError):
                continue  # the display shows the last reading
            with tally.lock:
                tally.depths[label] = depth


def message_id_of(body: str) -> str:
    return str(json.loads(body)["id"])


def drain_parked(sqs: SQSClient, queue_url: str, id_of: Callable[[str], str]) -> dict[str, str]:
    """Read (and delete) every parked message: id (`id_of` its body) → park reason."""
    parked: dict[str, str] = {}
    for message in drain(sqs, queue_url):
        reason = message.get("MessageAttributes", {}).get(PARK_REASON_ATTRIBUTE)
        text = reason.get("StringValue", "?") if reason else "?"
        parked[id_of(message["Body"])] = text
    return parked


@dataclass(frozen=True, slots=True, kw_only=True)
class Accounting:
    """Where every sent message ended, as both demos count it: `parked`, `not_yet_done` and `lost`
    add up to `sent` with the result's own count of those done."""

    sent: int
    parked: int
    not_yet_done: int
    lost: int
    parked_by_reason: dict[str, int]
    seconds: float
    completed: bool
    interrupted: bool = False
    timeout_seconds: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoResult(Accounting):
    """The SQS demo's: `processed` by the consumer, and how."""

    processed: int
    deliveries_by_attempt: dict[int, int]
    replays: int  # copies the replay sent to the main queue (replayed or released)
    consumer_backoffs: int  # failures the consumer hid for a backoff delay (--consumer-backoff)
    breaker: bool = False  # the outage breaker was on
    breaker_openings: int = 0
    breaker_open_seconds: float = 0.0
    outage_seconds: float = 0.0  # the outage the scenario staged (0: none)
