"""The engine's promises for what anyone who can send to the DLQ can write: recognition only
where DLQ_KIND asks for it, every record failing alone, the refusals no retry can change
parked at once, and a destination's payload delivered as the record's own text."""

from __future__ import annotations

import json
import logging

import boto3
import pytest
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.attributes import Attribute
from dlq_replay.core.backoff import BackoffPolicy
from dlq_replay.core.decision import Action, Decision, ParkReason
from dlq_replay.core.kinds import RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.settings import Settings
from dlq_replay.engine.decide import RecordCase
from dlq_replay.engine.kinds import kind_of, recognise
from dlq_replay.engine.replayer import Replayer
from dlq_replay.sqs.client import sqs_client
from dlq_replay.targets.deliverer import Deliverer, TargetClients
from dlq_replay.targets.ledger import MemoryLedger
from hypothesis import given
from hypothesis import strategies as st

from ._support import ACCOUNT, DLQ, DLQ_ARN, MAIN, NOW, OPERATOR, FixedRandom
from .test_properties import AcceptingEndpoint

FUNCTION = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:orders"
QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-target"
RULE = f"arn:aws:events:us-east-1:{ACCOUNT}:rule/orders"


def string(value: str) -> Attribute:
    return Attribute("String", value)


def record(body: str = "{}", message_id: str = "m-1", **values: Attribute) -> InboundMessage:
    return InboundMessage(
        message_id=message_id, receipt_handle="r", body=body, attributes=values, queue_arn=DLQ_ARN
    )


def destination_body(payload_text: str) -> str:
    return (
        '{"version":"1.0","requestContext":{"requestId":"q-1","functionArn":"'
        + FUNCTION
        + '","condition":"RetriesExhausted"},"requestPayload":'
        + payload_text
        + ',"responsePayload":{"errorType":"E","errorMessage":"m"}}'
    )


# What applications attach of their own, and bodies that look like each kind's record.
LOOKALIKES = [
    record(RequestID=string("r-1"), ErrorCode=Attribute("Number", "500")),
    record(RULE_ARN=string(RULE), TARGET_ARN=string(QUEUE)),
    record(destination_body('{"order": 1}')),
    record('{"a":' * 30_000 + "1" + "}" * 30_000),  # nested past json's depth
]


def settings(kind: str) -> Settings:
    return Settings(
        main_queue_url=MAIN,
        operator_queue_url=OPERATOR,
        backoff=BackoffPolicy(base_seconds=60, multiplier=2, cap_seconds=600),
        dlq_kind=kind,
        replay_target_arns=frozenset({FUNCTION, QUEUE}),
    )


def decided(message: InboundMessage, s: Settings) -> Decision:
    recognised = recognise(message, s.replay_target_arns, s.accepted_kinds)
    return RecordCase(
        message, s, dlq_url=DLQ, now=NOW, rng=FixedRandom(30), recognised=recognised
    ).decide()


@pytest.mark.parametrize("message", LOOKALIKES, ids=["lambda", "eventbridge", "dest", "deep"])
def test_in_sqs_mode_every_record_is_an_sqs_record(message: InboundMessage) -> None:
    s = settings("sqs")
    assert recognise(message, s.replay_target_arns, s.accepted_kinds).kind is RecordKind.SQS
    decision = decided(message, s)
    assert (decision.action, decision.destination, decision.attempt) == (Action.REPLAY, MAIN, 1)


@pytest.mark.parametrize("kind", ["lambda", "eventbridge"])
def test_a_plain_record_outside_its_mode_is_parked_unexpected_kind(kind: str) -> None:
    decision = decided(record('{"order": 1}'), settings(kind))  # MAIN_QUEUE_URL is set
    assert (decision.action, decision.reason) == (Action.PARK, ParkReason.UNEXPECTED_KIND)


def test_in_any_mode_what_recognition_cannot_place_is_an_sqs_record() -> None:
    deep = LOOKALIKES[3]
    assert recognise(deep, frozenset({FUNCTION})).kind is RecordKind.SQS
    assert decided(deep, settings("any")).destination == MAIN


def test_an_error_code_that_is_not_a_number_is_no_lambda_record() -> None:
    as_text = record(RequestID=string("r-1"), ErrorCode=string("500"))
    assert recognise(as_text, frozenset({FUNCTION})).kind is RecordKind.SQS
    as_number = record(RequestID=string("r-1"), ErrorCode=Attribute("Number.int", "500"))
    assert recognise(as_number, frozenset({FUNCTION})).kind is RecordKind.LAMBDA


