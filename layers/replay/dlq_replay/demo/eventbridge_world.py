"""The world of `dlq-replay demo --kind eventbridge`: an event bus, a rule, its target queue with
the target's DLQ, and the events, some of which EventBridge failed to deliver.

moto's EventBridge routes the bus's events to the rule's SQS target, but its deliveries never
fail and it never writes a target's DLQ. So the demo writes those records itself ("stages"
them): for each event whose delivery is to fail, the record EventBridge documents for a
target's DLQ (the event as body; RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE,
EXHAUSTED_RETRY_CONDITION and RETRY_ATTEMPTS as message attributes). Everything after that is
the replay's own work, on the emulator: the same local event source and replayer as `make
demo`, with DLQ_KIND=eventbridge and REPLAY_TARGET_ARNS naming the target queue.
"""

from __future__ import annotations

import json
import random
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.queues import Arn, arn_account
from dlq_replay.demo.emulator import (
    DLQ_VISIBILITY_TIMEOUT,
    MAIN_VISIBILITY_TIMEOUT,
    REGION,
    SAFETY_NET_MAX_RECEIVE_COUNT,
)
from dlq_replay.demo.scenario import DemoOptions, Tally

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_sqs import SQSClient

BUS = "demo-bus"
RULE = "demo-orders"
SOURCE = "demo.shop"
DETAIL_TYPE = "OrderPlaced"
# The rule's retry policy, which the staged records say was exhausted.
RETRY_ATTEMPTS = 2
TARGET_ID = "orders-queue"


class Fate:
    """What happens to an event (its `detail.fate`)."""

    DELIVERED = "delivered"  # EventBridge delivers it to the target queue
    FAILED = "failed"  # its delivery fails (throttled): the target's DLQ, then the replay
    RETIRED = "retired"  # its record names a retired queue, which its rule no longer has: parked
    FORGED = "forged"  # its record names a queue outside REPLAY_TARGET_ARNS: parked at once


@dataclass(frozen=True, slots=True)
class Wiring:
    """The bus, the rule and the queues of the demo, by ARN and URL."""

    bus_arn: str
    rule_arn: str
    target_url: str
    target_arn: str
    dlq_url: str
    operator_url: str
    retired_arn: str  # still listed in REPLAY_TARGET_ARNS, but the queue is gone
    outside_arn: str  # a queue the replay must never be made to send to

    @property
    def replay_targets(self) -> frozenset[str]:
        return frozenset({self.target_arn, self.retired_arn})


def create_wiring(sqs: SQSClient, events: EventBridgeClient) -> Wiring:
    """Operator queue ← the target's DLQ (redrive as the template's safety net); a bus whose
    rule sends `demo.shop` events to the target queue, with that DLQ as its DeadLetterConfig."""

    def arn(url: str) -> str:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return attributes["Attributes"]["QueueArn"]

    operator = sqs.create_queue(QueueName="demo-operator")["QueueUrl"]
    safety_net = {
        "deadLetterTargetArn": arn(operator),
        "maxReceiveCount": SAFETY_NET_MAX_RECEIVE_COUNT,
    }
    dlq = sqs.create_queue(
        QueueName="demo-orders-dlq",
        Attributes={
            "VisibilityTimeout": str(DLQ_VISIBILITY_TIMEOUT),
            "RedrivePolicy": json.dumps(safety_net),
        },
    )["QueueUrl"]
    target = sqs.create_queue(
        QueueName="demo-orders", Attributes={"VisibilityTimeout": str(MAIN_VISIBILITY_TIMEOUT)}
    )["QueueUrl"]
    target_arn = arn(target)
    bus_arn = events.create_event_bus(Name=BUS)["EventBusArn"]
    rule_arn = events.put_rule(
        Name=RULE, EventBusName=BUS, EventPattern=json.dumps({"source": [SOURCE]})
    )["RuleArn"]
    events.put_targets(
        Rule=RULE,
        EventBusName=BUS,
        Targets=[
            {
                "Id": TARGET_ID,
                "Arn": target_arn,
                "DeadLetterConfig": {"Arn": arn(dlq)},
                "RetryPolicy": {
                    "MaximumRetryAttempts": RETRY_ATTEMPTS,
                    "MaximumEventAgeInSeconds": 60,
                },
            }
        ],
    )
    target_queue = Arn.queue(target_arn)
    return Wiring(
        bus_arn=bus_arn,
        rule_arn=rule_arn,
        target_url=target,
        target_arn=target_arn,
        dlq_url=dlq,
        operator_url=operator,
        retired_arn=target_queue.sibling("demo-orders-v1"),
        outside_arn=target_queue.sibling("not-ours"),
    )


