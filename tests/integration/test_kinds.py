"""Every serverless kind through the Lambda handler on moto: delivered byte-exact to its target,
a refusal then a later success, the attempt limit, a forged target, the ledger across two
returns, a FIFO EventBridge target.

moto runs no function code: with its Lambda `use_docker` off it accepts `Invoke` and answers
202 with a request id, which is all an `Event` invocation returns on AWS. What the function was
given is read from the request the replay's client made (a botocore event hook).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.stub import Stubber
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.settings import Settings, SettingsError
from dlq_replay.engine.replayer import Replayer
from dlq_replay.local.eventsource import lambda_event
from dlq_replay.targets.deliverer import Deliverer, TargetClients
from dlq_replay.targets.ledger import DynamoLedger
from moto import mock_aws

if TYPE_CHECKING:
    from mypy_boto3_events.type_defs import InputTransformerTypeDef

from integration.harness import (
    COUNT,
    PARK_REASON,
    REGION,
    AppHandle,
    LowestRandom,
    Queue,
    RecordingLog,
    Sqs,
    attributes_of,
    breaker_table,
    failed_ids,
    moto_function,
    number,
    string,
)

ACCOUNT = "123456789012"
EVENT = {
    "version": "0",
    "id": "6f6a2c6e-1f1d-4c4d-9c3b-2d5f0f0e8a11",
    "detail-type": "OrderPlaced",
    "source": "shop.orders",
    "account": ACCOUNT,
    "time": "2026-11-27T10:00:00Z",
    "region": REGION,
    "resources": [],
    "detail": {"order": 42, "note": "ünïcödé ✓"},
}
EVENT_BODY = json.dumps(EVENT, ensure_ascii=False)


@dataclass
class Stack:
    sqs: Sqs
    dlq: Queue
    operator: Queue
    target: Queue
    fifo_target: Queue
    function_arn: str
    rule_arn: str
    fifo_rule_arn: str
    table: str


@pytest.fixture
def stack() -> Iterator[Stack]:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        sqs = Sqs(boto3.client("sqs", region_name=REGION))
        dlq = sqs.create_queue("fn-dlq")
        operator = sqs.create_queue("fn-operator")
        target = sqs.create_queue("orders-target")
        fifo_target = sqs.create_queue("orders-target.fifo", {"FifoQueue": "true"})
        function_arn = moto_function("orders")
        events = boto3.client("events", region_name=REGION)
        rule_arn = events.put_rule(Name="orders", EventPattern='{"source":["shop.orders"]}')[
            "RuleArn"
        ]
        # The rule the eventbridge records name, with the targets they name (no input
        # settings: the event is delivered as it is).
        events.put_targets(
            Rule="orders",
            Targets=[
                {"Id": "target", "Arn": target.arn},
                {"Id": "gone", "Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-gone"},
            ],
        )
        fifo_rule_arn = events.put_rule(Name="fifo", EventPattern='{"source":["shop.fifo"]}')[
            "RuleArn"
        ]
        events.put_targets(
            Rule="fifo",
            Targets=[
                {
                    "Id": "t",
                    "Arn": fifo_target.arn,
                    "SqsParameters": {"MessageGroupId": "orders-group"},
                }
            ],
        )
        table = "breaker"
        breaker_table(boto3.client("dynamodb", region_name=REGION), table)
        yield Stack(
            sqs, dlq, operator, target, fifo_target, function_arn, rule_arn, fifo_rule_arn, table
        )


class Calls:
    """Every request of one service the replay's clients make (a botocore event hook on the
    session they come from), as the caller passed it."""

    def __init__(self, session: boto3.Session, service: str) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        session.events.register(f"provide-client-params.{service}", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((model.name, dict(params)))

    def of(self, operation: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == operation]


@dataclass
class Replay:
    """The replay as the handler builds it, over one boto3 session, drawing no delay."""

    handler: LambdaReplay
    invokes: Calls
    log: RecordingLog
    clients: TargetClients


def make_replay(stack: Stack, targets: list[str], **env: str) -> Replay:
    session = boto3.Session(region_name=REGION)
    invokes = Calls(session, "lambda")
    settings = Settings.from_env(
        {
            "OPERATOR_QUEUE_URL": stack.operator.url,
            "DLQ_KIND": "any",
            "REPLAY_TARGET_ARNS": ",".join(targets),
            "BACKOFF_BASE_SECONDS": "1",
            **env,
        }
    )
    log = RecordingLog()
    clients = TargetClients(session)
    replayer = Replayer(
        settings,
        session.client("sqs"),
        logger=log,
        rng=LowestRandom(),
        deliverer=Deliverer(clients),
        ledger=DynamoLedger(lambda: session.client("dynamodb"), stack.table),
    )
    return Replay(LambdaReplay(replayer), invokes, log, clients)


def eventbridge_record(
    stack: Stack, target: str, rule: str | None = None, body: str = EVENT_BODY
) -> None:
    stack.sqs.client.send_message(
        QueueUrl=stack.dlq.url,
        MessageBody=body,
        MessageAttributes={
            "RULE_ARN": string(rule or stack.rule_arn),
            "TARGET_ARN": string(target),
            "ERROR_CODE": string("SQS.AWS.SQS.NonExistentQueue"),
            "ERROR_MESSAGE": string("queue missing"),
            "EXHAUSTED_RETRY_CONDITION": string("MaximumRetryAttempts"),
            "RETRY_ATTEMPTS": number(185),
        },
    )


def lambda_record(stack: Stack, request_id: str, body: str) -> None:
    """What Lambda writes to a function's DLQ once an asynchronous invocation gave up."""
    stack.sqs.client.send_message(
        QueueUrl=stack.dlq.url,
        MessageBody=body,
        MessageAttributes={
            "RequestID": string(request_id),
            "ErrorCode": string("200", "Number"),
            "ErrorMessage": string("Task timed out"),
        },
    )