@pytest.mark.parametrize(
    "payload",
    [
        '{"amount": 1e400}',
        '{"amount": 0.1000000000000000055511151231257827}',
        '{"a": 1, "a": 2}',
        '  [1, {"x": "\\ud800"}]',
        '"text"',
    ],
)
def test_a_destinations_payload_is_the_records_own_text(payload: str) -> None:
    found = recognise(record(destination_body(payload)), frozenset({FUNCTION}))
    assert found.kind is RecordKind.LAMBDA_DESTINATION
    assert found.payload == payload.strip()


@given(
    st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    ),
    st.sampled_from(["", " ", "\n\t "]),
)
def test_any_payload_is_delivered_as_written(value: object, space: str) -> None:
    text = json.dumps(value, indent=1 if space else None)
    body = destination_body(f"{space}{text}{space}")
    found = recognise(record(body), frozenset({FUNCTION}))
    assert found.payload == text


@given(st.text(), st.sampled_from(["any", "lambda", "eventbridge", "sqs"]))
def test_no_body_makes_recognition_or_the_decision_raise(body: str, kind: str) -> None:
    s = settings(kind)
    for text in (
        body,
        destination_body(body),
        '{"requestPayload":0,"requestContext":' * 3000 + body,
    ):
        decision = decided(record(text), s)
        assert decision.action in set(Action)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("TargetNotInRule", ParkReason.TARGET_NOT_IN_RULE),
        ("TransformNotApplied", ParkReason.TRANSFORM_NOT_APPLIED),
        ("NotAnEvent", ParkReason.NOT_AN_EVENT),
        ("MissingGroupId", ParkReason.MISSING_GROUP_ID),
    ],
)
def test_a_refusal_no_retry_can_change_parks_at_the_first_attempt(
    code: str, reason: ParkReason
) -> None:
    s = settings("eventbridge")
    message = record(RULE_ARN=string(RULE), TARGET_ARN=string(QUEUE))
    first = RecordCase(
        message,
        s,
        dlq_url=DLQ,
        now=NOW,
        rng=FixedRandom(0),
        recognised=recognise(message, s.replay_target_arns, s.accepted_kinds),
    ).decide()
    assert (first.action, first.attempt) == (Action.REPLAY, 1)
    refusal = kind_of(RecordKind.EVENTBRIDGE).refusals.get(code)
    case = RecordCase(message, s, DLQ, NOW, None)
    parked = case.after_refusal(first, error=f"{code}: no", reason=refusal)
    assert (parked.action, parked.reason, parked.attempt) == (Action.PARK, reason, 1)
    throttled = case.after_refusal(first, error="Throttled")
    assert throttled.action is Action.DEFER  # what a retry can change waits


def lambda_event(bodies: list[str]) -> dict[str, object]:
    return {
        "Records": [
            {
                "messageId": f"m-{index}",
                "receiptHandle": f"r-{index}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": DLQ_ARN,
                "awsRegion": "us-east-1",
            }
            for index, body in enumerate(bodies)
        ]
    }


@pytest.mark.parametrize("kind", ["sqs", "any"])
def test_one_hostile_body_never_fails_its_batch(kind: str) -> None:
    """Nested past json's depth, shaped as a destination record: in the handler, the nine good
    records of its batch are replayed, and it is too."""
    endpoint = AcceptingEndpoint()
    session = boto3.Session(
        aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
    )
    sqs = sqs_client(session=session)
    sqs.meta.events.register("before-send.sqs.SendMessageBatch", endpoint)  # type: ignore[arg-type]
    quiet = logging.getLogger("engine-tests")
    quiet.disabled = True
    deliverer = Deliverer(TargetClients(session))
    replayer = Replayer(
        settings(kind), sqs, logger=quiet, deliverer=deliverer, ledger=MemoryLedger()
    )
    hostile = '{"requestContext": {}, "requestPayload": ' + "[" * 20_000 + "]" * 20_000 + "}"
    response = LambdaReplay(replayer)(lambda_event([hostile, *(["{}"] * 9)]))
    assert response == {"batchItemFailures": []}
    assert {url for url, _ in endpoint.sent} == {MAIN}  # all ten replayed, none parked
    assert sorted(entry["Id"] for _, entry in endpoint.sent) == sorted(str(i) for i in range(10))
