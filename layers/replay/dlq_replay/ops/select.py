"""Which messages an operator command takes: by park reason, group, attribute, body and age.

SQS cannot select on the server (its own redrive "doesn't support filtering"), so the tools
receive, test each message here, and give back what does not match at once. Pure: the message
and the time come in.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import jmespath  # type: ignore[import-untyped]  # boto3's own dependency; it ships no types
from jmespath import functions as jmespath_functions
from jmespath.exceptions import JMESPathError  # type: ignore[import-untyped]

from dlq_replay.core.attributes import Attribute, from_sqs
from dlq_replay.core.decision import park_reason_of
from dlq_replay.core.failure import CONSUMER_REASON_PREFIX

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

# `--filter-reason none`: messages without a park reason (SQS's own safety net moved them).
NO_REASON = "none"
# `--filter-reason consumer:*`: every message a consumer parked, whatever its reason.
ANY_CONSUMER_REASON = f"{CONSUMER_REASON_PREFIX}*"


@dataclass(frozen=True, slots=True)
class Where:
    """`--where name=value`, compared by the attribute's type: Number as numbers (`5` matches
    `5.0`), Binary by its base64 text, String as text."""

    name: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Where:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise ValueError(f"{text!r} is not name=value")
        return cls(name, value)

    def matches(self, attributes: Mapping[str, Attribute]) -> bool:
        attribute = attributes.get(self.name)
        if attribute is None:
            return False
        if attribute.base_type == "Binary":
            raw = attribute.binary_value or b""
            return base64.b64encode(raw).decode() == self.value
        text = attribute.string_value or ""
        if attribute.base_type == "Number":
            try:
                return Decimal(text) == Decimal(self.value)
            except InvalidOperation:
                return text == self.value
        return text == self.value


def compile_match(expression: str) -> Any:
    """A JMESPath expression, compiled, its function names and argument counts checked (jmespath
    checks them only when it evaluates, so a typo would select nothing); else ValueError."""
    try:
        compiled = jmespath.compile(expression)
    except JMESPathError as error:
        # jmespath's message spans three lines (the expression and a caret): keep one.
        where = getattr(error, "lex_position", None)
        at = f" at position {where}" if isinstance(where, int) else ""
        first_line = str(error).split("\n", 1)[0]
        reason = first_line.removeprefix("Invalid jmespath expression: ").rstrip(": ")
        raise ValueError(f"not a JMESPath expression{at}: {reason}") from None
    _check_functions(compiled.parsed)
    return compiled


_FUNCTIONS: dict[str, Any] = jmespath_functions.Functions().FUNCTION_TABLE


def _check_functions(node: Any) -> None:
    if not isinstance(node, dict):
        return
    if node.get("type") == "function_expression":
        name = str(node.get("value"))
        known = _FUNCTIONS.get(name)
        if known is None:
            raise ValueError(
                f"not a JMESPath function: {name}() (known: {', '.join(sorted(_FUNCTIONS))})"
            )
        signature = known["signature"]
        given = len(node.get("children", []))
        variadic = any(arg.get("variadic") for arg in signature)
        if given < len(signature) - variadic or (not variadic and given != len(signature)):
            wanted = f"{len(signature) - variadic} or more" if variadic else len(signature)
            raise ValueError(f"{name}() takes {wanted} argument(s), got {given}")
    for child in node.get("children", []):
        _check_functions(child)


def compile_regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ValueError(f"not a regular expression: {error}") from None


@dataclass(frozen=True, slots=True)
class Selector:
    """All given conditions must hold; an empty selector takes every message."""

    # Park reasons, NO_REASON for none, ANY_CONSUMER_REASON for every `consumer:<reason>`.
    reasons: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    where: tuple[Where, ...] = ()
    match: Any = None  # compiled JMESPath: true on the JSON body
    match_text: re.Pattern[str] | None = None  # regex searched in the body as text
    older_than: float | None = None  # seconds since SentTimestamp
    newer_than: float | None = None
    # Chosen one by one (the console's selection, or a filter's result in its snapshot).
    message_ids: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        unset = (self.match, self.match_text, self.older_than, self.newer_than)
        return not (self.message_ids or self.reasons or self.groups or self.where) and all(
            condition is None for condition in unset
        )

    def takes(self, message: MessageTypeDef, now: float) -> bool:
        """`matches`, the message's attributes parsed here; an empty selector takes all."""
        values = from_sqs(message.get("MessageAttributes")).values
        return self.empty or self.matches(message, values, now)

    def _reason_selected(self, reason: str | None) -> bool:
        if (reason or NO_REASON) in self.reasons:
            return True
        return (
            ANY_CONSUMER_REASON in self.reasons
            and reason is not None
            and reason.startswith(CONSUMER_REASON_PREFIX)
        )

    def matches(
        self, message: MessageTypeDef, attributes: Mapping[str, Attribute], now: float
    ) -> bool:
        """Whether the message is selected; `now` in epoch seconds (for the age)."""
        if self.message_ids and message.get("MessageId") not in self.message_ids:
            return False
        body = message.get("Body", "")
        system = message.get("Attributes", {})
        if self.reasons and not self._reason_selected(park_reason_of(body, attributes)):
            return False
        if self.groups and system.get("MessageGroupId") not in self.groups:
            return False
        return (
            all(where.matches(attributes) for where in self.where)
            and (self.match_text is None or self.match_text.search(body) is not None)
            and (self.match is None or _json_match(self.match, body))
            and self._age_selected(system.get("SentTimestamp"), now)
        )

    def _age_selected(self, sent: str | None, now: float) -> bool:
        """Whether a message sent at `sent` (epoch ms) is within --older-than and --newer-than;
        one without the timestamp is not, when either is set."""
        if self.older_than is None and self.newer_than is None:
            return True
        if sent is None:
            return False
        age = now - int(sent) / 1000
        too_young = self.older_than is not None and age < self.older_than
        too_old = self.newer_than is not None and age > self.newer_than
        return not (too_young or too_old)


def _json_match(expression: Any, body: str) -> bool:
    """True when the body is JSON and the expression's result is truthy (JMESPath's rule)."""
    try:
        document = json.loads(body)
    except ValueError:
        return False
    result = expression.search(document)
    return result not in (None, False, [], {}, "")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """`90`, `90s`, `15m`, `2h`, `3d` -> seconds."""
    found = _DURATION.fullmatch(text.strip())
    if not found:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 2h or 3d")
    return float(found.group(1)) * _UNIT_SECONDS[found.group(2)]
