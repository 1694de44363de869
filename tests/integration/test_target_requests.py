"""The exact requests a delivery makes, and the refusals it reports, on botocore's Stubber:
Lambda's Invoke (the payload's bytes, `Event`), a FIFO queue's send on the configured endpoint,
the rule lookup on the default and a partner bus, PutEvents' entry and its failed entries."""

from __future__ import annotations

import datetime
import io
import json
import re
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from dlq_replay.targets.deliverer import Deliverer, TargetClients, execution_name
from dlq_replay.targets.delivery import Delivered, Delivery, Refused
from hypothesis import given
from hypothesis import strategies as st

REGION = "us-east-1"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:orders"
AUDIT_QUEUE = "arn:aws:sqs:us-east-1:123456789012:audit.fifo"
PAYLOAD = '{ "order":  "é-42",\n "emoji": "\U0001f4e6" }'


@pytest.fixture
def clients() -> TargetClients:
    return TargetClients(boto3.Session(region_name=REGION))


def accepted(request_id: str) -> dict[str, Any]:
    """Lambda's answer to an Event invocation: 202, an empty body, the invocation's id."""
    return {
        "StatusCode": 202,
        "Payload": StreamingBody(io.BytesIO(b""), 0),
        "ResponseMetadata": {"RequestId": request_id},
    }


def test_invoke_sends_the_payloads_bytes_asynchronously(clients: TargetClients) -> None:
    qualified = f"{FUNCTION}:live"
    with Stubber(clients.client("lambda", REGION)) as stub:
        stub.add_response(
            "invoke",
            accepted("req-1"),
            {
                "FunctionName": qualified,
                "InvocationType": "Event",
                "Payload": PAYLOAD.encode("utf-8"),
            },
        )

        outcomes = Deliverer(clients).deliver([Delivery("r-1", qualified, PAYLOAD)])

        stub.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", "req-1")}


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("TooManyRequestsException", 429),
        ("ResourceNotFoundException", 404),
        ("AccessDeniedException", 403),
        ("ServiceException", 500),
    ],
)
def test_an_invoke_the_service_refuses_is_refused_with_its_code_and_message(
    clients: TargetClients, code: str, status: int
) -> None:
    with Stubber(clients.client("lambda", REGION)) as stub:
        stub.add_client_error("invoke", code, f"{code} says no", http_status_code=status)

        outcomes = Deliverer(clients).deliver([Delivery("r-1", FUNCTION, PAYLOAD)])

    assert outcomes == {"r-1": Refused("r-1", code, f"{code} says no")}


def test_one_refusal_does_not_stop_the_others(clients: TargetClients) -> None:
    with Stubber(clients.client("lambda", REGION)) as stub:
        stub.add_response("invoke", accepted("a"))
        stub.add_client_error("invoke", "TooManyRequestsException", "Rate exceeded", 429)
        stub.add_response("invoke", accepted("c"))

        outcomes = Deliverer(clients, concurrency=1).deliver(
            [Delivery(f"r-{i}", FUNCTION, PAYLOAD) for i in range(3)]
        )

    assert outcomes == {
        "r-0": Delivered("r-0", "a"),
        "r-1": Refused("r-1", "TooManyRequestsException", "Rate exceeded"),
        "r-2": Delivered("r-2", "c"),
    }


def test_a_fifo_send_goes_to_the_queue_url_on_the_configured_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:4566")
    clients = TargetClients(boto3.Session(region_name=REGION))
    queue = "arn:aws:sqs:eu-west-1:123456789012:orders.fifo"
    rule = "arn:aws:events:eu-west-1:123456789012:rule/nightly"
    with (
        Stubber(clients.client("events", "eu-west-1")) as events,
        Stubber(clients.client("sqs", "eu-west-1")) as sqs,
    ):
        # The default bus: no EventBusName in the request.
        events.add_response(
            "list_targets_by_rule",
            {"Targets": [{"Id": "q", "Arn": queue, "SqsParameters": {"MessageGroupId": "g-7"}}]},
            {"Rule": "nightly"},
        )
        sqs.add_response(
            "send_message",
            {"MessageId": "m-1"},
            {
                "QueueUrl": "http://127.0.0.1:4566/123456789012/orders.fifo",
                "MessageBody": PAYLOAD,
                "MessageGroupId": "g-7",
                "MessageDeduplicationId": "dedup-1",
            },
        )

        outcomes = Deliverer(clients).deliver([Delivery("r-1", queue, PAYLOAD, rule, "dedup-1")])

        events.assert_no_pending_responses()
        sqs.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None)}


