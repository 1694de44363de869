"""An EventBridge record's target gets what its rule gives it: the target's Input, InputPath or
InputTransformer, read with ListTargetsByRule, applied to the event in the DLQ record; on moto
in-process, with moto's own routing of the same event through the same transformer as an
independent check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import boto3
import pytest
from dlq_replay.targets.deliverer import Deliverer, TargetClients
from dlq_replay.targets.delivery import Delivered, Delivery, Refused
from moto import mock_aws

from integration.test_targets import ACCOUNT, REGION, make_queue, received

if TYPE_CHECKING:
    from mypy_boto3_events.type_defs import InputTransformerTypeDef, TargetTypeDef

DETAIL = {
    "order": 42,
    "note": "ünïcödé ✓",
    "items": ["book", "pen"],
    "customer": {"name": "Ada", "tier": 2},
}
EVENT = {
    "version": "0",
    "id": "6f6a2c6e-1f1d-4c4d-9c3b-2d5f0f0e8a11",
    "detail-type": "OrderPlaced",
    "source": "shop.orders",
    "account": ACCOUNT,
    "time": "2026-11-27T10:00:00Z",
    "region": REGION,
    "resources": [],
    "detail": DETAIL,
}
BODY = json.dumps(EVENT, ensure_ascii=False)
# Substitutions moto's routing applies as AWS documents them: numbers and objects outside
# quotes, strings inside (moto adds no quotes to a string outside them).
TRANSFORMER: InputTransformerTypeDef = {
    "InputPathsMap": {
        "order": "$.detail.order",
        "note": "$.detail.note",
        "items": "$.detail.items",
        "customer": "$.detail.customer",
        "name": "$.detail.customer.name",
    },
    "InputTemplate": '{"order": <order>, "note": "<note>", "items": <items>, '
    '"customer": <customer>, "line": "order <order> for <name>"}',
}


@pytest.fixture
def clients() -> Iterator[TargetClients]:
    with mock_aws():
        yield TargetClients(boto3.Session(region_name=REGION))


def rule_with(target: TargetTypeDef, *, bus: str | None = None) -> str:
    """A rule matching the event's source, with `target`; its ARN."""
    events = boto3.client("events", region_name=REGION)
    if bus:
        events.create_event_bus(Name=bus)
    bus = bus or "default"
    arn = events.put_rule(
        Name="orders", EventPattern='{"source": ["shop.orders"]}', EventBusName=bus
    )
    events.put_targets(Rule="orders", Targets=[target], EventBusName=bus)
    return str(arn["RuleArn"])


def deliver(clients: TargetClients, *deliveries: Delivery) -> dict[str, Delivered | Refused]:
    return Deliverer(clients).deliver(deliveries)


def test_the_transformer_gives_what_motos_own_routing_gives_the_target(
    clients: TargetClients,
) -> None:
    url, arn = make_queue("routed")
    rule = rule_with({"Id": "q", "Arn": arn, "InputTransformer": TRANSFORMER})
    boto3.client("events", region_name=REGION).put_events(
        Entries=[
            {"Source": "shop.orders", "DetailType": "OrderPlaced", "Detail": json.dumps(DETAIL)}
        ]
    )
    [routed] = received(url)

    outcomes = deliver(clients, Delivery("r-1", arn, BODY, rule))

    assert outcomes == {"r-1": Delivered("r-1", None)}
    [replayed] = received(url)
    assert json.loads(replayed["Body"]) == json.loads(routed["Body"])
    assert json.loads(replayed["Body"]) == {
        "order": 42,
        "note": "ünïcödé ✓",
        "items": ["book", "pen"],
        "customer": {"name": "Ada", "tier": 2},
        "line": "order 42 for Ada",
    }


