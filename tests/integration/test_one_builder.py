"""The replay and `redrive --to source` build what they send with one builder (`sqs_copy`,
`delivery_of`): for each kind, the redrive's copy or delivery of a record received from its
DLQ is the replay's, but for the key of its FIFO deduplication id. An EventBridge record whose
rule is in another account carries the DLQ's account the same way in both, so the rule is read
on its bus by ARN by both."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest
from dlq_replay.core.backoff import BackoffPolicy
from dlq_replay.core.decision import Action
from dlq_replay.core.kinds import RecordKind
from dlq_replay.core.messages import InboundMessage, OutboundMessage
from dlq_replay.core.settings import Settings
from dlq_replay.engine.decide import RecordCase
from dlq_replay.engine.kinds import delivery_of, recognise
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.redrive import RedriveRequest, plan_copy
from dlq_replay.targets.delivery import Delivery
from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, MessageTypeDef

from .harness import ReplayQueues, Sqs

pytestmark = pytest.mark.emulator

OTHER_ACCOUNT = "210987654321"
FUNCTION = "arn:aws:lambda:us-east-1:{account}:function:orders"
TARGET_QUEUE = "arn:aws:sqs:us-east-1:{account}:orders-target"
RULE = "arn:aws:events:us-east-1:{account}:rule/orders"
EVENT = '{"version":"0","id":"e-1","detail-type":"Order","source":"shop","detail":{"n":1}}'


class Least:
    """The backoff's draw at its floor: a delay of 0, which a serverless target takes now."""

    def randint(self, a: int, b: int) -> int:
        return a


def text(value: str) -> MessageAttributeValueTypeDef:
    return {"DataType": "String", "StringValue": value}


def sent(account: str, rule_account: str, kind: str) -> tuple[str, dict[str, Any]]:
    """The body and attributes the service writes to the DLQ for a record of `kind`."""
    if kind == RecordKind.LAMBDA:
        return '{"order": 1}', {
            "RequestID": text("req-1"),
            "ErrorCode": {"DataType": "Number", "StringValue": "200"},
            "ErrorMessage": text("boom"),
        }
    if kind == RecordKind.LAMBDA_DESTINATION:
        body = {
            "requestContext": {
                "requestId": "req-2",
                "functionArn": FUNCTION.format(account=account),
            },
            "requestPayload": {"order": 2},
            "responsePayload": {"errorType": "StockError", "errorMessage": "no stock"},
        }
        return json.dumps(body), {}
    return EVENT, {
        "RULE_ARN": text(RULE.format(account=rule_account)),
        "TARGET_ARN": text(TARGET_QUEUE.format(account=account)),
        "ERROR_CODE": text("SQS.AccessDenied"),
        "ERROR_MESSAGE": text("denied"),
    }


def received(sqs: Sqs, queues: ReplayQueues, body: str, values: dict[str, Any]) -> MessageTypeDef:
    """The record as a receive from the DLQ returns it, every attribute asked for."""
    sqs.client.send_message(QueueUrl=queues.dlq.url, MessageBody=body, MessageAttributes=values)
    messages = sqs.client.receive_message(
        QueueUrl=queues.dlq.url,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
        MaxNumberOfMessages=1,
        WaitTimeSeconds=1,
    )["Messages"]
    assert len(messages) == 1
    return messages[0]


def replays(
    message: MessageTypeDef, queues: ReplayQueues, settings: Settings
) -> OutboundMessage | Delivery:
    """What the replay sends for the record: its delivery, or its copy."""
    inbound = InboundMessage.from_boto3(message, queues.dlq.arn)
    recognised = recognise(inbound, settings.replay_target_arns, settings.accepted_kinds)
    case = RecordCase(
        inbound, settings, queues.dlq.url, time.time(), Least(), recognised=recognised
    )
    decision = case.decide()
    assert decision.action is Action.REPLAY, decision
    if case.strategy.delivers_a_copy:
        return case.strategy.copy(inbound, recognised, decision, settings)
    return delivery_of(inbound, recognised, decision.destination or "", str(decision.attempt))


