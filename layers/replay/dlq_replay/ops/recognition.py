"""A received record as the operator sees it: its kind, target and recorded error. The replay's
own `engine.kinds.recognise` decides; the operator adds only the allowed targets, which name
the function a `lambda` record goes back to (the record does not)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.kinds import recognise

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

# Every kind: what the operator tools read when no DLQ_KIND is given them.
ALL_KINDS = frozenset(RecordKind)


def recognised(
    message: MessageTypeDef,
    replay_targets: frozenset[str],
    accepted: frozenset[RecordKind] = ALL_KINDS,
) -> Recognised:
    """Among the kinds the stack's DLQ_KIND accepts: with `sqs` every record is an SQS record,
    whatever its attributes look like, as the replay itself reads it."""
    return recognise(InboundMessage.from_boto3(message), replay_targets, accepted)
