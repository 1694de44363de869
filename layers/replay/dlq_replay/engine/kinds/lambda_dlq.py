"""A Lambda function's asynchronous-invocation DLQ: the body is the event, with `RequestID`
(String) and `ErrorCode` (Number). The record does not name the function: it is the one
REPLAY_TARGET_ARNS lists (or the target our own waiting copy carries)."""

from __future__ import annotations

from dlq_replay.core.kinds import TARGET_ATTRIBUTE, Recognised, RecordKind, lambda_target
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.kinds import Kind, string_attribute


def recognise(message: InboundMessage, replay_targets: frozenset[str]) -> Recognised | None:
    values = message.attributes
    request_id = string_attribute(values, "RequestID")
    code = values.get("ErrorCode")
    if request_id is None or code is None or code.base_type != "Number":
        return None
    return Recognised(
        RecordKind.LAMBDA,
        target_arn=string_attribute(values, TARGET_ATTRIBUTE) or lambda_target(replay_targets),
        payload=message.body,
        request_id=request_id,
        error_code=code.string_value or None,
        error_message=string_attribute(values, "ErrorMessage"),
    )


KIND = Kind(RecordKind.LAMBDA, recognise)