def replay_round(stack: Stack, handler: Any) -> list[str]:
    """One event from the DLQ through `handler`; the done records are deleted, as Lambda's
    event source does. The ids of the records not done."""
    messages = stack.sqs.client.receive_message(
        QueueUrl=stack.dlq.url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        AttributeNames=["All"],
    ).get("Messages", [])
    failed = failed_ids(handler(lambda_event(messages, stack.dlq.arn, REGION)))
    for message in messages:
        if message["MessageId"] not in failed:
            stack.sqs.client.delete_message(
                QueueUrl=stack.dlq.url, ReceiptHandle=message["ReceiptHandle"]
            )
    return failed


def test_an_eventbridge_record_is_delivered_byte_exact_to_its_sqs_target(stack: Stack) -> None:
    replay = make_replay(stack, [stack.target.arn])
    eventbridge_record(stack, stack.target.arn)
    assert replay_round(stack, replay.handler) == []
    delivered = stack.sqs.drain(stack.target)
    assert [m["Body"] for m in delivered] == [EVENT_BODY]
    assert attributes_of(delivered[0]) == {}  # EventBridge sends the event, nothing else
    assert stack.sqs.total(stack.dlq) == 0


def test_a_target_with_an_input_transformer_gets_the_transformed_event(stack: Stack) -> None:
    """The DLQ holds the event (docs/kind-eventbridge.md); the target is given what its rule's
    InputTransformer makes of it, as EventBridge would have."""
    events = boto3.client("events", region_name=REGION)
    rule = events.put_rule(Name="shaped", EventPattern='{"source":["shop.orders"]}')["RuleArn"]
    transformer: InputTransformerTypeDef = {
        "InputPathsMap": {"order": "$.detail.order"},
        "InputTemplate": '{"order": <order>, "rule": <aws.events.rule-name>}',
    }
    events.put_targets(
        Rule="shaped",
        Targets=[{"Id": "t", "Arn": stack.target.arn, "InputTransformer": transformer}],
    )
    replay = make_replay(stack, [stack.target.arn])
    eventbridge_record(stack, stack.target.arn, rule)
    assert replay_round(stack, replay.handler) == []
    assert [m["Body"] for m in stack.sqs.drain(stack.target)] == ['{"order": 42, "rule": "shaped"}']
    assert stack.sqs.total(stack.dlq) == 0


