"""Text made valid for SQS (core/text.py), and the park-now detail built from it: every
character SQS refuses escaped visibly, cut without splitting an escape, and never a run of the
body in the default detail (core/failure.py)."""

from __future__ import annotations

import pytest
from dlq_replay.core.failure import (
    BODY_RUN_CHARS,
    REDACTED,
    ParkMessage,
    park_detail_text,
    park_on,
)
from dlq_replay.core.text import PARK_DETAIL_MAX_CHARS, clip, escape, sqs_text, utf8_size
from hypothesis import example, given
from hypothesis import strategies as st
from integration.harness import valid_for_sqs

# Any code point, lone surrogates included (hypothesis leaves them out by default), and the
# characters that matter most, often.
ANY_CHARACTER = st.one_of(
    st.characters(exclude_categories=()),
    st.sampled_from(["\x00", "\x1b", "\x7f", "\ud800", "\udcff", "\ufffe", "\uffff", " ", "\n"]),
)
ANY_TEXT = st.text(ANY_CHARACTER)


def tokens(text: str) -> list[str]:
    """What each character of `text` becomes: itself, or its escape."""
    return [c if valid_for_sqs(c) else escape(c) for c in text]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("plain é 😀 \t\n\r", "plain é 😀 \t\n\r", id="allowed-unchanged"),
        pytest.param("a\x00b", "a\\x00b", id="nul"),
        pytest.param("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m", id="ansi-colour"),
        pytest.param("\x08\x0b\x0c\x1f", "\\x08\\x0b\\x0c\\x1f", id="control"),
        pytest.param("caf\udce9", "caf\\udce9", id="surrogateescape"),
        pytest.param("\ud800\udfff", "\\ud800\\udfff", id="lone-surrogates"),
        pytest.param("\ufffe\uffff", "\\ufffe\\uffff", id="non-characters"),
    ],
)
def test_refused_characters_are_escaped_visibly(text: str, expected: str) -> None:
    assert sqs_text(text) == expected
    assert valid_for_sqs(sqs_text(text))


@given(ANY_TEXT)
def test_sqs_text_is_always_valid_utf8_sqs_takes(text: str) -> None:
    escaped = sqs_text(text)
    assert valid_for_sqs(escaped)
    escaped.encode()  # no lone surrogate left
    assert escaped == "".join(tokens(text))


@given(ANY_TEXT, st.integers(min_value=0, max_value=80), st.booleans())
@example("abc\x00\x00", 5, False)
@example("é\udcff", 5, True)
def test_clip_cuts_between_escapes_and_keeps_as_much_as_fits(
    text: str, limit: int, in_bytes: bool
) -> None:
    size = utf8_size if in_bytes else len
    escaped = sqs_text(text)
    clipped = clip(escaped, limit, size=size)
    assert size(clipped) <= limit
    # A whole number of characters and escapes, and no further one would have fitted.
    parts = tokens(text)
    kept = 0
    while kept < len(parts) and size("".join(parts[: kept + 1])) <= limit:
        kept += 1
    assert clipped == "".join(parts[:kept])


@given(ANY_TEXT)
def test_any_detail_becomes_one_valid_line_of_at_most_256_characters(detail: str) -> None:
    text = park_detail_text(ParkMessage("invalid", detail), body="")
    assert valid_for_sqs(text)
    assert len(text) <= PARK_DETAIL_MAX_CHARS
    assert "\n" not in text
    assert "\r" not in text


def body_runs(text: str, body: str) -> list[str]:
    """Every run of BODY_RUN_CHARS characters of `text` found in the body, as it is or as
    `sqs_text` writes it."""
    forms = (body, sqs_text(body))
    return [
        text[i : i + BODY_RUN_CHARS]
        for i in range(len(text) - BODY_RUN_CHARS + 1)
        if any(text[i : i + BODY_RUN_CHARS] in form for form in forms)
    ]


