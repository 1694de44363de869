"""Which service wrote a DLQ record, and where it goes back to (docs/design.md, 'Every
serverless dead-letter queue').

Pure: the record's attributes and body say it all. A Lambda function's asynchronous-invocation
DLQ, a Lambda OnFailure destination, an EventBridge rule target's DLQ and an SQS queue's
redrive policy each write their own shape; the replay recognises it, names the target, and
never delivers to an ARN outside the configured list (a forged record cannot make it call
anything else).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dlq_replay.core.attributes import INTERNAL_ATTRIBUTE_PREFIX, Attribute
from dlq_replay.core.messages import InboundMessage

KIND_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}kind"
TARGET_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}target"

# What each service writes on the records of its DLQ (their documented names).
LAMBDA_REQUEST_ID = "RequestID"
LAMBDA_ERROR_CODE = "ErrorCode"
LAMBDA_ERROR_MESSAGE = "ErrorMessage"
EVENTBRIDGE_RULE_ARN = "RULE_ARN"
EVENTBRIDGE_TARGET_ARN = "TARGET_ARN"
EVENTBRIDGE_ERROR_CODE = "ERROR_CODE"
EVENTBRIDGE_ERROR_MESSAGE = "ERROR_MESSAGE"

# arn:<partition>:<service>:<region>:<account>:<resource>
_ARN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):"
    r"(?P<account>\d{12}|):(?P<resource>\S+)"
)
# A function ARN, with its version or alias (or $LATEST, as destination records name it).
_FUNCTION_ARN = re.compile(
    r"(?P<function>arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64})"
    r"(?::(?P<qualifier>\$LATEST|[A-Za-z0-9_-]{1,128}))?"
)


class RecordKind(StrEnum):
    """Who wrote the record (the `dlq-replay-kind` values)."""

    SQS = "sqs"
    LAMBDA = "lambda"
    LAMBDA_DESTINATION = "lambda-destination"
    EVENTBRIDGE = "eventbridge"


# DLQ_KIND's values and the kinds each accepts: `lambda` takes both of Lambda's shapes.
KIND_CHOICES: Mapping[str, frozenset[RecordKind]] = {
    "sqs": frozenset({RecordKind.SQS}),
    "lambda": frozenset({RecordKind.LAMBDA, RecordKind.LAMBDA_DESTINATION}),
    "eventbridge": frozenset({RecordKind.EVENTBRIDGE}),
    "any": frozenset(RecordKind),
}


def accepted_kinds(dlq_kind: str) -> frozenset[RecordKind]:
    """The kinds a DLQ_KIND value accepts (ValueError for anything else)."""
    try:
        return KIND_CHOICES[dlq_kind]
    except KeyError:
        raise ValueError(dlq_kind) from None


class TargetService(StrEnum):
    """The services a record can be delivered to, and everything else."""

    LAMBDA = "lambda"
    SQS = "sqs"
    SNS = "sns"
    STATES = "states"
    EVENTS = "events"
    OTHER = "other"


def target_service(arn: str) -> TargetService:
    """The service an ARN names, among those the replay delivers to; OTHER for the rest
    (Kinesis, an API destination, a log group, ...), and for text that is no ARN."""
    match = _ARN.fullmatch(arn)
    if match is None:
        return TargetService.OTHER
    service, resource = match["service"], match["resource"]
    if service == "lambda":
        return TargetService.LAMBDA if _FUNCTION_ARN.fullmatch(arn) else TargetService.OTHER
    if service == "sqs" and ":" not in resource and "/" not in resource:
        return TargetService.SQS
    if service == "sns" and ":" not in resource and "/" not in resource:
        return TargetService.SNS
    if service == "states" and resource.startswith("stateMachine:"):
        return TargetService.STATES
    if service == "events" and resource.startswith("event-bus/"):
        return TargetService.EVENTS
    return TargetService.OTHER


def is_target_arn(text: str) -> bool:
    """Whether REPLAY_TARGET_ARNS may list it: an ARN of a service the replay delivers to."""
    return target_service(text) is not TargetService.OTHER


def target_allowed(arn: str, allowed: frozenset[str]) -> bool:
    """Listed as is, or a version or alias of a function listed unqualified."""
    if arn in allowed:
        return True
    match = _FUNCTION_ARN.fullmatch(arn)
    return bool(match and match["qualifier"] and match["function"] in allowed)


def lambda_target(allowed: frozenset[str]) -> str | None:
    """Where an asynchronous-invocation record goes: its record does not name the function, so
    the list must name exactly one; None when it names none or several."""
    functions = [arn for arn in allowed if target_service(arn) is TargetService.LAMBDA]
    return functions[0] if len(functions) == 1 else None


@dataclass(frozen=True, slots=True)
class Recognised:
    """A record's kind and what its delivery needs."""

    kind: RecordKind
    target_arn: str | None = None  # None: sqs, or a lambda record with no single function
    payload: str = ""  # what is delivered: the body, or a destination's requestPayload
    request_id: str | None = None  # Lambda's id of the invocation that failed
    error_code: str | None = None
    error_message: str | None = None
    rule_arn: str | None = None  # eventbridge: the rule whose target failed


