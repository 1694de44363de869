"""The audit trail of operator actions: who moved, deleted, edited or paused what, when, and
how it ended (docs/operator-audit.md). An action is recorded twice, append-only: a `begin`
record before it changes anything and an `end` record with its tally or its error. Never in the
Lambda layer: only operators write it.
"""

from dlq_replay.audit.identity import Identity, caller_identity
from dlq_replay.audit.model import (
    AuditAction,
    AuditOutcome,
    AuditPhase,
    AuditRecord,
    Origin,
    pair_records,
    utc_text,
)
from dlq_replay.audit.recorder import Action, AuditError
from dlq_replay.audit.store import AuditStore, DynamoAuditStore, FileAuditStore, default_file_path

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
    "default_file_path",
    "pair_records",
    "utc_text",
]
