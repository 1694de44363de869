"""Text made valid for SQS before it becomes an attribute or a notice: a character SQS refuses
(NUL, ESC, U+FFFE, lone surrogates: InvalidMessageContents) is written as a visible escape
(`\\x1b`, `\\udcff`), so the text stays readable and the send never fails because of it."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

# One character SQS refuses, as the refused ranges (the allowed ones negated took 8 ms to compile).
REFUSED_CHARACTER = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ESCAPE = re.compile(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}")
_ESCAPE_MAX_CHARS = 6
_WHITE_SPACE = re.compile(r"\s+")

# `dlq-replay-error`'s length in characters, counted after the escapes of `sqs_text`.
PARK_DETAIL_MAX_CHARS = 256


def escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def sqs_text(text: str) -> str:
    if REFUSED_CHARACTER.search(text) is None:
        return text
    return REFUSED_CHARACTER.sub(lambda match: escape(match.group()), text)


def printable(text: str) -> str:
    """`text` with each lone surrogate (which no UTF-8 stream can write) shown as its escape."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode(errors="backslashreplace").decode()
    return text


def one_line(text: str) -> str:
    """Every run of white space (line breaks, tabs, U+001C-U+001F) as one space, stripped."""
    return _WHITE_SPACE.sub(" ", text).strip()


def utf8_size(text: str) -> int:
    """Bytes `text` takes in UTF-8 (an ASCII text counted without encoding a copy)."""
    return len(text) if text.isascii() else len(text.encode())


def clip(text: str, limit: int, *, size: Callable[[str], int] = len) -> str:
    """The longest start of `text` whose `size` (characters by default, `utf8_size` for
    bytes) is at most `limit`, never cut inside an escape `sqs_text` wrote. `text` must
    already be valid for SQS."""
    if size(text) <= limit:
        return text
    # The longest prefix that fits (no character is smaller than one unit).
    low = last_true(lambda end: size(text[:end]) <= limit, 0, min(len(text), limit))
    # An escape that straddles the cut is dropped whole, not left as `\x1` or `\ud`.
    window = max(0, low - _ESCAPE_MAX_CHARS + 1)
    for match in _ESCAPE.finditer(text, window, low + _ESCAPE_MAX_CHARS):
        if match.start() < low < match.end():
            return text[: match.start()]
    return text[:low]


def last_true(holds: Callable[[int], bool], low: int, high: int) -> int:
    """The largest n in [low, high] for which `holds` is true, given that it holds at `low`
    and, once false, stays false for every larger n."""
    return low + bisect.bisect_left(range(low + 1, high + 1), True, key=lambda n: not holds(n))


def error_text(text: str) -> str:
    """`dlq-replay-error`'s text: one line, escaped for SQS, cut to PARK_DETAIL_MAX_CHARS."""
    return clip(sqs_text(one_line(text)), PARK_DETAIL_MAX_CHARS)
