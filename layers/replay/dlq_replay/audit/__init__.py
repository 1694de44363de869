"""The operators' audit trail (docs/operator-audit.md): a `begin` record before an action
changes anything, an `end` record with its tally or its error. Never in the Lambda layer."""

from dlq_replay.audit.model import (
    AuditAction,
    AuditOutcome,
    AuditPhase,
    AuditRecord,
    Identity,
    Origin,
    caller_identity,
    pair_records,
    utc_text,
)
from dlq_replay.audit.recorder import Action, AuditError
from dlq_replay.audit.store import AuditStore, DynamoAuditStore, FileAuditStore

__all__ = [
    "Action",
    "AuditAction",
    "AuditError",
    "AuditOutcome",
    "AuditPhase",
    "AuditRecord",
    "AuditStore",
    "DynamoAuditStore",
    "FileAuditStore",
    "Identity",
    "Origin",
    "caller_identity",
    "pair_records",
    "utc_text",
]
