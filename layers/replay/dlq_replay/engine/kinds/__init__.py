"""The kinds of record, one module each (`base.Kind` is the strategy they fill in), and how a
record's kind is told, by DLQ_KIND (docs/design.md, 'Recognition, by mode').

Recognition reads what anyone who can send to the DLQ can write, so it runs only where it is
asked for: with `sqs` not at all (every record is an SQS record), with `lambda` or
`eventbridge` only that kind's recognisers (anything else is then an SQS record, which that
mode parks `unexpected-kind`), with `any` every one of them. A recogniser that raises on a
record (a body nested past the parser's depth, say) has not recognised it.

A kind's module is imported when its kind is first asked for: a replay of SQS records does not
load the others.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from dlq_replay.core.kinds import KIND_ATTRIBUTE, Recognised, RecordKind
from dlq_replay.engine.kinds.base import Kind, string_attribute

if TYPE_CHECKING:
    from dlq_replay.core.messages import InboundMessage

# The module of each kind, in the order recognition tries them (an EventBridge record's
# attributes are the most specific, a destination record's body the least).
KIND_MODULES = {
    RecordKind.EVENTBRIDGE: "eventbridge",
    RecordKind.LAMBDA: "lambda_dlq",
    RecordKind.LAMBDA_DESTINATION: "lambda_destination",
    RecordKind.SQS: "sqs",
}
_LOADED: dict[RecordKind, Kind] = {}


def kind_of(record_kind: RecordKind) -> Kind:
    """The strategy of a kind (its module imported on first use)."""
    kind = _LOADED.get(record_kind)
    if kind is None:
        module = import_module(f"{__name__}.{KIND_MODULES[record_kind]}")
        kind = _LOADED[record_kind] = module.KIND
    return kind


def recognise(
    message: InboundMessage,
    replay_targets: frozenset[str],
    accepted: frozenset[RecordKind] = frozenset(RecordKind),
) -> Recognised:
    """The record's kind among `accepted` (DLQ_KIND's kinds; the operator tools read every
    kind): our own waiting copy's `dlq-replay-kind` first, then each kind's recogniser; what
    none of them places is an SQS record."""
    plain = Recognised(RecordKind.SQS, payload=message.body)
    if not accepted - {RecordKind.SQS}:
        return plain
    marked = string_attribute(message.attributes, KIND_ATTRIBUTE)
    order = [kind for kind in KIND_MODULES if kind in accepted and kind is not RecordKind.SQS]
    first = [kind for kind in order if kind.value == marked]
    for record_kind in (*first, *order):
        try:
            recognised = kind_of(record_kind).recognise(message, replay_targets)
        except Exception:  # a record a recogniser cannot read is not of its kind
            recognised = None
        if recognised is not None:
            return recognised
    return plain
