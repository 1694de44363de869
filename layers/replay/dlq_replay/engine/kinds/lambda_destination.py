"""A Lambda `OnFailure` destination that is an SQS queue: the body is Lambda's invocation record.
The function is invoked again with the record's own text of `requestPayload`, never parsed and
written again: `1e400`, long decimals and duplicate keys reach it byte for byte."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.kinds import Kind

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


class Member(NamedTuple):
    """A top-level member's value, and where its text starts and stops in the document."""

    value: Any
    start: int
    stop: int


def members(text: str) -> dict[str, Member] | None:
    """The members of the JSON object `text` is (the last of duplicate keys); None when it is
    not one. Raises ValueError or RecursionError for JSON that cannot be read."""
    position = _skip(text, 0)
    if text[position : position + 1] != "{":
        return None
    found: dict[str, Member] = {}
    position = _skip(text, position + 1)
    separator = "}" if text[position : position + 1] == "}" else ","
    while separator == ",":
        if text[position : position + 1] != '"':
            return None
        key, position = _DECODER.raw_decode(text, position)  # a string: it starts with "
        position = _skip(text, position)
        if text[position : position + 1] != ":":
            return None
        start = _skip(text, position + 1)
        value, stop = _DECODER.raw_decode(text, start)
        found[key] = Member(value, start, stop)
        position = _skip(text, stop)
        separator = text[position : position + 1]
        position = _skip(text, position + 1) if separator == "," else position
    if separator != "}" or _skip(text, position + 1) != len(text):
        return None
    return found


def _skip(text: str, position: int) -> int:
    match = _SPACE.match(text, position)  # the first position past JSON's space
    return match.end() if match else position


def recognise(message: InboundMessage, replay_targets: frozenset[str]) -> Recognised | None:
    body = message.body
    # Cheap first: most SQS bodies are JSON too, and reading each would cost every batch.
    if '"requestContext"' not in body or '"requestPayload"' not in body:
        return None
    try:
        found = members(body) or {}
    except (ValueError, RecursionError):
        return None
    context, payload = found.get("requestContext"), found.get("requestPayload")
    if context is None or payload is None or not isinstance(context.value, dict):
        return None
    function, request_id = context.value.get("functionArn"), context.value.get("requestId")
    if not isinstance(function, str) or not isinstance(request_id, str):
        return None
    response = found.get("responsePayload")
    answer = response.value if response is not None and isinstance(response.value, dict) else {}
    condition = _text(context.value.get("condition"))
    return Recognised(
        RecordKind.LAMBDA_DESTINATION,
        target_arn=function,
        payload=body[payload.start : payload.stop],
        request_id=request_id,
        error_code=_text(answer.get("errorType")) or condition,
        error_message=_text(answer.get("errorMessage")) or condition,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


KIND = Kind(RecordKind.LAMBDA_DESTINATION, recognise)
