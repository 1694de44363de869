"""`dlq-replay demo --kind eventbridge`: a bus, a rule and its target queue on the demo's
emulator, the DLQ records EventBridge would write staged in its documented shape, and the
target's DLQ replayed until every event is delivered or parked, none lost."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.core.kinds import RecordKind, recognise
from dlq_replay.core.messages import InboundMessage
from dlq_replay.demo.emulator import emulator_client, endpoint_session, sqs_emulator
from dlq_replay.demo.eventbridge import Fate, create_wiring, publish

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

DOCUMENTED_ATTRIBUTES = {
    "RULE_ARN",
    "TARGET_ARN",
    "ERROR_CODE",
    "ERROR_MESSAGE",
    "EXHAUSTED_RETRY_CONDITION",
    "RETRY_ATTEMPTS",
}
EVENT_FIELDS = {
    "version",
    "id",
    "detail-type",
    "source",
    "account",
    "time",
    "region",
    "resources",
    "detail",
}


def receive_all(sqs: SQSClient, url: str) -> list[Any]:
    messages: list[Any] = []
    while batch := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", []):
        messages += batch
    return messages


@pytest.mark.usefixtures("fresh_backends")
def test_staged_records_are_eventbridges_and_the_bus_delivers_the_rest() -> None:
    plan = {
        "e1": Fate.DELIVERED,
        "e2": Fate.FAILED,
        "e3": Fate.RETIRED,
        "e4": Fate.FORGED,
        "e5": Fate.DELIVERED,
    }
    with sqs_emulator() as running, endpoint_session(running.endpoint_url) as session:
        sqs = emulator_client(running.endpoint_url)
        events = session.client("events")
        wiring = create_wiring(sqs, events)

        staged = publish(sqs, events, wiring, plan)

        delivered = receive_all(sqs, wiring.target_url)
        records = receive_all(sqs, wiring.dlq_url)
    assert staged == 3
    # moto's EventBridge routed the delivered events through the rule to the target queue.
    assert sorted(json.loads(m["Body"])["detail"]["id"] for m in delivered) == ["e1", "e5"]
    by_id = {json.loads(m["Body"])["detail"]["id"]: m for m in records}
    assert sorted(by_id) == ["e2", "e3", "e4"]
    for message in records:
        # A staged body is the event as a target receives it (moto's EventBridge leaves out
        # `account`, which AWS's events carry).
        assert set(json.loads(message["Body"])) == EVENT_FIELDS
        assert set(message["MessageAttributes"]) == DOCUMENTED_ATTRIBUTES
    assert set(json.loads(delivered[0]["Body"])) <= EVENT_FIELDS
    targets = {
        id_: message["MessageAttributes"]["TARGET_ARN"]["StringValue"]
        for id_, message in by_id.items()
    }
    assert targets == {
        "e2": wiring.target_arn,
        "e3": wiring.retired_arn,
        "e4": wiring.outside_arn,
    }
    assert wiring.target_arn in wiring.replay_targets
    assert wiring.outside_arn not in wiring.replay_targets
    # The replay recognises each as an eventbridge record of the demo's rule.
    for message in records:
        inbound = InboundMessage.from_boto3(message)
        recognised = recognise(inbound, wiring.replay_targets)
        assert recognised.kind is RecordKind.EVENTBRIDGE
        assert recognised.rule_arn == wiring.rule_arn
        assert recognised.payload == message["Body"]
