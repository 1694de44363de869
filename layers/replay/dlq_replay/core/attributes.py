"""Message attributes between the shapes Lambda delivers, boto3 receives and SQS accepts: a
replayed copy carries every attribute byte for byte, whatever its type suffix (`Binary.gzip`),
but list values, which SQS refuses on send (the caller logs their names)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from dlq_replay.core.text import utf8_size

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

# The prefix of the attributes the replay writes for itself (refused for a count attribute).
INTERNAL_ATTRIBUTE_PREFIX = "dlq-replay-"
NOT_BEFORE_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}not-before"
PARK_REASON_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}park-reason"
# When the message first failed (epoch seconds), for MAX_MESSAGE_AGE_SECONDS.
FIRST_FAILURE_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}first-failure"
# "<first DLQ message id>/<attempt>", for consumers to deduplicate by (WRITE_ORIGIN_ATTRIBUTE).
ORIGIN_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}origin"
PARK_ERROR_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}error"
MAX_MESSAGE_ATTRIBUTES = 10  # SQS's limit per message
# The count is valid below this bound (docs/design.md, 'What happens to one record', step 1).
COUNT_LIMIT = 10**9
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Attribute:
    data_type: str
    string_value: str | None = None
    binary_value: bytes | None = None

    @property
    def base_type(self) -> str:
        """`String`, `Number` or `Binary`: the part of the data type before any custom suffix."""
        return self.data_type.split(".", 1)[0]

    def size(self, name: str) -> int:
        """Bytes this attribute adds to a message, as SQS counts them against the size limit."""
        value = (
            len(self.binary_value)
            if self.binary_value is not None
            else utf8_size(self.string_value or "")
        )
        return utf8_size(name) + utf8_size(self.data_type) + value

    def to_sqs(self) -> MessageAttributeValueTypeDef:
        if self.binary_value is not None:
            return {"DataType": self.data_type, "BinaryValue": self.binary_value}
        return {"DataType": self.data_type, "StringValue": self.string_value or ""}

    def to_lambda(self) -> dict[str, Any]:
        """The shape Lambda's SQS event source delivers (no null for the other value's key)."""
        value: dict[str, Any] = (
            {"binaryValue": base64.b64encode(self.binary_value).decode()}
            if self.binary_value is not None
            else {"stringValue": self.string_value}
        )
        return {**value, "stringListValues": [], "binaryListValues": [], "dataType": self.data_type}


def number(value: int) -> Attribute:
    return Attribute("Number", str(value))


def string(value: str) -> Attribute:
    return Attribute("String", value)


@dataclass(frozen=True, slots=True)
class ParsedAttributes:
    """The attributes a copy can carry, and those it cannot, each with why (for the log)."""

    values: dict[str, Attribute]
    dropped: Mapping[str, str] = field(default_factory=dict)


_NOTHING_DROPPED: Mapping[str, str] = MappingProxyType({})


def from_lambda(raw: Mapping[str, Mapping[str, Any]] | None) -> ParsedAttributes:
    """Attributes of a Lambda SQS record (`messageAttributes`: camelCase, base64 binaries)."""
    return _parse(raw, _LAMBDA_KEYS, _from_base64)


def from_sqs(raw: Mapping[str, Mapping[str, Any]] | None) -> ParsedAttributes:
    """Attributes as boto3's ReceiveMessage returns them (PascalCase, raw bytes)."""
    return _parse(raw, _SQS_KEYS, bytes)


# The keys of each shape: data type, string value, binary value, the two list values.
_Keys = tuple[str, str, str, str, str]
_LAMBDA_KEYS = ("dataType", "stringValue", "binaryValue", "stringListValues", "binaryListValues")
_SQS_KEYS = ("DataType", "StringValue", "BinaryValue", "StringListValues", "BinaryListValues")


def is_mapping(value: object) -> bool:
    """A JSON object; a dict skips the ABC's instance check (a fifth of reading attributes)."""
    return type(value) is dict or isinstance(value, Mapping)


def _from_base64(value: Any) -> bytes:
    return base64.b64decode(value, validate=True)


def _parse(
    raw: Mapping[str, Mapping[str, Any]] | None, keys: _Keys, to_bytes: Callable[[Any], bytes]
) -> ParsedAttributes:
    """Each value read from the key its data type names, not whichever is present (Powertools'
    sample events carry both on one Number); one missing for its type is dropped, with why."""
    type_key, string_key, binary_key, *list_keys = keys
    values: dict[str, Attribute] = {}
    dropped: dict[str, str] = {}
    if raw is not None and not is_mapping(raw):
        return ParsedAttributes(values, {"*": "the message attributes are not an object"})
    for name, item in (raw or {}).items():
        if not is_mapping(item):
            dropped[str(name)] = "not an attribute object"
            continue
        data_type = str(item.get(type_key) or "String")
        base_type = data_type.split(".", 1)[0]
        if base_type not in ("String", "Number", "Binary"):
            dropped[name] = f"unknown data type {data_type!r} (String, Number or Binary)"
            continue
        key = binary_key if base_type == "Binary" else string_key
        value = item.get(key)
        if value is None and any(item.get(list_key) for list_key in list_keys):
            dropped[name] = "list values cannot be sent to SQS"
        elif value is None:
            dropped[name] = f"a {base_type} attribute without its {key}"
        elif base_type != "Binary":
            values[name] = Attribute(data_type, string_value=str(value))
        else:
            try:
                values[name] = Attribute(data_type, binary_value=to_bytes(value))
            except (binascii.Error, ValueError, TypeError):
                dropped[name] = f"its {key} is not valid base64"
    # Most records drop nothing: one shared empty mapping, not an empty dict per record.
    return ParsedAttributes(values, dropped or _NOTHING_DROPPED)


def parse_count(attribute: Attribute | None, limit: int = COUNT_LIMIT) -> int | None:
    """The count an attribute holds: 0 when absent, None unless plain digits below `limit`."""
    if attribute is None:
        return 0
    if attribute.base_type not in {"Number", "String"} or attribute.string_value is None:
        return None
    text = attribute.string_value
    digits = text.lstrip("0") or "0"
    if not _DIGITS.fullmatch(text) or len(digits) > len(str(limit)):
        return None  # the length test keeps int() away from huge digit strings
    value = int(digits)  # without the leading zeros, which int() counts against its digit limit
    return value if value < limit else None