def test_a_rule_on_a_custom_bus_transforms_with_its_rule_name(clients: TargetClients) -> None:
    url, arn = make_queue("target")
    transformer: InputTransformerTypeDef = {
        "InputPathsMap": {"order": "$.detail.order"},
        "InputTemplate": '"<aws.events.rule-name> got <order> (<aws.events.rule-arn>)"',
    }
    rule = rule_with({"Id": "q", "Arn": arn, "InputTransformer": transformer}, bus="shop")
    assert rule == f"arn:aws:events:{REGION}:{ACCOUNT}:rule/shop/orders"

    assert deliver(clients, Delivery("r-1", arn, BODY, rule)) == {"r-1": Delivered("r-1", None)}
    assert [m["Body"] for m in received(url)] == [f'"orders got 42 ({rule})"']


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ({"Input": '{"constant": true}'}, '{"constant": true}'),
        ({"InputPath": "$.detail.customer"}, '{"name":"Ada","tier":2}'),
        ({}, BODY),  # no input setting: the event, byte for byte
    ],
)
def test_input_and_input_path_are_applied(
    clients: TargetClients, setting: dict[str, str], expected: str
) -> None:
    url, arn = make_queue("target")
    rule = rule_with({"Id": "q", "Arn": arn, **setting})  # type: ignore[typeddict-item]

    assert deliver(clients, Delivery("r-1", arn, BODY, rule)) == {"r-1": Delivered("r-1", None)}
    assert [m["Body"] for m in received(url)] == [expected]


@pytest.mark.parametrize(
    ("body", "template", "because"),
    [
        ("not the event", '{"o": <order>}', "not JSON"),
        (BODY, '{"o": <aws.events.event.ingestion-time>}', "does not say when"),
        (BODY, "<order> is placed", "not JSON"),
    ],
)
def test_a_transformation_that_cannot_be_applied_is_refused_unsent(
    clients: TargetClients, body: str, template: str, because: str
) -> None:
    url, arn = make_queue("target")
    transformer: InputTransformerTypeDef = {
        "InputPathsMap": {"order": "$.detail.order"},
        "InputTemplate": template,
    }
    rule = rule_with({"Id": "q", "Arn": arn, "InputTransformer": transformer})

    outcome = deliver(clients, Delivery("r-1", arn, body, rule))["r-1"]

    assert isinstance(outcome, Refused)
    assert outcome.code == "TransformNotApplied"
    assert because in outcome.message
    assert received(url) == []


def test_a_target_the_rule_no_longer_has_is_refused_unsent(clients: TargetClients) -> None:
    url, arn = make_queue("target")
    _, other = make_queue("other")
    rule = rule_with({"Id": "q", "Arn": other})

    outcome = deliver(clients, Delivery("r-1", arn, BODY, rule))["r-1"]

    assert isinstance(outcome, Refused)
    assert outcome.code == "TargetNotInRule"
    assert received(url) == []


def test_a_rule_that_cannot_be_read_refuses_its_records_with_one_read(
    clients: TargetClients,
) -> None:
    """Every EventBridge record's rule is read now, whatever its target: one read per rule per
    batch, and the service's error is each record's refusal."""
    url, arn = make_queue("target")
    gone = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/gone"
    reads: list[str] = []
    clients.client("events", REGION).meta.events.register(
        "before-call.events.ListTargetsByRule", lambda **_: reads.append("read")
    )

    outcomes = deliver(clients, *(Delivery(f"r-{i}", arn, BODY, gone) for i in range(3)))

    assert {(o.code if isinstance(o, Refused) else o) for o in outcomes.values()} == {
        "ResourceNotFoundException"
    }
    assert reads == ["read"]
    assert received(url) == []


def test_a_rules_targets_are_read_once_for_all_its_records(clients: TargetClients) -> None:
    url, arn = make_queue("target")
    rule = rule_with({"Id": "q", "Arn": arn, "InputPath": "$.detail.order"})
    reads: list[str] = []
    clients.client("events", REGION).meta.events.register(
        "before-call.events.ListTargetsByRule", lambda **_: reads.append("read")
    )
    deliverer = Deliverer(clients)

    for batch in range(2):
        outcomes = deliverer.deliver(
            [Delivery(f"r-{batch}-{i}", arn, BODY, rule) for i in range(3)]
        )
        assert all(isinstance(o, Delivered) for o in outcomes.values())

    assert reads == ["read"]
    assert sorted(m["Body"] for m in received(url)) == ["42"] * 6
