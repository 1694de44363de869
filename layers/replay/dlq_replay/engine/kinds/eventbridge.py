"""An EventBridge rule target's DLQ (the target's `DeadLetterConfig`): the body is the event
that matched the rule; `RULE_ARN` and `TARGET_ARN` (String) name the rule and the target, with
`ERROR_CODE` and `ERROR_MESSAGE` the error. The target is delivered to by its service, the
event given as the rule's target configuration gives it (targets/deliverer.py).

A refusal that comes from the rule or the target type, not from the moment, parks at once:
the rule no longer has the target, its transformation cannot be applied to the record, the
payload for an event bus is no event, or a FIFO target has no group id in its rule (an SNS
FIFO topic never has one: EventBridge cannot target it).
"""

from __future__ import annotations

from dlq_replay.core.decision import ParkReason
from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.kinds import Kind, string_attribute


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
        "TargetNotInRule": ParkReason.TARGET_NOT_IN_RULE,
        "TransformNotApplied": ParkReason.TRANSFORM_NOT_APPLIED,
        "NotAnEvent": ParkReason.NOT_AN_EVENT,
        "MissingGroupId": ParkReason.MISSING_GROUP_ID,
    },
)
