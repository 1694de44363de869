"""Message attributes between the shapes Lambda delivers, boto3 receives and SQS accepts.

A replayed copy must carry every attribute byte for byte, whatever its type suffix
(`Number.int`, `Binary.gzip`, ...): Lambda delivers binaries base64-encoded, SQS wants the raw
bytes back. List values exist in the API but SQS refuses them on send, so they are the one
thing a copy cannot carry; the caller logs their names.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

# SQS allows at most this many message attributes on one message.
MAX_MESSAGE_ATTRIBUTES = 10
# The count is valid below this bound (DESIGN.md §3 step 1).
COUNT_LIMIT = 10**9
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Attribute:
    """One message attribute value, typed as SQS types it."""

    data_type: str
    string_value: str | None = None
    binary_value: bytes | None = None

    @property
    def base_type(self) -> str:
        """`String`, `Number` or `Binary`: the part of the data type before any custom suffix."""
        return self.data_type.split(".", 1)[0]

    def size(self, name: str) -> int:
        """Bytes this attribute adds to a message, as SQS counts them against the size limit."""
        value = self.binary_value if self.binary_value is not None else self.string_bytes()
        return len(name.encode()) + len(self.data_type.encode()) + len(value)

    def string_bytes(self) -> bytes:
        return (self.string_value or "").encode()

    def to_sqs(self) -> MessageAttributeValueTypeDef:
        """The `MessageAttributeValue` shape of SendMessage / SendMessageBatch."""
        if self.binary_value is not None:
            return {"DataType": self.data_type, "BinaryValue": self.binary_value}
        return {"DataType": self.data_type, "StringValue": self.string_value or ""}

    def to_lambda(self) -> dict[str, Any]:
        """The shape Lambda's SQS event source delivers: camelCase, base64 binaries, and
        `stringValue` only on String/Number values, `binaryValue` only on Binary ones (Lambda
        leaves the other key out rather than sending null)."""
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
    """The attributes a copy can carry, and the names of those it cannot (list values)."""

    values: dict[str, Attribute]
    dropped: tuple[str, ...] = ()


def from_lambda(raw: Mapping[str, Mapping[str, Any]] | None) -> ParsedAttributes:
    """Attributes of a Lambda SQS record (`messageAttributes`)."""
    values: dict[str, Attribute] = {}
    dropped: list[str] = []
    for name, item in (raw or {}).items():
        data_type = str(item.get("dataType") or item.get("DataType") or "String")
        binary = item.get("binaryValue")
        text = item.get("stringValue")
        if binary is not None:
            try:
                values[name] = Attribute(
                    data_type, binary_value=base64.b64decode(binary, validate=True)
                )
            except (binascii.Error, ValueError):
                dropped.append(name)
        elif text is not None:
            values[name] = Attribute(data_type, string_value=str(text))
        else:
            dropped.append(name)
    return ParsedAttributes(values, tuple(dropped))


def from_sqs(raw: Mapping[str, Mapping[str, Any]] | None) -> ParsedAttributes:
    """Attributes as boto3's ReceiveMessage returns them (PascalCase, raw bytes)."""
    values: dict[str, Attribute] = {}
    dropped: list[str] = []
    for name, item in (raw or {}).items():
        data_type = str(item.get("DataType", "String"))
        if item.get("BinaryValue") is not None:
            values[name] = Attribute(data_type, binary_value=bytes(item["BinaryValue"]))
        elif item.get("StringValue") is not None:
            values[name] = Attribute(data_type, string_value=str(item["StringValue"]))
        else:
            dropped.append(name)
    return ParsedAttributes(values, tuple(dropped))


def parse_count(attribute: Attribute | None, limit: int = COUNT_LIMIT) -> int | None:
    """The replay count an attribute holds: 0 when absent, None when it is not a valid count.

    Valid means a String or Number attribute whose text is plain decimal digits below `limit`
    (10^9 for the count); a Binary attribute, a sign, a fraction, an exponent or an empty value
    is not a count.
    """
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