def test_the_rule_of_a_partner_bus_is_looked_up_on_that_bus(clients: TargetClients) -> None:
    queue = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
    rule = "arn:aws:events:us-east-1:123456789012:rule/aws.partner/saas.com/acct/orders"
    with (
        Stubber(clients.client("events", REGION)) as events,
        Stubber(clients.client("sqs", REGION)) as sqs,
    ):
        events.add_response(
            "list_targets_by_rule",
            {"Targets": [{"Id": "audit", "Arn": AUDIT_QUEUE}], "NextToken": "page-2"},
            {"Rule": "orders", "EventBusName": "aws.partner/saas.com/acct"},
        )
        events.add_response(
            "list_targets_by_rule",
            {"Targets": [{"Id": "q", "Arn": queue, "SqsParameters": {"MessageGroupId": "g"}}]},
            {"Rule": "orders", "EventBusName": "aws.partner/saas.com/acct", "NextToken": "page-2"},
        )
        sqs.add_response("send_message", {"MessageId": "m-1"})

        outcomes = Deliverer(clients).deliver([Delivery("r-1", queue, PAYLOAD, rule, "d")])

        events.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None)}


def test_a_rules_failed_read_refuses_its_batch_once_and_the_next_batch_reads_again(
    clients: TargetClients,
) -> None:
    queue = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
    rule = "arn:aws:events:us-east-1:123456789012:rule/nightly"
    deliverer = Deliverer(clients, concurrency=4)
    with (
        Stubber(clients.client("events", REGION)) as events,
        Stubber(clients.client("sqs", REGION)) as sqs,
    ):
        # One stubbed answer: a second read in the same batch would find none.
        events.add_client_error("list_targets_by_rule", "ThrottlingException", "Rate exceeded")

        first = deliverer.deliver([Delivery(f"r-{i}", queue, PAYLOAD, rule, "d") for i in range(3)])

        events.add_response(
            "list_targets_by_rule",
            {"Targets": [{"Id": "q", "Arn": queue, "SqsParameters": {"MessageGroupId": "g"}}]},
        )
        sqs.add_response("send_message", {"MessageId": "m-1"})
        second = deliverer.deliver([Delivery("r-0", queue, PAYLOAD, rule, "d")])

        events.assert_no_pending_responses()
    assert first == {
        f"r-{i}": Refused(f"r-{i}", "ThrottlingException", "Rate exceeded") for i in range(3)
    }
    assert second == {"r-0": Delivered("r-0", None)}


BUS = "arn:aws:events:us-east-1:123456789012:event-bus/shop"
EVENT = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "detail-type": "Order Placed",
    "source": "shop",
    "account": "123456789012",
    "time": "2026-11-27T08:00:00Z",
    "region": REGION,
    "resources": ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"],
    "detail": {"order": "é-42"},
}
ENTRY = {
    "Source": "shop",
    "DetailType": "Order Placed",
    "Detail": '{"order":"é-42"}',
    "Resources": ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"],
    "Time": datetime.datetime(2026, 11, 27, 8, 0, tzinfo=datetime.UTC),
    "EventBusName": BUS,
}


def test_put_events_sends_the_events_fields_to_the_bus(clients: TargetClients) -> None:
    with Stubber(clients.client("events", REGION)) as stub:
        stub.add_response(
            "put_events",
            {"FailedEntryCount": 0, "Entries": [{"EventId": "e-1"}]},
            {"Entries": [ENTRY]},
        )

        outcomes = Deliverer(clients).deliver([Delivery("r-1", BUS, json.dumps(EVENT))])

        stub.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None)}


def test_an_event_without_time_or_resources_is_sent_without_them(clients: TargetClients) -> None:
    bare = {k: v for k, v in EVENT.items() if k not in ("time", "resources")}
    with Stubber(clients.client("events", REGION)) as stub:
        stub.add_response(
            "put_events",
            {"FailedEntryCount": 0, "Entries": [{"EventId": "e-1"}]},
            {"Entries": [{k: v for k, v in ENTRY.items() if k != "Time"} | {"Resources": []}]},
        )

        outcomes = Deliverer(clients).deliver([Delivery("r-1", BUS, json.dumps(bare))])

        stub.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None)}


def test_an_entry_put_events_failed_is_refused_with_its_error(clients: TargetClients) -> None:
    with Stubber(clients.client("events", REGION)) as stub:
        stub.add_response(
            "put_events",
            {
                "FailedEntryCount": 1,
                "Entries": [{"ErrorCode": "ThrottlingException", "ErrorMessage": "Slow down"}],
            },
        )

        outcomes = Deliverer(clients).deliver([Delivery("r-1", BUS, json.dumps(EVENT))])

    assert outcomes == {"r-1": Refused("r-1", "ThrottlingException", "Slow down")}


