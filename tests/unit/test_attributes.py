"""Attribute mapping between Lambda's, boto3's and SQS's shapes, and the count parser."""

from __future__ import annotations

import base64
import gzip
from typing import Any

import pytest
from dlq_replay.core import attributes
from dlq_replay.core.attributes import Attribute, from_lambda, from_sqs, parse_count

from ._support import binary_attr, event_records, string_attr

NON_UTF8 = bytes(range(256)) + b"\xc3\x28\xe2\x82"

# (Lambda shape, the Attribute it parses to, the SendMessage shape, the boto3 receive shape)
CASES: list[tuple[dict[str, Any], Attribute, dict[str, Any], dict[str, Any]]] = [
    (
        string_attr("hello"),
        Attribute("String", "hello"),
        {"DataType": "String", "StringValue": "hello"},
        {"DataType": "String", "StringValue": "hello"},
    ),
    (
        string_attr("caf\u00e9 \u2603 \U0001f600"),
        Attribute("String", "caf\u00e9 \u2603 \U0001f600"),
        {"DataType": "String", "StringValue": "caf\u00e9 \u2603 \U0001f600"},
        {"DataType": "String", "StringValue": "caf\u00e9 \u2603 \U0001f600"},
    ),
    (
        string_attr("-12.5e3", "Number"),
        Attribute("Number", "-12.5e3"),
        {"DataType": "Number", "StringValue": "-12.5e3"},
        {"DataType": "Number", "StringValue": "-12.5e3"},
    ),
    (
        string_attr("5", "Number.int"),
        Attribute("Number.int", "5"),
        {"DataType": "Number.int", "StringValue": "5"},
        {"DataType": "Number.int", "StringValue": "5"},
    ),
    (
        string_attr("eu/zone-b", "String.custom"),
        Attribute("String.custom", "eu/zone-b"),
        {"DataType": "String.custom", "StringValue": "eu/zone-b"},
        {"DataType": "String.custom", "StringValue": "eu/zone-b"},
    ),
    (
        binary_attr(NON_UTF8),
        Attribute("Binary", binary_value=NON_UTF8),
        {"DataType": "Binary", "BinaryValue": NON_UTF8},
        {"DataType": "Binary", "BinaryValue": NON_UTF8},
    ),
    (
        binary_attr(gzip.compress(b"payload", mtime=0), "Binary.gzip"),
        Attribute("Binary.gzip", binary_value=gzip.compress(b"payload", mtime=0)),
        {"DataType": "Binary.gzip", "BinaryValue": gzip.compress(b"payload", mtime=0)},
        {"DataType": "Binary.gzip", "BinaryValue": gzip.compress(b"payload", mtime=0)},
    ),
    (
        binary_attr(b"\x00"),
        Attribute("Binary", binary_value=b"\x00"),
        {"DataType": "Binary", "BinaryValue": b"\x00"},
        {"DataType": "Binary", "BinaryValue": b"\x00"},
    ),
]


@pytest.mark.parametrize(("lambda_shape", "attribute", "sqs_shape", "boto_shape"), CASES)
def test_lambda_shape_to_attribute_to_sqs(
    lambda_shape: dict[str, Any],
    attribute: Attribute,
    sqs_shape: dict[str, Any],
    boto_shape: dict[str, Any],
) -> None:
    parsed = from_lambda({"a": lambda_shape})
    assert parsed.values == {"a": attribute}
    assert parsed.dropped == {}
    assert parsed.values["a"].to_sqs() == sqs_shape
    if attribute.binary_value is not None:
        sent = parsed.values["a"].to_sqs()
        assert type(sent["BinaryValue"]) is bytes  # decoded, not the base64 text


@pytest.mark.parametrize(("lambda_shape", "attribute", "sqs_shape", "boto_shape"), CASES)
def test_boto3_shape_to_attribute_to_lambda(
    lambda_shape: dict[str, Any],
    attribute: Attribute,
    sqs_shape: dict[str, Any],
    boto_shape: dict[str, Any],
) -> None:
    parsed = from_sqs({"a": boto_shape})
    assert parsed.values == {"a": attribute}
    as_lambda = parsed.values["a"].to_lambda()
    binary = attribute.binary_value
    value = (
        {"binaryValue": base64.b64encode(binary).decode()}
        if binary is not None
        else {"stringValue": attribute.string_value}
    )
    assert as_lambda == {
        **value,  # Lambda sends only the key of the value's kind, never the other as null
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": attribute.data_type,
    }
    # and back: the full circle is lossless
    assert from_lambda({"a": as_lambda}).values == {"a": attribute}
    assert from_sqs({"a": from_lambda({"a": as_lambda}).values["a"].to_sqs()}).values == {
        "a": attribute
    }


