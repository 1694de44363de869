"""The kinds of DLQ record, what DLQ_KIND accepts, and what a serverless record carries (each
kind's strategy: `dlq_replay.engine.kinds`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from dlq_replay.core.attributes import INTERNAL_ATTRIBUTE_PREFIX
from dlq_replay.core.queues import TargetService, target_service

KIND_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}kind"
TARGET_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}target"


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
    try:
        return KIND_CHOICES[dlq_kind]
    except KeyError:
        raise ValueError(dlq_kind) from None


def lambda_target(allowed: frozenset[str]) -> str | None:
    """The one function listed, where an asynchronous-invocation record goes; else None."""
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
