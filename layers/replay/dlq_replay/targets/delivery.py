"""What is delivered and what came of it: the delivery only reports what the service said."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RefusalCode(StrEnum):
    """The refusals the delivery gives itself; a service's own error code is passed on."""

    UNSUPPORTED_TARGET = "UnsupportedTarget"  # no delivered service (core.queues.is_target_arn)
    INVALID_TARGET = "InvalidTarget"  # a malformed target or rule ARN
    TARGET_NOT_IN_RULE = "TargetNotInRule"
    TRANSFORM_NOT_APPLIED = "TransformNotApplied"
    NOT_AN_EVENT = "NotAnEvent"  # PutEvents: the payload is not a whole event
    MISSING_GROUP_ID = "MissingGroupId"  # a FIFO target and no group id to send with
    FAILED_ENTRY = "FailedEntry"  # PutEvents failed the entry without a code
    CLIENT_ERROR = "ClientError"  # the service answered an error without a code


@dataclass(frozen=True, slots=True)
class Delivery:
    """One record to deliver: `payload` to `target_arn`, with the rule whose configuration of
    the target applies. `dedup_id`: the same for the same record and attempt."""

    record_id: str
    target_arn: str
    payload: str
    rule_arn: str | None = None
    dedup_id: str | None = None
    account: str | None = None  # the DLQ's: a rule of another account is read by its bus's ARN


@dataclass(frozen=True, slots=True)
class Delivered:
    """The target's service accepted the record (`request_id`: Lambda's for the invocation)."""

    record_id: str
    request_id: str | None


@dataclass(frozen=True, slots=True)
class Refused:
    """The target's service refused the record (its error), or it could not be sent."""

    record_id: str
    code: str
    message: str


DeliveryResult = Delivered | Refused