def test_every_byte_survives_base64() -> None:
    for size in (1, 2, 3, 255, 256, 257):
        data = bytes((i * 7 + size) % 256 for i in range(size))
        parsed = from_lambda({"b": binary_attr(data, "Binary.raw")}).values["b"]
        assert parsed.binary_value == data
        assert parsed.to_sqs() == {"DataType": "Binary.raw", "BinaryValue": data}


def test_event_with_binary_attributes_maps_byte_exact() -> None:
    (record,) = event_records("dlq-binary-attributes.json")
    parsed = from_lambda(record["messageAttributes"])
    assert parsed.dropped == {}
    values = parsed.values
    assert set(values) == {"raw", "payload", "priority", "region-tag", "unicode"}
    assert values["raw"] == Attribute(
        "Binary", binary_value=b"\x00\xff\xfe\x80\x7f\xc3(not utf-8 \xe2\x82"
    )
    assert values["payload"].data_type == "Binary.gzip"
    assert values["payload"].binary_value is not None
    assert gzip.decompress(values["payload"].binary_value) == b'{"orderId": "o-2001", "lines": 3}'
    assert values["priority"] == Attribute("Number.int", "5")
    assert values["region-tag"] == Attribute("String.custom", "eu-west-1/zone-b")
    assert values["unicode"] == Attribute("String", "caf\u00e9 \u2603 \U0001f600")
    for name, item in record["messageAttributes"].items():
        # what goes out is what came in, whatever the type
        out = values[name].to_sqs()
        assert out["DataType"] == item["dataType"]
        if "binaryValue" in item:
            assert out.get("BinaryValue") == base64.b64decode(item["binaryValue"])
        else:
            assert out.get("StringValue") == item["stringValue"]


def test_list_values_are_dropped_and_named() -> None:
    raw = {
        "keep": string_attr("x"),
        "strings": {
            "stringListValues": ["a", "b"],
            "binaryListValues": [],
            "dataType": "String",
        },
        "binaries": {
            "stringValue": None,
            "binaryValue": None,
            "stringListValues": [],
            "binaryListValues": ["AAE="],
            "dataType": "Binary",
        },
    }
    parsed = from_lambda(raw)
    assert parsed.values == {"keep": Attribute("String", "x")}
    assert parsed.dropped == {
        "strings": "list values cannot be sent to SQS",
        "binaries": "list values cannot be sent to SQS",
    }

    boto = from_sqs(
        {
            "keep": {"DataType": "Number", "StringValue": "1"},
            "strings": {"DataType": "String", "StringListValues": ["a"]},
        }
    )
    assert boto.values == {"keep": Attribute("Number", "1")}
    assert boto.dropped == {"strings": "list values cannot be sent to SQS"}


def test_undecodable_base64_is_dropped_not_raised() -> None:
    raw = {"bad": {"binaryValue": "not base64!", "dataType": "Binary"}}
    parsed = from_lambda(raw)
    assert parsed.values == {}
    assert parsed.dropped == {"bad": "its binaryValue is not valid base64"}


def test_empty_and_absent_inputs() -> None:
    assert from_lambda(None).values == {}
    assert from_lambda({}).dropped == {}
    assert from_sqs(None).values == {}
    assert from_lambda({"e": string_attr("")}).values == {"e": Attribute("String", "")}


def test_size_counts_name_type_and_value_bytes() -> None:
    assert Attribute("Number", "12").size("n") == 1 + 6 + 2
    assert Attribute("String", "\u00e9").size("\u00e9") == 2 + 6 + 2
    assert Attribute("Binary.gzip", binary_value=b"\x00\x01\x02").size("abc") == 3 + 11 + 3
    assert attributes.number(7) == Attribute("Number", "7")
    assert attributes.string("max-attempts") == Attribute("String", "max-attempts")