def redrives(
    sqs: Sqs, message: MessageTypeDef, queues: ReplayQueues, targets: frozenset[str]
) -> OutboundMessage | Delivery:
    request = RedriveRequest(
        source=queue_info(sqs.client, queues.dlq.url), destination=None, target_arns=targets
    )
    planned = plan_copy(sqs.client, message, request, {})
    assert isinstance(planned, OutboundMessage | Delivery), planned
    return planned


@pytest.mark.parametrize(
    ("kind", "rule_in"),
    [
        (RecordKind.LAMBDA, "home"),
        (RecordKind.LAMBDA_DESTINATION, "home"),
        (RecordKind.EVENTBRIDGE, "home"),
        (RecordKind.EVENTBRIDGE, "another account"),
    ],
)
def test_the_redrive_delivers_a_serverless_record_as_the_replay_does(
    sqs: Sqs, queues: ReplayQueues, kind: RecordKind, rule_in: str
) -> None:
    account = queues.dlq.arn.split(":")[4]
    rule_account = account if rule_in == "home" else OTHER_ACCOUNT
    function = FUNCTION.format(account=account)
    targets = frozenset({function, TARGET_QUEUE.format(account=account)})
    message = received(sqs, queues, *sent(account, rule_account, kind))
    settings = Settings(
        operator_queue_url=queues.operator.url, dlq_kind="any", replay_target_arns=targets
    )

    replayed = replays(message, queues, settings)
    redriven = redrives(sqs, message, queues, targets)

    assert isinstance(replayed, Delivery)
    assert isinstance(redriven, Delivery)
    assert replace(redriven, dedup_id=None) == replace(replayed, dedup_id=None)
    message_id = message["MessageId"]
    assert (replayed.dedup_id, redriven.dedup_id) == (f"{message_id}-1", f"{message_id}-redrive")
    assert replayed.account == account  # the DLQ's, whichever account the rule is in
    if kind is RecordKind.EVENTBRIDGE:
        assert replayed.rule_arn == RULE.format(account=rule_account)


@pytest.mark.moto_only(reason="moto sets no DeadLetterQueueSourceArn: the test writes it in")
@pytest.mark.parametrize("fair", [False, True])
def test_the_redrive_copies_an_sqs_record_to_its_source_as_the_replay_does(
    sqs: Sqs, queues: ReplayQueues, fair: bool
) -> None:
    """The same queue, body, attributes, group and trace header; the replay adds its count
    (the redrive keeps the one the record has) and its delay."""
    values = {"tenant": text("acme"), "blob": {"DataType": "Binary.gz", "BinaryValue": b"\x00"}}
    message = received(sqs, queues, "an order", values)
    system = message.setdefault("Attributes", {})
    system["DeadLetterQueueSourceArn"] = queues.main.arn
    system["AWSTraceHeader"] = "Root=1-a-b"
    if fair:
        system["MessageGroupId"] = "tenant-1"
    settings = Settings(
        operator_queue_url=queues.operator.url,
        allowed_source_queue_arns=frozenset({queues.main.arn}),
        backoff=BackoffPolicy(base_seconds=1, multiplier=2, cap_seconds=60),
    )

    replayed = replays(message, queues, settings)
    redriven = redrives(sqs, message, queues, frozenset())

    assert isinstance(replayed, OutboundMessage)
    assert isinstance(redriven, OutboundMessage)
    count = settings.count_attribute
    assert count in replayed.attributes
    assert count not in redriven.attributes
    without_count = {k: v for k, v in replayed.attributes.items() if k != count}
    assert replace(replayed, attributes=without_count, delay_seconds=0) == redriven
    assert redriven.queue_url == queues.main.url
    assert redriven.message_group_id == ("tenant-1" if fair else None)
    assert redriven.trace_header == "Root=1-a-b"
