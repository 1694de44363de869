"""The consumer's failure path, pure: the backoff visibility, the park-now copy, its settings."""

from __future__ import annotations

import random

import pytest
from dlq_replay.core.attributes import PARK_ERROR_ATTRIBUTE, PARK_REASON_ATTRIBUTE, Attribute
from dlq_replay.core.backoff import MAX_VISIBILITY_TIMEOUT_SECONDS, BackoffPolicy, Jitter
from dlq_replay.core.failure import (
    ParkMessage,
    park_now_copy,
    park_on,
    visibility_delay,
)
from dlq_replay.core.settings import ConsumerSettings, SettingsError
from dlq_replay.core.text import PARK_DETAIL_MAX_CHARS

from ._support import OPERATOR, OPERATOR_FIFO, message, string_attr

NO_JITTER = BackoffPolicy(base_seconds=10, multiplier=3, cap_seconds=600, jitter=Jitter.NONE)


@pytest.mark.parametrize(("receive_count", "delay"), [(0, 10), (1, 10), (2, 30), (3, 90), (9, 600)])
def test_the_receive_count_is_the_attempt(receive_count: int, delay: int) -> None:
    assert visibility_delay(NO_JITTER, receive_count, random.Random(1)) == delay


def test_the_delay_ends_within_twelve_hours_of_the_receive() -> None:
    longest = BackoffPolicy(43_200, 2, 43_200, Jitter.NONE)
    assert visibility_delay(longest, 1, random.Random(1)) == MAX_VISIBILITY_TIMEOUT_SECONDS
    assert visibility_delay(longest, 1, random.Random(1), held_seconds=100) == 43_100
    assert visibility_delay(longest, 1, random.Random(1), held_seconds=50_000) == 0


def test_full_jitter_draws_below_the_ceiling() -> None:
    full = BackoffPolicy(10, 3, 600, Jitter.FULL)
    draws = {visibility_delay(full, 2, random.Random(seed)) for seed in range(200)}
    assert min(draws) == 0
    assert max(draws) == 30


@pytest.mark.parametrize("reason", ["", "has space", "x" * 65, "colon:inside", "é"])
def test_a_park_reason_is_a_short_token(reason: str) -> None:
    with pytest.raises(ValueError, match="park reason"):
        ParkMessage(reason)


def test_the_park_copy_carries_reason_and_short_detail_never_the_body() -> None:
    source = message(body="secret body", message_attributes={"tenant": string_attr("acme")})
    park = ParkMessage("invalid-order", "sku\nmissing " * 100)

    copy = park_now_copy(source, park, OPERATOR)

    assert copy.queue_url == OPERATOR
    assert copy.body == "secret body"
    assert copy.attributes["tenant"] == Attribute("String", string_value="acme")
    assert copy.attributes[PARK_REASON_ATTRIBUTE].string_value == "consumer:invalid-order"
    detail = copy.attributes[PARK_ERROR_ATTRIBUTE].string_value or ""
    assert len(detail) == PARK_DETAIL_MAX_CHARS
    assert detail.startswith("sku missing sku missing")  # white space made one line
    assert "secret" not in detail
    assert copy.message_group_id is None
    assert copy.deduplication_id is None


def test_the_reason_takes_the_last_free_slot_before_the_detail() -> None:
    nine = {f"a{n}": string_attr(str(n)) for n in range(9)}
    copy = park_now_copy(message(message_attributes=nine), ParkMessage("bad", "why"), OPERATOR)
    assert PARK_REASON_ATTRIBUTE in copy.attributes
    assert PARK_ERROR_ATTRIBUTE not in copy.attributes

    ten = {f"a{n}": string_attr(str(n)) for n in range(10)}
    full = park_now_copy(message(message_attributes=ten), ParkMessage("bad", "why"), OPERATOR)
    assert set(full.attributes) == set(ten)  # parked all the same; the tools read attribute-limit


def test_a_park_to_a_fifo_operator_queue_keeps_the_group_and_deduplicates() -> None:
    source = message(system={"MessageGroupId": "g-1"})
    copy = park_now_copy(source, ParkMessage("bad"), OPERATOR_FIFO)
    assert copy.message_group_id == "g-1"
    assert copy.deduplication_id == f"{source.message_id}-consumer-park"
    assert PARK_ERROR_ATTRIBUTE not in copy.attributes  # no detail given


def test_consumer_settings_read_the_functions_variables_by_the_same_rules() -> None:
    assert ConsumerSettings.from_env({}) == ConsumerSettings()
    settings = ConsumerSettings.from_env(
        {"BACKOFF_BASE_SECONDS": "5", "JITTER": "none", "OPERATOR_QUEUE_URL": OPERATOR}
    )
    assert settings.backoff == BackoffPolicy(5, 2, 900, Jitter.NONE)
    assert settings.operator_queue_url == OPERATOR
    with pytest.raises(SettingsError, match="BACKOFF_CAP_SECONDS='0' is invalid"):
        ConsumerSettings.from_env({"BACKOFF_CAP_SECONDS": "0"})
    with pytest.raises(SettingsError, match="OPERATOR_QUEUE_URL"):
        ConsumerSettings.from_env({"OPERATOR_QUEUE_URL": "not a url"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"base_seconds": 0}, "base_seconds must be from 1 to 43200"),
        ({"cap_seconds": 43_201}, "cap_seconds must be from 1 to 43200"),
        ({"multiplier": 0.5}, "multiplier must be a number >= 1"),
        ({"multiplier": float("inf")}, "multiplier must be a number >= 1"),
        ({"jitter": "wobbly"}, "'wobbly' is not a valid Jitter"),
    ],
)
def test_a_policy_built_in_code_is_held_to_the_settings_rules(
    changes: dict[str, object], message: str
) -> None:
    values: dict[str, object] = {"base_seconds": 1, "multiplier": 2, "cap_seconds": 60, **changes}
    with pytest.raises(ValueError, match=message):
        BackoffPolicy(**values)  # type: ignore[arg-type]


def test_consumer_settings_built_in_code_refuse_a_bad_operator_queue_url() -> None:
    with pytest.raises(SettingsError, match="OPERATOR_QUEUE_URL='ftp://x/q' is invalid"):
        ConsumerSettings(operator_queue_url="ftp://x/q")


def test_a_park_rule_checks_its_reason_at_once_and_matches_by_class() -> None:
    with pytest.raises(ValueError, match="park reason"):
        park_on("has space", ValueError)
    rule = park_on("invalid", ValueError, KeyError)
    parked = rule(KeyError("sku"))
    assert parked is not None
    assert (parked.reason, parked.detail) == ("invalid", "'sku'")
    assert rule(RuntimeError("down")) is None