def plan_events(options: DemoOptions, rng: random.Random) -> dict[str, str]:
    """Each event's id and fate, drawn as the SQS demo draws its messages: `--invalid-rate`
    forged, `--poison-rate` retired, `--failure-rate` failed, the rest delivered."""
    plan: dict[str, str] = {}
    for index in range(options.messages):
        roll = rng.random()
        if roll < options.invalid_rate:
            fate = Fate.FORGED
        elif (roll := roll - options.invalid_rate) < options.poison_rate:
            fate = Fate.RETIRED
        elif roll < options.poison_rate + options.failure_rate:
            fate = Fate.FAILED
        else:
            fate = Fate.DELIVERED
        plan[f"e{index:05d}"] = fate
    return plan


def publish(
    sqs: SQSClient, events: EventBridgeClient, wiring: Wiring, plan: Mapping[str, str]
) -> int:
    """Put the delivered events on the bus (moto routes them to the target queue) and stage the
    DLQ records of the others; the number staged."""
    delivered = [event_id for event_id, fate in plan.items() if fate == Fate.DELIVERED]
    for start in range(0, len(delivered), 10):
        entries: list[Any] = [
            {
                "Source": SOURCE,
                "DetailType": DETAIL_TYPE,
                "Detail": json.dumps(_detail(event_id, Fate.DELIVERED)),
                "EventBusName": BUS,
            }
            for event_id in delivered[start : start + 10]
        ]
        answer = events.put_events(Entries=entries)
        if answer.get("FailedEntryCount"):
            raise RuntimeError(f"the emulator refused events: {answer['Entries']}")
    staged = [(event_id, fate) for event_id, fate in plan.items() if fate != Fate.DELIVERED]
    for start in range(0, len(staged), 10):
        records: list[Any] = [
            {"Id": str(n), **dlq_record(event_id, fate, wiring)}
            for n, (event_id, fate) in enumerate(staged[start : start + 10])
        ]
        answer_batch = sqs.send_message_batch(QueueUrl=wiring.dlq_url, Entries=records)
        if answer_batch.get("Failed"):
            raise RuntimeError(f"the emulator refused DLQ records: {answer_batch['Failed']}")
    return len(staged)


# The documented error of each staged record: ERROR_CODE, ERROR_MESSAGE, and the retry
# condition EventBridge exhausted (a missing queue is not retried: it goes to the DLQ at once).
_ERRORS = {
    Fate.FAILED: (
        "THROTTLING",
        "demo: the target queue throttled every retry",
        "MaximumRetryAttempts",
    ),
    Fate.RETIRED: (
        "NO_RESOURCE",
        "demo: the target queue no longer exists",
        "MaximumRetryAttempts",
    ),
    Fate.FORGED: (
        "NO_PERMISSIONS",
        "demo: a record naming a queue that is not ours",
        "MaximumRetryAttempts",
    ),
}


def dlq_record(event_id: str, fate: str, wiring: Wiring) -> dict[str, Any]:
    """The SendMessage fields of the record EventBridge writes to a target's DLQ for this event:
    the event as the target would have received it, and the six documented attributes."""
    code, message, condition = _ERRORS[fate]
    target = {Fate.RETIRED: wiring.retired_arn, Fate.FORGED: wiring.outside_arn}.get(
        fate, wiring.target_arn
    )
    attempts = "0" if fate == Fate.RETIRED else str(RETRY_ATTEMPTS)
    values = {
        "RULE_ARN": wiring.rule_arn,
        "TARGET_ARN": target,
        "ERROR_CODE": code,
        "ERROR_MESSAGE": message,
        "EXHAUSTED_RETRY_CONDITION": condition,
        "RETRY_ATTEMPTS": attempts,
    }
    return {
        "MessageBody": json.dumps(_event(event_id, fate, wiring)),
        "MessageAttributes": {
            name: {"DataType": "String", "StringValue": value} for name, value in values.items()
        },
    }


def _event(event_id: str, fate: str, wiring: Wiring) -> dict[str, Any]:
    """The event as EventBridge hands it to a target (no input transformer)."""
    account = arn_account(wiring.bus_arn)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": DETAIL_TYPE,
        "source": SOURCE,
        "account": account,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [],
        "detail": _detail(event_id, fate),
    }


def _detail(event_id: str, fate: str) -> dict[str, str]:
    return {"id": event_id, "fate": fate}


def event_id_of(body: str) -> str:
    """The demo's id of an event, from the body of a message that carries it."""
    return str(json.loads(body)["detail"]["id"])


def consume_target(sqs: SQSClient, queue_url: str, tally: Tally, stop: threading.Event) -> None:
    """The target queue's consumer: takes every event (the failures were in the delivery)."""
    while not stop.is_set():
        try:
            messages = sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
            ).get("Messages", [])
            for message in messages:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                with tally.lock:
                    tally.processed.add(event_id_of(message["Body"]))
        except (ClientError, BotoCoreError):
            stop.wait(0.5)
