"""A new kind as docs/development.md ('One record, one redrive, and a new kind') says it is
added: a module that defines `KIND` (this one: a toy whose record names its target in a
`TOY_TARGET` attribute and whose target's `NotAnEvent` refusal parks at once) and its line in
`KIND_MODULES`. The enum member cannot be added at run time, so the toy takes the place of the
destination kind's module; the rest of the engine (recognition, the decision, the copy, the
delivery, the refusal) finds it by that line alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dlq_replay.core.attributes import Attribute
from dlq_replay.core.backoff import BackoffPolicy
from dlq_replay.core.decision import Action, ParkReason
from dlq_replay.core.kinds import KIND_ATTRIBUTE, TARGET_ATTRIBUTE, Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.settings import Settings
from dlq_replay.engine.decide import RecordCase
from dlq_replay.engine.kinds import (
    KIND_MODULES,
    Kind,
    delivery_of,
    kind_of,
    recognise,
    string_attribute,
)
from dlq_replay.targets.delivery import RefusalCode

from ._support import ACCOUNT, DLQ, DLQ_ARN, NOW, OPERATOR, FixedRandom

TOY = RecordKind.LAMBDA_DESTINATION  # the slot the toy is registered in
TARGET = f"arn:aws:sqs:us-east-1:{ACCOUNT}:toy-target"


def recognise_toy(message: InboundMessage, replay_targets: frozenset[str]) -> Recognised | None:
    target = string_attribute(message.attributes, "TOY_TARGET")
    if target is None:
        return None
    return Recognised(TOY, target_arn=target, payload=message.body.upper(), error_code="Toy")


KIND = Kind(TOY, recognise_toy, refusals={RefusalCode.NOT_AN_EVENT: ParkReason.NOT_AN_EVENT})


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This module on the kind's line; the kinds looked up before and after are forgotten."""
    kind_of.cache_clear()
    monkeypatch.setitem(KIND_MODULES, TOY, __name__)
    yield
    kind_of.cache_clear()


def toy_record(**values: Attribute) -> InboundMessage:
    return InboundMessage(
        message_id="t-1", receipt_handle="r", body="hello", attributes=values, queue_arn=DLQ_ARN
    )


def settings(targets: frozenset[str] = frozenset({TARGET})) -> Settings:
    return Settings(
        operator_queue_url=OPERATOR,
        backoff=BackoffPolicy(base_seconds=60, multiplier=2, cap_seconds=3600),
        dlq_kind="any",
        replay_target_arns=targets,
    )


def case_of(message: InboundMessage, s: Settings) -> RecordCase:
    recognised = recognise(message, s.replay_target_arns, s.accepted_kinds)
    return RecordCase(message, s, DLQ, NOW, FixedRandom(0), recognised=recognised)


def test_the_registered_module_is_the_kind_and_recognises_its_records() -> None:
    assert kind_of(TOY) is KIND
    found = recognise(toy_record(TOY_TARGET=Attribute("String", TARGET)), frozenset())
    assert (found.kind, found.target_arn, found.payload) == (TOY, TARGET, "HELLO")
    assert recognise(toy_record(), frozenset()).kind is RecordKind.SQS  # not the toy's


def test_a_toy_record_is_decided_delivered_and_parked_by_its_own_rules() -> None:
    s = settings()
    case = case_of(toy_record(TOY_TARGET=Attribute("String", TARGET)), s)
    assert case.strategy is KIND
    decision = case.decide()
    assert (decision.action, decision.destination, decision.attempt) == (
        Action.REPLAY,
        TARGET,
        1,
    )
    delivery = delivery_of(case.message, case.recognised, TARGET, str(decision.attempt))
    assert (delivery.target_arn, delivery.payload, delivery.account) == (TARGET, "HELLO", ACCOUNT)
    # Its refusal that no retry changes parks now; another waits for the next attempt.
    reason = case.strategy.refusals.get(RefusalCode.NOT_AN_EVENT)
    parked = case.after_refusal(decision, error="NotAnEvent: no", reason=reason)
    assert (parked.action, parked.reason) == (Action.PARK, ParkReason.NOT_AN_EVENT)
    waits = case.after_refusal(decision, error="Throttled", reason=case.strategy.refusals.get("T"))
    assert waits.action is Action.DEFER
    copy = case.strategy.copy(case.message, case.recognised, parked, s)
    assert copy.queue_url == OPERATOR
    assert copy.attributes[KIND_ATTRIBUTE] == Attribute("String", TOY.value)
    assert copy.attributes[TARGET_ATTRIBUTE] == Attribute("String", TARGET)


def test_a_toy_record_to_a_target_not_allowed_is_parked_by_the_shared_rules() -> None:
    case = case_of(toy_record(TOY_TARGET=Attribute("String", TARGET)), settings(frozenset()))
    decision = case.decide()
    assert (decision.action, decision.reason) == (Action.PARK, ParkReason.TARGET_NOT_ALLOWED)
