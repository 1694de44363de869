"""The audit trail of operator actions: who moved, deleted, edited or paused what, when, and
how it ended (docs/operator-audit.md).

An action is recorded twice, append-only: a `begin` record before it changes anything and an
`end` record with its tally or its error. `model` holds the records, `identity` asks STS who
the caller is, `store` keeps them (the stack's DynamoDB table, or a local JSON Lines file),
`recorder.Action` writes them around an action, held by the command that runs it. Never in
the Lambda layer: only operators write it.
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
from dlq_replay.audit.store import (
    AuditStore,
    DynamoAuditStore,
    FileAuditStore,
    default_file_path,
)

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