def test_a_state_machine_and_a_topic_get_the_payload_unchanged(clients: TargetClients) -> None:
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
    topic = "arn:aws:sns:us-east-1:123456789012:orders"
    with (
        Stubber(clients.client("stepfunctions", REGION)) as sfn,
        Stubber(clients.client("sns", REGION)) as sns,
    ):
        sfn.add_response(
            "start_execution",
            {"executionArn": f"{machine}:x", "startDate": datetime.datetime(2026, 11, 27)},
            {"stateMachineArn": machine, "input": PAYLOAD, "name": execution_name("r-1-2")},
        )
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": topic, "Message": PAYLOAD})

        outcomes = Deliverer(clients, concurrency=1).deliver(
            [Delivery("r-1", machine, PAYLOAD, dedup_id="r-1-2"), Delivery("r-2", topic, PAYLOAD)]
        )

        sfn.assert_no_pending_responses()
        sns.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None), "r-2": Delivered("r-2", None)}


NAME_RULE = re.compile(r"[A-Za-z0-9_-]{1,80}")  # within Step Functions' name rules


@given(st.text(max_size=300))
def test_an_execution_name_is_one_per_record_and_attempt_and_valid(key: str) -> None:
    name = execution_name(key)
    assert NAME_RULE.fullmatch(name)
    assert name == execution_name(key)
    assert name != execution_name(key + "-1")


def test_an_execution_that_already_exists_reads_as_delivered(clients: TargetClients) -> None:
    """botocore retried a StartExecution whose answer was lost: the state machine started it
    once, under the record's and attempt's name, and the second request is told so."""
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
    with Stubber(clients.client("stepfunctions", REGION)) as sfn:
        sfn.add_client_error(
            "start_execution",
            "ExecutionAlreadyExists",
            "Execution Already Exists",
            400,
            expected_params={
                "stateMachineArn": machine,
                "input": PAYLOAD,
                "name": execution_name("r-1-1"),
            },
        )
        outcomes = Deliverer(clients).deliver([Delivery("r-1", machine, PAYLOAD, dedup_id="r-1-1")])
        sfn.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None)}


def test_a_fair_queue_target_gets_the_group_its_rule_configures(clients: TargetClients) -> None:
    queue = "arn:aws:sqs:us-east-1:123456789012:orders"  # standard: a fair queue by its groups
    rule = "arn:aws:events:us-east-1:123456789012:rule/nightly"
    with (
        Stubber(clients.client("events", REGION)) as events,
        Stubber(clients.client("sqs", REGION)) as sqs,
    ):
        events.add_response(
            "list_targets_by_rule",
            {"Targets": [{"Id": "q", "Arn": queue, "SqsParameters": {"MessageGroupId": "t-9"}}]},
            {"Rule": "nightly"},
        )
        sqs.add_response(
            "send_message",
            {"MessageId": "m-1"},
            {
                "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
                "MessageBody": PAYLOAD,
                "MessageGroupId": "t-9",
            },
        )
        outcomes = Deliverer(clients).deliver([Delivery("r-1", queue, PAYLOAD, rule, "d")])
        sqs.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None)}


def test_a_rule_of_another_account_is_read_on_that_accounts_bus(clients: TargetClients) -> None:
    queue = "arn:aws:sqs:us-east-1:123456789012:orders"
    rule = "arn:aws:events:us-east-1:210987654321:rule/shop/nightly"
    with (
        Stubber(clients.client("events", REGION)) as events,
        Stubber(clients.client("sqs", REGION)) as sqs,
    ):
        events.add_response(
            "list_targets_by_rule",
            {"Targets": [{"Id": "q", "Arn": queue}]},
            {
                "Rule": "nightly",
                "EventBusName": "arn:aws:events:us-east-1:210987654321:event-bus/shop",
            },
        )
        sqs.add_response("send_message", {"MessageId": "m-1"})
        delivery = Delivery("r-1", queue, PAYLOAD, rule, "d", account="123456789012")
        outcomes = Deliverer(clients).deliver([delivery])
        events.assert_no_pending_responses()
    assert outcomes == {"r-1": Delivered("r-1", None)}


def test_a_service_answering_nonsense_is_that_records_refusal_alone(
    clients: TargetClients,
) -> None:
    topic = "arn:aws:sns:us-east-1:123456789012:orders"
    with Stubber(clients.client("sns", REGION)) as sns:
        sns.add_response("publish", {"MessageId": "m-1"})
        outcomes = Deliverer(clients, concurrency=1).deliver(
            # A payload no JSON reader reaches the end of: the event bus refuses it alone.
            [
                Delivery("r-1", "arn:aws:events:us-east-1:123456789012:event-bus/b", "[" * 50_000),
                Delivery("r-2", topic, PAYLOAD),
            ]
        )
    assert outcomes["r-2"] == Delivered("r-2", None)
    assert isinstance(outcomes["r-1"], Refused)
    assert outcomes["r-1"].code == "NotAnEvent"
