"""The kinds of record: the strategy each fills in (`Kind`), one module per kind (imported on
first use), and how a record's kind is told (only among the kinds DLQ_KIND accepts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, ClassVar

from dlq_replay.core import attributes
from dlq_replay.core.attributes import PARK_ERROR_ATTRIBUTE, Attribute
from dlq_replay.core.decision import Action, Decision, ParkReason, build_copy, with_room
from dlq_replay.core.kinds import KIND_ATTRIBUTE, TARGET_ATTRIBUTE, Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage, OutboundMessage
from dlq_replay.core.queues import TargetService, arn_account, target_allowed, target_service
from dlq_replay.core.settings import Settings
from dlq_replay.core.text import error_text

if TYPE_CHECKING:
    from dlq_replay.targets.delivery import Delivery  # imported by delivery_of, when used


class Kind:
    """A kind's strategy: a serverless kind's as it stands (`engine.kinds.sqs` overrides it).
    `refusals`: the target's refusal codes no retry can change, and the park each one is."""

    # True: the destination takes a copy of the record; False: the payload goes to the target.
    delivers_a_copy: ClassVar[bool] = False

    def __init__(
        self,
        record_kind: RecordKind,
        recognise: Callable[[InboundMessage, frozenset[str]], Recognised | None],
        refusals: Mapping[str, ParkReason] | None = None,
    ) -> None:
        self.record_kind, self.recognise, self.refusals = record_kind, recognise, refusals or {}

    def destination(
        self, message: InboundMessage, recognised: Recognised, settings: Settings
    ) -> str | ParkReason:
        refusal = target_refusal(recognised.target_arn, settings.replay_target_arns)
        return refusal or recognised.target_arn or ParkReason.UNKNOWN_TARGET

    def delay_limit(self, destination: str) -> int:
        return 0

    def copy(
        self,
        message: InboundMessage,
        recognised: Recognised,
        decision: Decision,
        settings: Settings,
    ) -> OutboundMessage:
        """`build_copy`'s; a serverless record's then marked where a slot is free: a parked
        count it did not carry (the ledger's), the kind, a park's error and the target."""
        copy = build_copy(message, decision, settings)
        if self.delivers_a_copy:
            return copy
        parked = decision.action is Action.PARK
        marks = []
        if (
            parked
            and decision.attempt is not None
            and settings.count_attribute not in copy.attributes
        ):
            marks.append((settings.count_attribute, attributes.number(decision.attempt)))
        marks.append((KIND_ATTRIBUTE, attributes.string(recognised.kind.value)))
        if parked and decision.error:
            marks.append((PARK_ERROR_ATTRIBUTE, attributes.string(decision.error)))
        if recognised.target_arn:
            marks.append((TARGET_ATTRIBUTE, attributes.string(recognised.target_arn)))
        return replace(copy, attributes=with_room(message.body, dict(copy.attributes), marks))


def delivery_of(
    message: InboundMessage, recognised: Recognised, target_arn: str, key: str
) -> Delivery:
    """The one builder of a delivery (the replay's, the redrive's), deduplicated by `<id>-<key>`."""
    from dlq_replay.targets.delivery import Delivery

    arn = message.queue_arn
    return Delivery(
        record_id=message.message_id,
        target_arn=target_arn,
        payload=recognised.payload,
        rule_arn=recognised.rule_arn,
        dedup_id=f"{message.message_id}-{key}",
        account=arn_account(arn),
    )


def target_refusal(target: str | None, allowed: frozenset[str]) -> ParkReason | None:
    """Why a record may not be delivered to `target` (None: it may)."""
    if target is None:
        return ParkReason.UNKNOWN_TARGET
    if target_service(target) is TargetService.OTHER:
        return ParkReason.UNSUPPORTED_TARGET
    if not target_allowed(target, allowed):
        return ParkReason.TARGET_NOT_ALLOWED
    return None


def recorded_error(recognised: Recognised) -> str:
    """The service's error the record carries, as `dlq-replay-error` holds one."""
    code, text = recognised.error_code, recognised.error_message
    joined = f"{code}: {text}" if code and text and text != code else code or text or ""
    return error_text(joined)


def string_attribute(values: Mapping[str, Attribute], name: str) -> str | None:
    value = values.get(name)
    if value is None or value.base_type != "String" or not value.string_value:
        return None
    return value.string_value


# The module of each kind, the most specific first, as recognition tries them.
KIND_MODULES = {
    RecordKind.EVENTBRIDGE: ".eventbridge",
    RecordKind.LAMBDA: ".lambda_dlq",
    RecordKind.LAMBDA_DESTINATION: ".lambda_destination",
    RecordKind.SQS: ".sqs",
}


@cache
def kind_of(record_kind: RecordKind) -> Kind:
    kind: Kind = import_module(KIND_MODULES[record_kind], __name__).KIND
    return kind


def recognise(
    message: InboundMessage,
    replay_targets: frozenset[str],
    accepted: frozenset[RecordKind] = frozenset(RecordKind),
) -> Recognised:
    """The record's kind among `accepted` (the one our copy is marked with first), else SQS."""
    plain = Recognised(RecordKind.SQS, payload=message.body)
    if not accepted - {RecordKind.SQS}:
        return plain
    marked = string_attribute(message.attributes, KIND_ATTRIBUTE)
    order = [kind for kind in KIND_MODULES if kind in accepted and kind is not RecordKind.SQS]
    for record_kind in sorted(order, key=lambda kind: kind.value != marked):  # marked first
        try:
            recognised = kind_of(record_kind).recognise(message, replay_targets)
        except Exception:  # a record a recogniser cannot read is not of its kind
            recognised = None
        if recognised is not None:
            return recognised
    return plain
