"""A received record as the operator sees it: its kind, where it goes back to and the error
the service recorded (`peek`, `export`, `status --sample`, `redrive --to source`).

`engine.kinds.recognise` decides, as it does for the replay: one copy of the logic. The only
thing the operator adds is the list of allowed targets, which names the function a `lambda`
record (a function's own DLQ) goes back to: the record itself does not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

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
    """The kind of a message received with boto3 (all its attributes), and its target, among
    the kinds the stack's DLQ_KIND accepts (`accepted`): with `sqs` every record is an SQS
    record, whatever its attributes look like, as the replay itself reads it."""
    return recognise(InboundMessage.from_boto3(message), replay_targets, accepted)


@dataclass(frozen=True, slots=True)
class KindCounts:
    """Records by kind, by (kind, target) and by the service's error code: `status --sample`
    and what a redrive delivered. `sampled` is how many records were looked at."""

    sampled: int = 0
    kinds: Mapping[str, int] = field(default_factory=dict)
    targets: Mapping[str, int] = field(default_factory=dict)  # "<kind> -> <target or ->"
    errors: Mapping[str, int] = field(default_factory=dict)  # error code (or message)

    @property
    def serverless(self) -> int:
        """Records of a kind other than sqs."""
        return sum(n for kind, n in self.kinds.items() if kind != RecordKind.SQS)


class KindOf(Protocol):
    """What `kind_counts` reads of a record (a `Recognised`, a peeked message)."""

    @property
    def kind(self) -> str: ...
    @property
    def target_arn(self) -> str | None: ...
    @property
    def error_code(self) -> str | None: ...
    @property
    def error_message(self) -> str | None: ...


def kind_counts(records: Iterable[KindOf]) -> KindCounts:
    kinds: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    sampled = 0
    for record in records:
        sampled += 1
        kind = str(record.kind)
        kinds[kind] += 1
        if kind != RecordKind.SQS:
            targets[f"{kind} -> {record.target_arn or '-'}"] += 1
        error = record.error_code or record.error_message
        if error:
            errors[error] += 1
    return KindCounts(sampled, dict(kinds), dict(targets), dict(errors))
