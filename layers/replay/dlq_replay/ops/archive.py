"""The archive of `export` and `import`: one JSON object a line (JSON Lines), pure; the format
is docs/operator-fix.md's. A record holds what it takes to send a parked message again exactly
as it was, and the queue SQS dead-lettered it from (for `import --to source`); fields added
within `dlq-replay/1` read as `null` when a record lacks them.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from dlq_replay.core import attributes
from dlq_replay.core.attributes import Attribute
from dlq_replay.core.kinds import RecordKind
from dlq_replay.ops.receiving import ALL_KINDS, receive_count_of, recognised
from dlq_replay.ops.redrive import FailReason

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

FORMAT = "dlq-replay/1"
_BASE_TYPES = ("String", "Number", "Binary")
_INTEGERS = frozenset({"receive_count", "sent_timestamp"})
# Line breaks to str.splitlines() and JavaScript, not to JSON: only ever inside a string.
_LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


class ArchiveError(ValueError):
    """A line that is not a record of this format; the text says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    message_id: str
    body: str
    attributes: Mapping[str, Attribute] = field(default_factory=dict)
    message_group_id: str | None = None
    message_deduplication_id: str | None = None
    aws_trace_header: str | None = None
    source_arn: str | None = None  # SQS's DeadLetterQueueSourceArn: where it failed
    receive_count: int | None = None
    sent_timestamp: int | None = None  # epoch milliseconds, SQS's SentTimestamp
    kind: str | None = None  # core/kinds.py's RecordKind; None in an older archive
    target_arn: str | None = None
    error_code: str | None = None
    error_message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """`format` first, then the fields in their order (the module's layout)."""
        found = {"format": FORMAT} | {f.name: getattr(self, f.name) for f in fields(self)}
        found["attributes"] = {name: _attribute_dict(v) for name, v in self.attributes.items()}
        return found

    def to_line(self) -> str:
        """The record as one line of JSON, with its newline. Non-ASCII text is kept as is but
        for the characters other tools take for line breaks (NEL, U+2028, U+2029), escaped."""
        return json.dumps(self.to_dict(), ensure_ascii=False).translate(_LINE_BREAKS) + "\n"


def from_message(
    message: MessageTypeDef,
    replay_targets: frozenset[str] = frozenset(),
    accepted_kinds: frozenset[RecordKind] = ALL_KINDS,
) -> ArchiveRecord | FailReason:
    """The record of a received message, or why it cannot be written (a list-valued
    attribute, which SQS would not take back on send)."""
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    if parsed.dropped:
        return FailReason.UNCOPYABLE
    system = message.get("Attributes", {})
    sent = system.get("SentTimestamp", "")
    kind = recognised(message, replay_targets, accepted_kinds)
    return ArchiveRecord(
        message_id=message["MessageId"],
        body=message.get("Body", ""),
        attributes=parsed.values,
        message_group_id=system.get("MessageGroupId") or None,
        message_deduplication_id=system.get("MessageDeduplicationId") or None,
        aws_trace_header=system.get("AWSTraceHeader") or None,
        source_arn=system.get("DeadLetterQueueSourceArn") or None,
        receive_count=receive_count_of(message),
        sent_timestamp=int(sent) if sent.isdigit() else None,
        kind=kind.kind.value,
        target_arn=kind.target_arn,
        error_code=kind.error_code,
        error_message=kind.error_message,
    )


def parse_line(text: str) -> ArchiveRecord:
    """One line of an archive; ArchiveError (one line of text) when it is not a record."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ArchiveError(f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ArchiveError(f"not a JSON object but {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise ArchiveError(f"format is {data.get('format')!r}, not {FORMAT!r}")
    raw_attributes = data.get("attributes") or {}
    if not isinstance(raw_attributes, dict):
        raise ArchiveError("attributes is not an object")
    message_id = _text(data, "message_id", required=True) or ""
    body = _text(data, "body", required=True, empty=True) or ""
    values = {name: _attribute(name, v) for name, v in raw_attributes.items()}
    optional: dict[str, Any] = {  # checked in the fields' order, as the error names the first
        f.name: (_integer if f.name in _INTEGERS else _text)(data, f.name)
        for f in fields(ArchiveRecord)[3:]
    }
    return ArchiveRecord(message_id, body, values, **optional)


def _attribute_dict(value: Attribute) -> dict[str, str]:
    if value.binary_value is not None:
        return {
            "DataType": value.data_type,
            "BinaryValue": base64.b64encode(value.binary_value).decode("ascii"),
        }
    return {"DataType": value.data_type, "StringValue": value.string_value or ""}


def _attribute(name: str, item: Any) -> Attribute:
    where = f"attribute {name!r}"
    if not isinstance(item, dict):
        raise ArchiveError(f"{where} is not an object")
    data_type = item.get("DataType")
    if not isinstance(data_type, str) or data_type.split(".", 1)[0] not in _BASE_TYPES:
        raise ArchiveError(f"{where}: DataType {data_type!r} is not String, Number or Binary")
    if data_type.startswith("Binary"):
        encoded = item.get("BinaryValue")
        if not isinstance(encoded, str):
            raise ArchiveError(f"{where}: a {data_type} attribute needs a base64 BinaryValue")
        try:
            return Attribute(data_type, binary_value=base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            raise ArchiveError(f"{where}: BinaryValue is not valid base64") from None
    text = item.get("StringValue")
    if not isinstance(text, str):
        raise ArchiveError(f"{where}: a {data_type} attribute needs a StringValue string")
    return Attribute(data_type, string_value=text)


def _text(
    data: dict[str, Any], key: str, *, required: bool = False, empty: bool = False
) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (not value and not empty):
        wanted = "a string" if empty else "a non-empty string"
        raise ArchiveError(f"{key} is {json.dumps(value)[:40]}, not {wanted}")
    return str(value)


def _integer(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArchiveError(f"{key} is {json.dumps(value)[:40]}, not an integer")
    return value
