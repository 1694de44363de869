"""An EventBridge rule target's DLQ: the body is the event that matched the rule; `RULE_ARN`
and `TARGET_ARN` name the rule and the target. A refusal that comes from the rule or the
target's type, not from the moment, parks at once (`refusals`)."""

from __future__ import annotations

from dlq_replay.core.decision import ParkReason
from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.kinds import Kind, string_attribute
from dlq_replay.targets.delivery import RefusalCode


def recognise(message: InboundMessage, replay_targets: frozenset[str]) -> Recognised | None:
    values = message.attributes
    target = string_attribute(values, "TARGET_ARN")
    rule = string_attribute(values, "RULE_ARN")
    if target is None or rule is None:
        return None
    return Recognised(
        RecordKind.EVENTBRIDGE,
        target_arn=target,
        payload=message.body,
        error_code=string_attribute(values, "ERROR_CODE"),
        error_message=string_attribute(values, "ERROR_MESSAGE"),
        rule_arn=rule,
    )


KIND = Kind(
    RecordKind.EVENTBRIDGE,
    recognise,
    refusals={
        RefusalCode.TARGET_NOT_IN_RULE: ParkReason.TARGET_NOT_IN_RULE,
        RefusalCode.TRANSFORM_NOT_APPLIED: ParkReason.TRANSFORM_NOT_APPLIED,
        RefusalCode.NOT_AN_EVENT: ParkReason.NOT_AN_EVENT,
        RefusalCode.MISSING_GROUP_ID: ParkReason.MISSING_GROUP_ID,
    },
)
