"""Delivering records to each kind of target on moto in-process: what the target receives,
byte for byte, and what the service refuses. moto's Lambda accepts invocations without Docker
(its `use_docker` setting off); exact request shapes are in test_target_requests.py."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.targets.deliverer import Deliverer, TargetClients
from dlq_replay.targets.delivery import Delivered, Delivery, Refused
from moto import mock_aws

from integration.harness import moto_function

if TYPE_CHECKING:
    from mypy_boto3_events.type_defs import TargetTypeDef
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import MessageTypeDef

EVENTS = Path(__file__).resolve().parents[2] / "events"
REGION = "us-east-1"
ACCOUNT = "123456789012"
# White space, escapes and characters outside ASCII: what arrives must be these very bytes.
PAYLOAD = '{ "order":  "é-42",\n "note": "tab\\there", "emoji": "\U0001f4e6" }'


@pytest.fixture
def moto() -> Iterator[None]:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


@pytest.fixture
def clients(moto: None) -> TargetClients:
    return TargetClients(boto3.Session(region_name=REGION))


def make_queue(name: str, region: str = REGION, *, fifo: bool = False) -> tuple[str, str]:
    sqs = boto3.client("sqs", region_name=region)
    attributes: dict[QueueAttributeNameType, str] = {"FifoQueue": "true"} if fifo else {}
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return url, arn["QueueArn"]


def received(url: str, region: str = REGION) -> list[MessageTypeDef]:
    sqs = boto3.client("sqs", region_name=region)
    response = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
    )
    return list(response.get("Messages", []))


def fifo_rule(queue_arn: str, group: str, bus: str = "orders") -> str:
    """A rule on a custom bus whose target is the FIFO queue, with `group` as its group id."""
    events = boto3.client("events", region_name=REGION)
    events.create_event_bus(Name=bus)
    rule = events.put_rule(Name="to-fifo", EventBusName=bus, EventPattern='{"source": ["shop"]}')
    target: TargetTypeDef = {
        "Id": "fifo",
        "Arn": queue_arn,
        "SqsParameters": {"MessageGroupId": group},
    }
    events.put_targets(Rule="to-fifo", EventBusName=bus, Targets=[target])
    return str(rule["RuleArn"])


def test_a_queue_receives_the_payload_byte_exact(clients: TargetClients) -> None:
    url, arn = make_queue("target")

    outcomes = Deliverer(clients).deliver([Delivery("r-1", arn, PAYLOAD)])

    assert outcomes == {"r-1": Delivered("r-1", None)}
    assert [m["Body"] for m in received(url)] == [PAYLOAD]


def test_the_client_is_the_target_arns_region(clients: TargetClients) -> None:
    url, arn = make_queue("far", region="eu-west-1")

    outcomes = Deliverer(clients).deliver([Delivery("r-1", arn, PAYLOAD)])

    assert outcomes == {"r-1": Delivered("r-1", None)}
    assert [m["Body"] for m in received(url, region="eu-west-1")] == [PAYLOAD]


def test_a_fifo_queue_gets_the_rules_group_id_read_once(clients: TargetClients) -> None:
    url, arn = make_queue("target.fifo", fifo=True)
    rule = fifo_rule(arn, group="orders-group")
    reads: list[str] = []
    clients.client("events", REGION).meta.events.register(
        "before-call.events.ListTargetsByRule", lambda **_: reads.append("read")
    )

    outcomes = Deliverer(clients).deliver(
        [Delivery(f"r-{i}", arn, f"{PAYLOAD}{i}", rule, dedup_id=f"d-{i}") for i in range(3)]
    )

    assert set(outcomes.values()) == {Delivered(f"r-{i}", None) for i in range(3)}
    messages = received(url)
    assert [m["Body"] for m in messages] == [f"{PAYLOAD}{i}" for i in range(3)]
    assert {m["Attributes"]["MessageGroupId"] for m in messages} == {"orders-group"}
    assert [m["Attributes"]["MessageDeduplicationId"] for m in messages] == ["d-0", "d-1", "d-2"]
    assert reads == ["read"]


def test_documented_fifo_records_reach_the_queue_in_order_in_their_rules_group(
    clients: TargetClients,
) -> None:
    records = json.loads((EVENTS / "dlq-eventbridge-fifo.json").read_text(encoding="utf-8"))
    deliveries = [
        Delivery(
            record["messageId"],
            record["messageAttributes"]["TARGET_ARN"]["stringValue"],
            record["body"],
            record["messageAttributes"]["RULE_ARN"]["stringValue"],
            dedup_id=f"{record['messageId']}-1",
        )
        for record in records["Records"]
    ]
    url, arn = make_queue("orders.fifo", fifo=True)
    assert {d.target_arn for d in deliveries} == {arn}
    # The rule the records name, on the default bus, with the FIFO queue as its target.
    events = boto3.client("events", region_name=REGION)
    events.put_rule(Name="order-steps", EventPattern='{"source": ["com.example.orders"]}')
    events.put_targets(
        Rule="order-steps",
        Targets=[{"Id": "steps", "Arn": arn, "SqsParameters": {"MessageGroupId": "order-steps"}}],
    )

    outcomes = Deliverer(clients).deliver(deliveries)

    assert outcomes == {d.record_id: Delivered(d.record_id, None) for d in deliveries}
    messages = received(url)
    assert [m["Body"] for m in messages] == [d.payload for d in deliveries]
    assert {m["Attributes"]["MessageGroupId"] for m in messages} == {"order-steps"}


@pytest.mark.parametrize(
    ("rule_names_it", "code"),
    [(False, "TargetNotInRule"), (None, "MissingGroupId")],
)
def test_a_fifo_queue_without_a_group_id_is_refused(
    clients: TargetClients, rule_names_it: bool | None, code: str
) -> None:
    url, arn = make_queue("target.fifo", fifo=True)
    # The rule's FIFO target is another queue (EventBridge requires a group id on a FIFO
    # target, so the rule cannot have this one without it: what the rule would give this
    # one is unknown); or the record names no rule.
    _, other = make_queue("other.fifo", fifo=True)
    rule = fifo_rule(other, group="g") if rule_names_it is False else None

    outcome = Deliverer(clients).deliver([Delivery("r-1", arn, PAYLOAD, rule, "d-1")])["r-1"]

    assert isinstance(outcome, Refused)
    assert outcome.code == code
    assert received(url) == []


def test_a_rule_that_does_not_exist_is_the_services_refusal(clients: TargetClients) -> None:
    _, arn = make_queue("target.fifo", fifo=True)
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/gone"

    outcome = Deliverer(clients).deliver([Delivery("r-1", arn, PAYLOAD, rule, "d-1")])["r-1"]

    assert isinstance(outcome, Refused)
    assert outcome.code == "ResourceNotFoundException"


def test_a_missing_queue_is_refused_with_the_services_error(clients: TargetClients) -> None:
    arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:never-made"

    outcome = Deliverer(clients).deliver([Delivery("r-1", arn, PAYLOAD)])["r-1"]

    assert isinstance(outcome, Refused)
    assert "NonExistentQueue" in outcome.code


def test_a_topic_delivers_the_payload_byte_exact_to_its_subscriber(clients: TargetClients) -> None:
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="orders")["TopicArn"]
    url, queue_arn = make_queue("subscriber")
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )

    outcomes = Deliverer(clients).deliver([Delivery("r-1", topic, PAYLOAD)])

    assert outcomes == {"r-1": Delivered("r-1", None)}
    assert [m["Body"] for m in received(url)] == [PAYLOAD]


def test_a_fifo_topic_is_refused_for_want_of_a_group_id(clients: TargetClients) -> None:
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="orders.fifo", Attributes={"FifoTopic": "true"})["TopicArn"]

    outcome = Deliverer(clients).deliver([Delivery("r-1", topic, PAYLOAD)])["r-1"]

    assert isinstance(outcome, Refused)
    assert outcome.code == "MissingGroupId"


def test_a_state_machine_starts_with_the_payload_as_its_input(clients: TargetClients) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    machine = sfn.create_state_machine(
        name="orders",
        definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/sfn",
    )["stateMachineArn"]

    outcomes = Deliverer(clients).deliver([Delivery("r-1", machine, PAYLOAD)])

    assert outcomes == {"r-1": Delivered("r-1", None)}
    (execution,) = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert sfn.describe_execution(executionArn=execution["executionArn"])["input"] == PAYLOAD


EVENT = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "detail-type": "Order Placed",
    "source": "shop",
    "account": ACCOUNT,
    "time": "2026-11-27T08:00:00Z",
    "region": REGION,
    "resources": ["arn:aws:dynamodb:us-east-1:123456789012:table/orders"],
    "detail": {"order": "é-42", "items": [1, 2]},
}


def test_an_event_bus_gets_the_event_and_its_rules_route_it(clients: TargetClients) -> None:
    events = boto3.client("events", region_name=REGION)
    bus = events.create_event_bus(Name="shop")["EventBusArn"]
    events.put_rule(Name="orders", EventBusName="shop", EventPattern='{"source": ["shop"]}')
    url, queue_arn = make_queue("routed")
    events.put_targets(Rule="orders", EventBusName="shop", Targets=[{"Id": "q", "Arn": queue_arn}])

    outcomes = Deliverer(clients).deliver([Delivery("r-1", bus, json.dumps(EVENT))])

    assert outcomes == {"r-1": Delivered("r-1", None)}
    (message,) = received(url)
    event = json.loads(message["Body"])
    assert {k: event[k] for k in ("source", "detail-type", "detail", "resources")} == {
        k: EVENT[k] for k in ("source", "detail-type", "detail", "resources")
    }


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        '["a list"]',
        '{"order": 42}',  # a transformed input: no source, detail-type or detail
        json.dumps({**EVENT, "detail": "a string"}),
        json.dumps({**EVENT, "time": "yesterday"}),
        json.dumps({**EVENT, "resources": "arn:aws:s3:::one"}),
    ],
)
def test_a_payload_that_is_not_an_event_is_refused_unsent(
    clients: TargetClients, payload: str
) -> None:
    events = boto3.client("events", region_name=REGION)
    bus = events.create_event_bus(Name="shop")["EventBusArn"]
    calls: list[str] = []
    clients.client("events", REGION).meta.events.register(
        "before-call.events.PutEvents", lambda **_: calls.append("put")
    )

    outcome = Deliverer(clients).deliver([Delivery("r-1", bus, payload)])["r-1"]

    assert isinstance(outcome, Refused)
    assert outcome.code == "NotAnEvent"
    assert calls == []


def make_function(name: str) -> str:
    return moto_function(name)


def test_a_function_is_invoked_and_the_invocations_request_id_returned(
    clients: TargetClients,
) -> None:
    function = make_function("orders")
    answered: list[str] = []
    clients.client("lambda", REGION).meta.events.register(
        "after-call.lambda.Invoke",
        lambda parsed, **_: answered.append(parsed["ResponseMetadata"]["RequestId"]),
    )

    outcomes = Deliverer(clients).deliver([Delivery("r-1", function, PAYLOAD)])

    assert len(answered) == 1
    assert answered[0]
    assert outcomes == {"r-1": Delivered("r-1", answered[0])}


@pytest.mark.parametrize(
    "target",
    [
        f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/orders",
        f"arn:aws:events:{REGION}:{ACCOUNT}:api-destination/orders/abc",
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:orders:1",
        "not-an-arn",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:not a queue name",
    ],
)
def test_a_target_no_record_is_delivered_to_is_refused(clients: TargetClients, target: str) -> None:
    outcome = Deliverer(clients).deliver([Delivery("r-1", target, PAYLOAD)])["r-1"]

    assert isinstance(outcome, Refused)
    assert outcome.code in {"UnsupportedTarget", "InvalidTarget"}


def test_deliveries_run_concurrently(clients: TargetClients) -> None:
    urls_arns = [make_queue(f"q-{i}") for i in range(4)]
    # Each send waits until all four are in flight: one at a time, the first would wait alone.
    together = threading.Barrier(4, timeout=10)

    def wait_for_all(**_: Any) -> None:
        together.wait()

    clients.client("sqs", REGION).meta.events.register(
        "before-parameter-build.sqs.SendMessage", wait_for_all
    )

    outcomes = Deliverer(clients, concurrency=4).deliver(
        [Delivery(f"r-{i}", arn, PAYLOAD) for i, (_, arn) in enumerate(urls_arns)]
    )

    assert set(outcomes) == {f"r-{i}" for i in range(4)}
    assert all(isinstance(o, Delivered) for o in outcomes.values())


@pytest.mark.slow
def test_a_fifo_targets_deliveries_keep_the_batchs_order(clients: TargetClients) -> None:
    url, arn = make_queue("ordered.fifo", fifo=True)
    rule = fifo_rule(arn, group="g")
    # The first send is slow: sent side by side, the second would overtake it.
    first = threading.Event()

    def slow_first(params: dict[str, Any], **_: Any) -> None:
        if not first.is_set():
            first.set()
            time.sleep(0.3)

    clients.client("sqs", REGION).meta.events.register(
        "before-parameter-build.sqs.SendMessage", slow_first
    )

    Deliverer(clients, concurrency=8).deliver(
        [Delivery(f"r-{i}", arn, f"m-{i}", rule, f"d-{i}") for i in range(4)]
    )

    assert [m["Body"] for m in received(url)] == ["m-0", "m-1", "m-2", "m-3"]