def recognise(message: InboundMessage, replay_targets: frozenset[str]) -> Recognised:
    """The record's kind: our own waiting copy's `dlq-replay-kind` first, then the service's
    attributes, then a destination record's body; anything else is an SQS record."""
    values = message.attributes
    marked = _string(values, KIND_ATTRIBUTE)
    kinds = [RecordKind(marked)] if marked in _KIND_ORDER else []
    for kind in (*kinds, *_KIND_ORDER):
        recognised = _RECOGNISERS[kind](message, replay_targets)
        if recognised is not None:
            return recognised
    return Recognised(RecordKind.SQS, payload=message.body)


def _eventbridge(message: InboundMessage, _: frozenset[str]) -> Recognised | None:
    values = message.attributes
    target = _string(values, EVENTBRIDGE_TARGET_ARN)
    rule = _string(values, EVENTBRIDGE_RULE_ARN)
    if target is None or rule is None:
        return None
    return Recognised(
        RecordKind.EVENTBRIDGE,
        target_arn=target,
        payload=message.body,
        error_code=_string(values, EVENTBRIDGE_ERROR_CODE),
        error_message=_string(values, EVENTBRIDGE_ERROR_MESSAGE),
        rule_arn=rule,
    )


def _lambda(message: InboundMessage, replay_targets: frozenset[str]) -> Recognised | None:
    values = message.attributes
    request_id = _string(values, LAMBDA_REQUEST_ID)
    if request_id is None or LAMBDA_ERROR_CODE not in values:
        return None
    return Recognised(
        RecordKind.LAMBDA,
        target_arn=_string(values, TARGET_ATTRIBUTE) or lambda_target(replay_targets),
        payload=message.body,
        request_id=request_id,
        error_code=_string(values, LAMBDA_ERROR_CODE),
        error_message=_string(values, LAMBDA_ERROR_MESSAGE),
    )


def _destination(message: InboundMessage, _: frozenset[str]) -> Recognised | None:
    """An OnFailure invocation record: JSON with requestContext and requestPayload."""
    body = message.body
    # Cheap first: most SQS bodies are JSON too, and parsing each would cost every batch.
    if '"requestContext"' not in body or '"requestPayload"' not in body:
        return None
    try:
        record = json.loads(body)
    except ValueError:
        return None
    context = record.get("requestContext") if isinstance(record, dict) else None
    if not isinstance(context, dict) or "requestPayload" not in record:
        return None
    function, request_id = context.get("functionArn"), context.get("requestId")
    if not isinstance(function, str) or not isinstance(request_id, str):
        return None
    response = record.get("responsePayload")
    response = response if isinstance(response, dict) else {}
    condition = context.get("condition")
    return Recognised(
        RecordKind.LAMBDA_DESTINATION,
        target_arn=function,
        payload=_payload_text(record["requestPayload"]),
        request_id=request_id,
        error_code=_text(response.get("errorType")) or _text(condition),
        error_message=_text(response.get("errorMessage")) or _text(condition),
    )


def _payload_text(payload: Any) -> str:
    """The invocation's payload as JSON text. The record holds it parsed, so the bytes first
    sent are gone; compact JSON with its characters as they were is the closest form."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _string(values: Mapping[str, Attribute], name: str) -> str | None:
    value = values.get(name)
    return value.string_value if value is not None and value.string_value else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_KIND_ORDER = (RecordKind.EVENTBRIDGE, RecordKind.LAMBDA, RecordKind.LAMBDA_DESTINATION)
_RECOGNISERS = {
    RecordKind.EVENTBRIDGE: _eventbridge,
    RecordKind.LAMBDA: _lambda,
    RecordKind.LAMBDA_DESTINATION: _destination,
}
