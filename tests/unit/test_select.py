"""The operator's selection (ops/select.py): pure tests on messages as boto3 returns them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from dlq_replay.core import attributes
from dlq_replay.ops.select import (
    ANY_CONSUMER_REASON,
    NO_REASON,
    Selector,
    Where,
    compile_match,
    compile_regex,
    parse_duration,
)

NOW = 1_700_000_000.0


def message(
    body: str = "{}", *, group: str | None = None, sent_ago: float | None = 60, **attrs: Any
) -> tuple[dict[str, Any], dict[str, attributes.Attribute]]:
    system: dict[str, str] = {}
    if group is not None:
        system["MessageGroupId"] = group
    if sent_ago is not None:
        system["SentTimestamp"] = str(int((NOW - sent_ago) * 1000))
    raw = {"MessageId": "m", "Body": body, "Attributes": system, "MessageAttributes": attrs}
    return raw, attributes.from_sqs(attrs).values


def selects(selector: Selector, *args: Any, **kwargs: Any) -> bool:
    raw, values = message(*args, **kwargs)
    return selector.matches(raw, values, NOW)  # type: ignore[arg-type]


def test_an_empty_selector_takes_everything() -> None:
    assert Selector().empty
    assert selects(Selector(), "anything", sent_ago=None)


def test_message_ids_choose_messages_one_by_one() -> None:
    """The console's selection: only the ids chosen, and with the other conditions."""
    assert not Selector(message_ids=frozenset({"m"})).empty
    assert selects(Selector(message_ids=frozenset({"m", "n"})))
    assert not selects(Selector(message_ids=frozenset({"n"})))
    both = Selector(message_ids=frozenset({"m"}), groups=frozenset({"g"}))
    assert selects(both, group="g")
    assert not selects(both, group="h")


def test_group() -> None:
    selector = Selector(groups=frozenset({"customer-1", "customer-2"}))
    assert selects(selector, group="customer-2")
    assert not selects(selector, group="customer-3")
    assert not selects(selector)  # a standard queue's message has no group


NUMBER = {"DataType": "Number", "StringValue": "5.0"}
TEXT = {"DataType": "String", "StringValue": "acme"}
BLOB = {"DataType": "Binary.gzip", "BinaryValue": b"\x00\xff"}


@pytest.mark.parametrize(
    ("where", "selected"),
    [
        ("weight=5", True),  # Number compares as a number
        ("weight=5.00", True),
        ("weight=6", False),
        ("weight=five", False),
        ("tenant=acme", True),
        ("tenant=ACME", False),  # String compares as text, exactly
        ("blob=AP8=", True),  # Binary by its base64 text
        ("blob=AP9=", False),
        ("missing=1", False),
        ("tenant=", False),
    ],
)
def test_where_is_type_aware(where: str, selected: bool) -> None:
    selector = Selector(where=(Where.parse(where),))
    assert selects(selector, weight=NUMBER, tenant=TEXT, blob=BLOB) is selected


def test_where_needs_a_name_and_an_equals_sign() -> None:
    for text in ("tenant", "=acme", ""):
        with pytest.raises(ValueError, match="is not name=value"):
            Where.parse(text)
    assert Where.parse("a=b=c") == Where("a", "b=c")


def test_jmespath_match_on_json_bodies_only() -> None:
    selector = Selector(match=compile_match("order.total > `100` && status == 'failed'"))
    assert selects(selector, '{"order": {"total": 150}, "status": "failed"}')
    assert not selects(selector, '{"order": {"total": 50}, "status": "failed"}')
    assert not selects(selector, "order total 150 failed")  # not JSON
    empty = Selector(match=compile_match("items"))
    assert not selects(empty, '{"items": []}')  # an empty result is false, as in JMESPath
    assert selects(empty, '{"items": [1]}')


def test_park_reasons_including_none() -> None:
    reason = "dlq-replay-park-reason"
    selector = Selector(reasons=frozenset({"rejected", NO_REASON}))
    assert not selector.empty
    assert selects(selector, **{reason: {"DataType": "String", "StringValue": "rejected"}})
    assert selects(selector)  # no park reason at all
    assert not selects(selector, **{reason: {"DataType": "String", "StringValue": "max-age"}})


def test_bad_expressions_are_value_errors() -> None:
    with pytest.raises(ValueError, match="not a JMESPath expression"):
        compile_match("order.[")
    # jmespath's own message spans three lines; an error line of the CLI is one.
    with pytest.raises(ValueError, match=r"^[^\n]*$") as raised:
        compile_match("total >")
    assert str(raised.value) == "not a JMESPath expression at position 7: Incomplete expression"
    with pytest.raises(ValueError, match="not a regular expression"):
        compile_regex("(")


def test_text_match_searches_the_body() -> None:
    selector = Selector(match_text=re.compile(r"timeout after \d+ms"))
    assert selects(selector, "upstream: timeout after 3000ms")
    assert not selects(selector, "upstream: refused")


def test_age_from_the_sent_timestamp() -> None:
    older = Selector(older_than=3600)
    assert selects(older, sent_ago=3601)
    assert selects(older, sent_ago=3600)
    assert not selects(older, sent_ago=3599)
    assert not selects(older, sent_ago=None)  # no timestamp: not selected by age
    window = Selector(older_than=60, newer_than=120)
    assert [selects(window, sent_ago=s) for s in (59, 60, 120, 121)] == [False, True, True, False]


def test_every_condition_must_hold() -> None:
    selector = Selector(groups=frozenset({"g"}), where=(Where.parse("tenant=acme"),))
    assert selects(selector, group="g", tenant=TEXT)
    assert not selects(selector, group="g")
    assert not selects(selector, group="h", tenant=TEXT)


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("15m", 900), ("2h", 7200), ("1.5d", 129600)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "2 hours", "-5m", "3w"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


def test_consumer_star_selects_every_consumer_park_and_nothing_else() -> None:
    selector = Selector(reasons=frozenset({ANY_CONSUMER_REASON}))
    reason = "dlq-replay-park-reason"
    for value, selected in [
        ("consumer:invalid-order", True),
        ("consumer:x", True),
        ("max-attempts", False),
        ("consumer", False),
    ]:
        attribute = {reason: {"DataType": "String", "StringValue": value}}
        assert selects(selector, **attribute) is selected, value
    assert not selects(selector)  # no reason: moved by SQS's safety net
