"""`dlq-replay demo --kind eventbridge`: a bus, a rule and its target queue, whose DLQ is replayed
until every event is delivered or parked. moto's deliveries never fail nor write a target's DLQ,
so the demo writes ("stages") the documented records of the events whose delivery is to fail."""

from __future__ import annotations

import functools
import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.queues import Arn, arn_account
from dlq_replay.core.settings import Settings
from dlq_replay.demo.emulator import (
    DLQ_VISIBILITY_TIMEOUT,
    MAIN_VISIBILITY_TIMEOUT,
    REGION,
    SAFETY_NET_MAX_RECEIVE_COUNT,
    SqsEmulator,
    create_queue,
    emulator_client,
    emulator_session,
    sqs_emulator,
)
from dlq_replay.demo.run import quiet_logger, replay_until_settled
from dlq_replay.demo.scenario import Accounting, DemoOptions, Tally, draw_kind, send_batches
from dlq_replay.demo.view import DemoView, exit_code, park_reasons, status_words
from dlq_replay.engine.replayer import Replayer
from dlq_replay.local.eventsource import read_queue_arn
from dlq_replay.targets.deliverer import Deliverer, TargetClients
from dlq_replay.targets.ledger import MemoryLedger

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
    """Operator queue ← the target's DLQ; a bus whose rule sends `demo.shop` to the target."""
    operator = sqs.create_queue(QueueName="demo-operator")["QueueUrl"]
    dlq = create_queue(
        sqs, "demo-orders-dlq", DLQ_VISIBILITY_TIMEOUT, operator, SAFETY_NET_MAX_RECEIVE_COUNT
    )
    target = create_queue(sqs, "demo-orders", MAIN_VISIBILITY_TIMEOUT)
    target_arn = read_queue_arn(sqs, target)
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
                "DeadLetterConfig": {"Arn": read_queue_arn(sqs, dlq)},
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


FATES = {
    "invalid": Fate.FORGED,
    "poison": Fate.RETIRED,
    "transient": Fate.FAILED,
    "ok": Fate.DELIVERED,
}


def plan_events(options: DemoOptions, rng: random.Random) -> dict[str, str]:
    """Each event's fate, drawn as the SQS demo draws its messages' kinds."""
    return {f"e{index:05d}": FATES[draw_kind(options, rng)] for index in range(options.messages)}


def publish(
    sqs: SQSClient, events: EventBridgeClient, wiring: Wiring, plan: Mapping[str, str]
) -> int:
    """Put the delivered events on the bus and stage the others' DLQ records; the number staged."""
    delivered = [event_id for event_id, fate in plan.items() if fate == Fate.DELIVERED]
    for start in range(0, len(delivered), 10):
        entries: list[Any] = [
            {
                "Source": SOURCE,
                "DetailType": DETAIL_TYPE,
                "Detail": json.dumps({"id": event_id, "fate": Fate.DELIVERED}),
                "EventBusName": BUS,
            }
            for event_id in delivered[start : start + 10]
        ]
        answer = events.put_events(Entries=entries)
        if answer.get("FailedEntryCount"):
            raise RuntimeError(f"the emulator refused events: {answer['Entries']}")
    staged = [dlq_record(id_, fate, wiring) for id_, fate in plan.items() if fate != Fate.DELIVERED]
    if failed := send_batches(sqs, wiring.dlq_url, staged):
        raise RuntimeError(f"the emulator refused DLQ records: {failed}")
    return len(staged)


# The documented error of each staged record: ERROR_CODE and ERROR_MESSAGE.
_ERRORS = {
    Fate.FAILED: ("THROTTLING", "demo: the target queue throttled every retry"),
    Fate.RETIRED: ("NO_RESOURCE", "demo: the target queue no longer exists"),
    Fate.FORGED: ("NO_PERMISSIONS", "demo: a record naming a queue that is not ours"),
}


def dlq_record(event_id: str, fate: str, wiring: Wiring) -> dict[str, Any]:
    """The SendMessage fields of EventBridge's DLQ record: the event, six documented attributes."""
    code, message = _ERRORS[fate]
    target = {Fate.RETIRED: wiring.retired_arn, Fate.FORGED: wiring.outside_arn}.get(
        fate, wiring.target_arn
    )
    attempts = "0" if fate == Fate.RETIRED else str(RETRY_ATTEMPTS)
    values = {
        "RULE_ARN": wiring.rule_arn,
        "TARGET_ARN": target,
        "ERROR_CODE": code,
        "ERROR_MESSAGE": message,
        "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttempts",
        "RETRY_ATTEMPTS": attempts,
    }
    event: dict[str, Any] = {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": DETAIL_TYPE,
        "source": SOURCE,
        "account": arn_account(wiring.bus_arn),
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [],
        "detail": {"id": event_id, "fate": fate},
    }
    return {
        "MessageBody": json.dumps(event),
        "MessageAttributes": {
            name: {"DataType": "String", "StringValue": value} for name, value in values.items()
        },
    }