def test_a_fifo_target_gets_the_group_its_rule_configures(stack: Stack) -> None:
    replay = make_replay(stack, [stack.fifo_target.arn])
    eventbridge_record(stack, stack.fifo_target.arn, stack.fifo_rule_arn)
    assert replay_round(stack, replay.handler) == []
    delivered = stack.sqs.client.receive_message(
        QueueUrl=stack.fifo_target.url, AttributeNames=["MessageGroupId"]
    )["Messages"]
    assert [m["Body"] for m in delivered] == [EVENT_BODY]
    assert delivered[0]["Attributes"]["MessageGroupId"] == "orders-group"


def test_a_forged_target_is_parked_and_never_called(stack: Stack) -> None:
    forged = stack.sqs.create_queue("not-listed")
    replay = make_replay(stack, [stack.target.arn, stack.function_arn])
    eventbridge_record(stack, forged.arn)
    lambda_record(stack, "r-1", "{}")  # fine: its function is the one listed
    eventbridge_record(stack, f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/orders")
    assert replay_round(stack, replay.handler) == []
    reasons = sorted(
        attributes_of(m)[PARK_REASON]["StringValue"] for m in stack.sqs.drain(stack.operator)
    )
    assert reasons == ["target-not-allowed", "unsupported-target"]
    assert stack.sqs.total(forged) == 0
    assert len(replay.invokes.of("Invoke")) == 1


def test_a_kind_outside_dlq_kind_is_parked_unexpected_kind(stack: Stack) -> None:
    replay = make_replay(stack, [stack.target.arn], DLQ_KIND="lambda")
    eventbridge_record(stack, stack.target.arn)
    assert replay_round(stack, replay.handler) == []
    parked = stack.sqs.drain(stack.operator)
    assert attributes_of(parked[0])[PARK_REASON]["StringValue"] == "unexpected-kind"
    assert stack.sqs.total(stack.target) == 0


def test_a_refused_delivery_waits_in_the_dlq_and_a_later_one_succeeds(stack: Stack) -> None:
    gone = stack.sqs.create_queue("orders-gone")
    stack.sqs.client.delete_queue(QueueUrl=gone.url)
    replay = make_replay(stack, [gone.arn])
    eventbridge_record(stack, gone.arn)
    assert replay_round(stack, replay.handler) == []  # refused, and written back to wait
    waiting = stack.sqs.client.receive_message(
        QueueUrl=stack.dlq.url, MessageAttributeNames=["All"]
    )["Messages"]
    values = attributes_of(waiting[0])
    assert values[COUNT]["StringValue"] == "2"  # attempt 1 was refused: the copy waits for 2
    assert values["dlq-replay-kind"]["StringValue"] == "eventbridge"
    assert "dlq-replay-not-before" in values
    assert values["RULE_ARN"]["StringValue"] == stack.rule_arn
    stack.sqs.client.change_message_visibility(
        QueueUrl=stack.dlq.url, ReceiptHandle=waiting[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    stack.sqs.client.create_queue(QueueName="orders-gone")  # the target is back
    assert replay_round(stack, replay.handler) == []
    assert [m["Body"] for m in stack.sqs.drain(gone)] == [EVENT_BODY]
    assert stack.sqs.total(stack.dlq) == 0


def test_the_attempt_limit_parks_with_the_services_error(stack: Stack) -> None:
    gone = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-gone"
    replay = make_replay(stack, [gone], MAX_ATTEMPTS="1")
    eventbridge_record(stack, gone)
    assert replay_round(stack, replay.handler) == []
    parked = stack.sqs.drain(stack.operator)
    values = attributes_of(parked[0])
    assert values[PARK_REASON]["StringValue"] == "max-attempts"
    assert "NonExistentQueue" in values["dlq-replay-error"]["StringValue"]
    assert parked[0]["Body"] == EVENT_BODY
    assert stack.sqs.total(stack.dlq) == 0


def test_a_lambda_record_is_invoked_unchanged_and_the_ledger_counts_its_returns(
    stack: Stack,
) -> None:
    replay = make_replay(stack, [stack.function_arn], MAX_ATTEMPTS="2")
    body = '{"order": 7,  "spaces":  "kept", "é": 1}'
    lambda_record(stack, "original-request", body)
    assert replay_round(stack, replay.handler) == []
    (first,) = replay.invokes.of("Invoke")
    assert (first["FunctionName"], first["InvocationType"]) == (stack.function_arn, "Event")
    assert first["Payload"] == body.encode()
    first_id = ledger_ids(stack)
    assert list(first_id.values()) == [1]
    # The invocation failed after all: Lambda writes a record with the id it gave it.
    lambda_record(stack, next(iter(first_id)), body)
    assert replay_round(stack, replay.handler) == []
    assert len(replay.invokes.of("Invoke")) == 2
    counts = ledger_ids(stack)
    assert sorted(counts.values()) == [1, 2]
    second_id = next(rid for rid, count in counts.items() if count == 2)
    lambda_record(stack, second_id, body)
    assert replay_round(stack, replay.handler) == []
    parked = stack.sqs.drain(stack.operator)
    values = attributes_of(parked[0])
    assert values[PARK_REASON]["StringValue"] == "max-attempts"
    assert values[COUNT]["StringValue"] == "2"
    assert values["dlq-replay-error"]["StringValue"] == "200: Task timed out"
    assert parked[0]["Body"] == body
    assert len(replay.invokes.of("Invoke")) == 2


def test_a_destination_record_invokes_its_function_with_the_request_payload(
    stack: Stack,
) -> None:
    replay = make_replay(stack, [stack.function_arn])
    record = {
        "version": "1.0",
        "timestamp": "2026-11-27T10:00:00.000Z",
        "requestContext": {
            "requestId": "d-1",
            "functionArn": f"{stack.function_arn}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
        },
        "requestPayload": {"order": 9},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "responsePayload": {"errorMessage": "boom", "errorType": "Error"},
    }
    stack.sqs.client.send_message(QueueUrl=stack.dlq.url, MessageBody=json.dumps(record))
    assert replay_round(stack, replay.handler) == []
    (call,) = replay.invokes.of("Invoke")
    assert call["FunctionName"] == f"{stack.function_arn}:$LATEST"
    assert json.loads(call["Payload"]) == {"order": 9}


def test_an_invoke_refused_as_throttled_waits_for_its_next_attempt(stack: Stack) -> None:
    replay = make_replay(stack, [stack.function_arn])
    lambda_record(stack, "r-throttled", "{}")
    with Stubber(replay.clients.client("lambda", REGION)) as stub:
        stub.add_client_error("invoke", "TooManyRequestsException", "Rate exceeded", 429)
        assert replay_round(stack, replay.handler) == []
        stub.assert_no_pending_responses()
    waiting = stack.sqs.client.receive_message(
        QueueUrl=stack.dlq.url, MessageAttributeNames=["All"]
    )["Messages"]
    assert attributes_of(waiting[0])[COUNT]["StringValue"] == "2"
    assert attributes_of(waiting[0])["RequestID"]["StringValue"] == "r-throttled"
    assert [line.extra["error"] for line in replay.log.lines if "refused" in line.message] == [
        "TooManyRequestsException: Rate exceeded"
    ]


def ledger_ids(stack: Stack) -> dict[str, int]:
    """The ledger's items: request id -> attempt."""
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=stack.table)["Items"]
    return {
        item["pk"]["S"].removeprefix("invocation#"): int(item["count"]["N"])
        for item in items
        if item["pk"]["S"].startswith("invocation#")
    }


def test_the_function_handler_builds_the_targets_and_the_ledger_from_its_environment(
    stack: Stack, app: AppHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "OPERATOR_QUEUE_URL": stack.operator.url,
        "DLQ_KIND": "eventbridge",
        "REPLAY_TARGET_ARNS": stack.target.arn,
        "OUTAGE_BREAKER": "off",
        "BACKOFF_BASE_SECONDS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match="INVOCATION_LEDGER_TABLE"):
        app.handler({"Records": []})
    monkeypatch.setenv("INVOCATION_LEDGER_TABLE", stack.table)
    app.reset()
    eventbridge_record(stack, stack.target.arn)
    # Full jitter may draw a second's wait in the DLQ first (a copy that comes back before
    # its time is hidden again, a record not done): rounds until it is delivered.
    for _ in range(20):
        replay_round(stack, app.handler)
        if stack.sqs.total(stack.target):
            break
        stack.sqs.end_delays(stack.dlq)
        time.sleep(0.5)
    assert [m["Body"] for m in stack.sqs.drain(stack.target)] == [EVENT_BODY]


# Each kind with a Lambda function as its target, as the service writes its record.
KINDS = ("lambda", "lambda-destination", "eventbridge")
PAYLOAD = '{"order": 11,  "note": "ünïcödé"}'


def kind_record(
    stack: Stack, kind: str, *, request_id: str = "first", function: str | None = None
) -> None:
    """One record of `kind` whose delivery invokes `function` (default: the stack's)."""
    function = function or stack.function_arn
    if kind == "lambda":
        extra = {} if function == stack.function_arn else {"dlq-replay-target": string(function)}
        stack.sqs.client.send_message(
            QueueUrl=stack.dlq.url,
            MessageBody=PAYLOAD,
            MessageAttributes={
                "RequestID": string(request_id),
                "ErrorCode": string("200", "Number"),
                "ErrorMessage": string("boom"),
                **extra,
            },
        )
    elif kind == "lambda-destination":
        record = {
            "version": "1.0",
            "timestamp": "2026-11-27T10:00:00.000Z",
            "requestContext": {
                "requestId": request_id,
                "functionArn": f"{function}:$LATEST",
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 3,
            },
            "requestPayload": json.loads(PAYLOAD),
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
            "responsePayload": {"errorMessage": "boom", "errorType": "Error"},
        }
        stack.sqs.client.send_message(QueueUrl=stack.dlq.url, MessageBody=json.dumps(record))
    else:
        events = boto3.client("events", region_name=REGION)
        rule = events.put_rule(Name="to-function", EventPattern='{"source":["shop.orders"]}')
        events.put_targets(Rule="to-function", Targets=[{"Id": "f", "Arn": function}])
        eventbridge_record(stack, function, rule["RuleArn"], body=EVENT_BODY)


def expected_payload(kind: str) -> bytes:
    if kind == "lambda":
        return PAYLOAD.encode()  # the body, byte for byte
    if kind == "lambda-destination":  # the record's own text of it, as json.dumps wrote it
        return json.dumps(json.loads(PAYLOAD)).encode()
    return EVENT_BODY.encode()


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_refused_at_once_then_delivered_byte_exact(stack: Stack, kind: str) -> None:
    replay = make_replay(stack, [stack.function_arn])
    kind_record(stack, kind)
    with Stubber(replay.clients.client("lambda", REGION)) as stub:
        stub.add_client_error("invoke", "TooManyRequestsException", "Rate exceeded", 429)
        assert replay_round(stack, replay.handler) == []
        stub.assert_no_pending_responses()
    waiting = stack.sqs.client.receive_message(
        QueueUrl=stack.dlq.url, MessageAttributeNames=["All"]
    )["Messages"]
    assert attributes_of(waiting[0])[COUNT]["StringValue"] == "2"
    assert attributes_of(waiting[0])["dlq-replay-kind"]["StringValue"] == kind
    stack.sqs.client.change_message_visibility(
        QueueUrl=stack.dlq.url, ReceiptHandle=waiting[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    assert replay_round(stack, replay.handler) == []
    refused, delivered = replay.invokes.of("Invoke")  # the same request, twice
    assert refused == delivered
    assert delivered["InvocationType"] == "Event"
    assert delivered["Payload"] == expected_payload(kind)
    assert list(ledger_ids(stack).values()) == [2]
    assert stack.sqs.total(stack.dlq) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_parks_at_the_attempt_limit_with_the_refusal(stack: Stack, kind: str) -> None:
    replay = make_replay(stack, [stack.function_arn], MAX_ATTEMPTS="1")
    kind_record(stack, kind)
    with Stubber(replay.clients.client("lambda", REGION)) as stub:
        stub.add_client_error("invoke", "ResourceNotFoundException", "Function not found", 404)
        assert replay_round(stack, replay.handler) == []
    (parked,) = stack.sqs.drain(stack.operator)
    values = attributes_of(parked)
    assert values[PARK_REASON]["StringValue"] == "max-attempts"
    assert values["dlq-replay-error"]["StringValue"] == (
        "ResourceNotFoundException: Function not found"
    )
    assert values["dlq-replay-kind"]["StringValue"] == kind
    assert stack.sqs.total(stack.dlq) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_never_calls_a_function_outside_the_list(stack: Stack, kind: str) -> None:
    other = stack.function_arn.replace(":function:orders", ":function:billing")
    replay = make_replay(stack, [stack.function_arn])
    kind_record(stack, kind, function=other)
    assert replay_round(stack, replay.handler) == []
    (parked,) = stack.sqs.drain(stack.operator)
    assert attributes_of(parked)[PARK_REASON]["StringValue"] == "target-not-allowed"
    assert replay.invokes.of("Invoke") == []


@pytest.mark.parametrize("kind", ["lambda", "lambda-destination"])
def test_the_ledger_counts_each_lambda_kinds_returns(stack: Stack, kind: str) -> None:
    replay = make_replay(stack, [stack.function_arn], MAX_ATTEMPTS="2")
    kind_record(stack, kind, request_id="original")
    assert replay_round(stack, replay.handler) == []
    (first,) = ledger_ids(stack)
    kind_record(stack, kind, request_id=first)  # the invocation failed: Lambda writes again
    assert replay_round(stack, replay.handler) == []
    (second,) = set(ledger_ids(stack)) - {first}
    assert ledger_ids(stack)[second] == 2
    kind_record(stack, kind, request_id=second)
    assert replay_round(stack, replay.handler) == []
    (parked,) = stack.sqs.drain(stack.operator)
    assert attributes_of(parked)[PARK_REASON]["StringValue"] == "max-attempts"
    assert attributes_of(parked)[COUNT]["StringValue"] == "2"
    assert len(replay.invokes.of("Invoke")) == 2


def test_a_target_its_rule_no_longer_has_is_parked_at_the_first_attempt(stack: Stack) -> None:
    """A refusal no retry can change spends no attempt: parked at once, with its reason."""
    events = boto3.client("events", region_name=REGION)
    rule = events.put_rule(Name="moved", EventPattern='{"source":["shop.orders"]}')["RuleArn"]
    events.put_targets(Rule="moved", Targets=[{"Id": "now", "Arn": stack.target.arn}])
    retired = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-v1"
    replay = make_replay(stack, [stack.target.arn, retired])
    eventbridge_record(stack, retired, rule)
    assert replay_round(stack, replay.handler) == []
    parked = stack.sqs.drain(stack.operator)
    values = attributes_of(parked[0])
    assert values[PARK_REASON]["StringValue"] == "target-not-in-rule"
    assert values[COUNT]["StringValue"] == "1"  # one attempt, not MAX_ATTEMPTS
    assert values["dlq-replay-error"]["StringValue"].startswith("TargetNotInRule: ")
    assert stack.sqs.total(stack.dlq) == 0
    assert stack.sqs.total(stack.target) == 0


def test_with_dlq_kind_sqs_a_record_that_looks_like_a_kind_goes_back_to_its_queue(
    stack: Stack,
) -> None:
    """DLQ_KIND=sqs recognises nothing: an application's own RULE_ARN and TARGET_ARN change
    nothing, the record is replayed as sections 3-4 say, attributes and all."""
    replay = make_replay(stack, [stack.target.arn], DLQ_KIND="sqs", MAIN_QUEUE_URL=stack.target.url)
    eventbridge_record(stack, stack.target.arn)
    assert replay_round(stack, replay.handler) == []
    replayed = stack.sqs.drain(stack.target)
    assert [m["Body"] for m in replayed] == [EVENT_BODY]
    values = attributes_of(replayed[0])
    assert values["RULE_ARN"]["StringValue"] == stack.rule_arn
    assert values[COUNT]["StringValue"] == "1"
    assert "dlq-replay-kind" not in values
    assert stack.sqs.total(stack.operator) == 0