@pytest.mark.parametrize(
    ("text", "data_type", "expected"),
    [
        ("0", "Number", 0),
        ("7", "Number", 7),
        ("007", "Number", 7),
        ("999999999", "Number", 999_999_999),
        ("3", "String", 3),
        ("4", "Number.int", 4),
        ("0" * 5000, "Number", 0),
        ("0" * 5000 + "42", "Number", 42),
    ],
)
def test_parse_count_valid(text: str, data_type: str, expected: int) -> None:
    assert parse_count(Attribute(data_type, text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "abc",
        "-1",
        "+1",
        "2.5",
        "1e9",
        "1E3",
        "",
        " 3",
        "3 ",
        "0x10",
        "1_000",
        "1000000000",
        "999999999999",
        "\uff13",  # fullwidth digit three
        "\u0663",  # Arabic-Indic digit three
        "9" * 5000,
        "1" + "0" * 5000,
    ],
)
def test_parse_count_invalid(text: str) -> None:
    assert parse_count(Attribute("Number", text)) is None
    assert parse_count(Attribute("String", text)) is None


def test_parse_count_absent_is_zero_and_binary_is_invalid() -> None:
    assert parse_count(None) == 0
    assert parse_count(Attribute("Binary", binary_value=b"3")) is None
    assert parse_count(Attribute("Binary.int", binary_value=b"\x03")) is None
    assert parse_count(Attribute("Number")) is None  # no value at all


def test_parse_count_with_a_larger_limit() -> None:
    assert parse_count(Attribute("Number", "4102444800"), 10**12) == 4_102_444_800
    assert parse_count(Attribute("Number", "999999999999"), 10**12) == 999_999_999_999
    assert parse_count(Attribute("Number", "1000000000000"), 10**12) is None


def test_bad_count_event_values_are_all_invalid() -> None:
    records = event_records("dlq-bad-count.json")
    counts = [from_lambda(r["messageAttributes"]).values["sqs-dlq-replay-nb"] for r in records]
    assert [c.string_value for c in counts] == ["abc", "-1", "2.5", "1e9", "", "1000000000", None]
    assert counts[-1] == Attribute("Binary", binary_value=b"\x01")
    assert [parse_count(c) for c in counts] == [None] * 7


# --- the data type decides which value is read ---------------------------------------------


def test_powertools_sample_number_with_a_binary_value_too_is_kept_as_a_number() -> None:
    """Powertools' sqsEvent.json: a Number carrying both stringValue and binaryValue."""
    record = event_records("published/powertools-sqs-event.json")[0]
    parsed = from_lambda(record["messageAttributes"])
    assert parsed.values == {"testAttr": Attribute("Number", "100")}
    assert parsed.dropped == {}


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (
            {"dataType": "String", "stringValue": "x", "binaryValue": "AAE="},
            Attribute("String", "x"),
        ),
        (
            {"dataType": "Number.int", "stringValue": "7", "binaryValue": "not base64!"},
            Attribute("Number.int", "7"),
        ),
        (
            {"dataType": "Binary.gz", "stringValue": "ignored", "binaryValue": "AAE="},
            Attribute("Binary.gz", binary_value=b"\x00\x01"),
        ),
    ],
)
def test_the_value_of_the_data_type_is_taken(item: dict[str, Any], expected: Attribute) -> None:
    assert from_lambda({"a": item}).values == {"a": expected}
    boto = {
        "DataType": item["dataType"],
        "StringValue": item["stringValue"],
        "BinaryValue": b"\x00\x01",
    }
    assert from_sqs({"a": boto}).values == {"a": expected}


@pytest.mark.parametrize(
    ("item", "why"),
    [
        (
            {"dataType": "Number", "binaryValue": "AAE="},
            "a Number attribute without its stringValue",
        ),
        (
            {"dataType": "String.x", "binaryValue": "AAE="},
            "a String attribute without its stringValue",
        ),
        (
            {"dataType": "Binary", "stringValue": "AAE="},
            "a Binary attribute without its binaryValue",
        ),
        (
            {"dataType": "Blob", "stringValue": "x"},
            "unknown data type 'Blob' (String, Number or Binary)",
        ),
        ({"dataType": "String", "stringListValues": ["a"]}, "list values cannot be sent to SQS"),
    ],
)
def test_a_value_missing_for_its_type_is_dropped_with_why(item: dict[str, Any], why: str) -> None:
    parsed = from_lambda({"a": item, "keep": string_attr("k")})
    assert parsed.values == {"keep": Attribute("String", "k")}
    assert parsed.dropped == {"a": why}