def event_id_of(body: str) -> str:
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


EVENTBRIDGE_VIEW = DemoView(
    queues=("target", "dlq", "operator"),
    settled=("target", "dlq"),
    attempts=False,
    processed="delivered to the target's consumer",
    labels={
        "replay": "delivered by the replay at once",
        "release": "delivered by the replay after a wait",
        "defer": "waiting copy written to the DLQ",
        "hold": "waiting copy hidden again until due",
        "fail": "not replayed: unusable record",
        "failed": "not replayed yet: a call failed",
    },
)
STAGING_NOTE = (
    "moto delivers the bus's events but never fails a delivery nor writes a target's DLQ: the "
    "demo writes {staged} DLQ records itself, in EventBridge's documented shape (the event as "
    "body; RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION, "
    "RETRY_ATTEMPTS)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class EventBridgeResult(Accounting):
    """The EventBridge demo's: `delivered` to the target's consumer, and by whom."""

    delivered: int
    by_eventbridge: int  # of `delivered`: put on the bus and delivered by moto's EventBridge
    staged: int  # DLQ records the demo wrote in EventBridge's place


def run_eventbridge_demo(options: DemoOptions) -> int:
    result = eventbridge_demo(options)
    print(f"\n{summary(result)}")
    return exit_code(result)


def eventbridge_demo(
    options: DemoOptions, serve: Callable[[], AbstractContextManager[SqsEmulator]] = sqs_emulator
) -> EventBridgeResult:
    """Run it on the emulator `serve` starts."""
    rng = random.Random(options.seed)  # noqa: S311 - demo data, not cryptography
    tally = Tally()
    started = time.monotonic()
    with serve() as running:
        session = emulator_session()
        sqs = emulator_client(running.endpoint_url)
        events = session.client("events", endpoint_url=running.endpoint_url)
        wiring = create_wiring(sqs, events)
        settings = Settings(
            operator_queue_url=wiring.operator_url,
            max_attempts=options.max_attempts,
            backoff=options.backoff,
            dlq_kind="eventbridge",
            replay_target_arns=wiring.replay_targets,
            endpoint_url_sqs=running.endpoint_url,
        )
        replayer = Replayer(
            settings,
            sqs,
            logger=quiet_logger("dlq_replay.demo.replay"),
            rng=rng,
            on_outcome=tally.on_outcome,
            deliverer=Deliverer(
                TargetClients(session, endpoint_url=lambda _service: running.endpoint_url)
            ),
            ledger=MemoryLedger(),
        )
        plan = plan_events(options, rng)
        tally.expected = set(plan)
        staged = publish(sqs, events, wiring, plan)
        print(STAGING_NOTE.format(staged=staged), flush=True)
        done, accounting = replay_until_settled(
            running,
            replayer,
            wiring.dlq_url,
            options,
            tally,
            started=started,
            urls=(wiring.target_url, wiring.dlq_url, wiring.operator_url),
            workers=[functools.partial(consume_target, sqs, wiring.target_url, tally)],
            view=EVENTBRIDGE_VIEW,
            id_of=event_id_of,
        )
    return EventBridgeResult(
        **accounting,
        delivered=len(done),
        by_eventbridge=sum(1 for id_ in done if plan[id_] == Fate.DELIVERED),
        staged=staged,
        seconds=round(time.monotonic() - started, 1),
    )


def summary(result: EventBridgeResult) -> str:
    """The closing lines, as the SQS demo's: where every event ended, then who delivered it."""
    by_replay = result.delivered - result.by_eventbridge
    return (
        f"eventbridge demo {status_words(result)} in {result.seconds} s: sent {result.sent}, "
        f"delivered {result.delivered}, parked {result.parked} ({park_reasons(result)}), "
        f"not yet done {result.not_yet_done}, lost {result.lost}\n"
        f"delivered by EventBridge {result.by_eventbridge}, by the replay {by_replay}; "
        f"the demo staged {result.staged} DLQ records (moto writes none)"
    )