@st.composite
def detail_quoting_the_body(draw: st.DrawFn) -> tuple[str, str]:
    """A body and an error text that quotes some of it, between other text, maybe twice."""
    body = draw(st.text(ANY_CHARACTER, min_size=BODY_RUN_CHARS))
    pieces = []
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(body) - 1))
        end = draw(st.integers(start, len(body)))
        pieces += [draw(ANY_TEXT), body[start:end]]
    return body, "".join([*pieces, draw(ANY_TEXT)])


@given(detail_quoting_the_body())
def test_the_default_detail_never_holds_a_run_of_the_body(case: tuple[str, str]) -> None:
    body, detail = case
    text = park_detail_text(ParkMessage("invalid", detail), body)
    assert body_runs(text, body) == []
    assert valid_for_sqs(text)


def test_an_exception_quoting_the_whole_body_leaves_only_its_own_words() -> None:
    body = '{"card": "4111 1111 1111 1111", "holder": "Alice Example", "sku": null}'
    error = ValueError(f"cannot ship order {body}: sku is null")

    text = park_detail_text(park_on("invalid", ValueError)(error) or ParkMessage("x"), body)

    assert text == f"cannot ship order {REDACTED}: sku is null"


def test_a_pydantic_error_keeps_the_field_and_the_type_but_not_the_input() -> None:
    pydantic = pytest.importorskip("pydantic")
    body = '{"sku": "not-a-number", "card": "4111 1111 1111 1111", "holder": "Alice Example"}'
    with pytest.raises(pydantic.ValidationError) as raised:
        pydantic.TypeAdapter(int).validate_python(body)  # quotes its input: input_value='...'
    assert 'input_value=\'{"sku"' in str(raised.value)

    text = park_detail_text(ParkMessage("invalid", str(raised.value)), body)

    assert "Input should be a valid integer" in text
    assert f"input_value={REDACTED}, input_type=str" in text
    assert "4111" not in text
    assert "sku" not in text


def test_a_pydantic_error_on_a_parsed_body_keeps_no_value_either() -> None:
    """A model validated from the parsed JSON quotes a dict, not the body's text: no run of
    the body, but its values all the same; `input_value=` is left out whatever it holds."""
    pydantic = pytest.importorskip("pydantic")

    class Order(pydantic.BaseModel):  # type: ignore[misc, name-defined]
        sku: int

    body = '{"sku": "x", "card": "4111 1111 1111 1111"}'
    with pytest.raises(pydantic.ValidationError) as raised:
        Order.model_validate_json(body)

    text = park_detail_text(ParkMessage("invalid", str(raised.value)), body)

    assert "4111" not in text
    assert f"input_value={REDACTED}" in text


def test_a_users_detail_function_is_used_and_still_made_valid() -> None:
    def detail(park: ParkMessage, body: str) -> str:
        return f"{park.reason} (order {body[:4]})\n\x1b[31m{park.detail}\udcff"

    text = park_detail_text(ParkMessage("invalid", "bad " * 100), "o-17 and the rest", detail)

    assert text.startswith("invalid (order o-17) \\x1b[31mbad bad")
    assert len(text) == PARK_DETAIL_MAX_CHARS
    assert valid_for_sqs(text)


def test_a_detail_cut_at_the_limit_drops_a_straddling_escape_whole() -> None:
    detail = "x" * (PARK_DETAIL_MAX_CHARS - 2) + "\x1b" + "y"
    text = park_detail_text(ParkMessage("invalid", detail), "")
    assert text == "x" * (PARK_DETAIL_MAX_CHARS - 2)


def test_a_park_rule_hands_the_error_itself_to_a_detail_function() -> None:
    def first_field(park: ParkMessage, body: str) -> str:
        error = park.__cause__
        assert isinstance(error, KeyError)
        return f"missing field {error.args[0]}"

    park = park_on("invalid", KeyError)(KeyError("sku"))
    assert park is not None
    assert park_detail_text(park, "{}", first_field) == "missing field sku"
