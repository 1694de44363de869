"""The parts of a settings table row: the rule a value follows, the row itself, and the
one-line error of a value that breaks its rule."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from dlq_replay.core.attributes import INTERNAL_ATTRIBUTE_PREFIX
from dlq_replay.core.queues import QUEUE_ARN_PATTERN, SNS_TOPIC_ARN_PATTERN, queue_url_problem

# SQS message attribute names: no leading, trailing or doubled period, not AWS. or Amazon.
_ATTRIBUTE_NAME = re.compile(r"^(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.\-]{1,256}$")
_RESERVED_PREFIX = re.compile(r"^(aws|amazon)\.", re.IGNORECASE)
# template.yaml's pattern of the same rule (MaxLength 256 bounds the length there).
ATTRIBUTE_NAME_PARAMETER_PATTERN = (
    r"^(?![Aa][Ww][Ss]\.|[Aa][Mm][Aa][Zz][Oo][Nn]\.|[Dd][Ll][Qq]-[Rr][Ee][Pp][Ll][Aa][Yy]-)"
    r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$"
)
# template.yaml's pattern of SNS_TOPIC_ARN_PATTERN, blank allowed.
TOPIC_ARN_PARAMETER_PATTERN = (
    r"^$|^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:"
    r"([A-Za-z0-9_-]{1,251}\.fifo|[A-Za-z0-9_-]{1,256})$"
)
# DynamoDB table names (the outage breaker's table, which also holds the invocation ledger).
TABLE_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{3,255}")
TABLE_NAME_RULE = "a DynamoDB table name (3-255 of A-Z a-z 0-9 _ - .)"
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no", ""}

T = TypeVar("T")


class SettingsError(ValueError):
    """A configuration value breaks its rule; the message is one line meant for a human."""

    def __init__(self, variable: str, value: str | None, rule: str) -> None:
        shown = "<missing>" if value is None else repr(value)
        super().__init__(f"{variable}={shown} is invalid: {rule}")
        self.variable = variable
        self.value = value
        self.rule = rule


def resource_name(
    env: Mapping[str, str], variable: str, pattern: re.Pattern[str], rule: str
) -> str | None:
    """A resource name from the environment: blank is none, a bad one refused by `rule`."""
    raw = env.get(variable)
    text = (raw or "").strip()
    if text and not pattern.fullmatch(text):
        raise SettingsError(variable, raw, f"must be empty, or {rule}")
    return text or None


def int_between(low: int, high: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ValueError(text)
        number = int(text)
        if not low <= number <= high:
            raise ValueError(text)
        return number

    return convert


def number_at_least(low: float) -> Callable[[str], float]:
    def convert(text: str) -> float:
        number = float(text)  # raises ValueError on junk
        if not (number >= low and number < float("inf")):
            raise ValueError(text)
        return number

    return convert


def attribute_name(text: str) -> str:
    if (
        not _ATTRIBUTE_NAME.fullmatch(text)
        or _RESERVED_PREFIX.match(text)
        or text.lower().startswith(INTERNAL_ATTRIBUTE_PREFIX)
    ):
        raise ValueError(text)
    return text


def comma_list(valid: Callable[[str], object]) -> Callable[[str], frozenset[str]]:
    """The set of a comma-separated list whose every (stripped, non-blank) item is `valid`."""

    def convert(text: str) -> frozenset[str]:
        items = frozenset(part.strip() for part in text.split(",") if part.strip())
        if not all(valid(item) for item in items):
            raise ValueError(text)
        return items

    return convert


arn_list = comma_list(QUEUE_ARN_PATTERN.fullmatch)


def topic_arn(text: str) -> str | None:
    if not text:
        return None
    if not SNS_TOPIC_ARN_PATTERN.fullmatch(text):
        raise ValueError(text)
    return text


def queue_url(text: str) -> str | None:
    if not text:
        return None
    problem = queue_url_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


@dataclass(frozen=True, slots=True)
class Rule(Generic[T]):
    """What the text of one setting may be: the converter (raises ValueError), the words that
    complete "must be ...", the CLI help's short form, and its template.yaml constraints."""

    convert: Callable[[str], T]
    text: str
    summary: str
    constraints: Mapping[str, object]
    # The refusal names the converter's own reason ("must be <text>; this one <reason>").
    explains: bool = False

    def refusal(self, error: ValueError) -> str:
        return f"must be {self.text}; this one {error}" if self.explains else f"must be {self.text}"


@dataclass(frozen=True, slots=True)
class Setting(Generic[T]):
    variable: str
    rule: Rule[T]
    default: str  # the text an unset variable stands for ("" is blank: none, off)
    help: str  # one line: what it does
    # The attribute of `Settings` it fills (`backoff.<name>` for the BackoffPolicy's), and the
    # template.yaml parameter that sets it; blank: the variable's name in lower and camel case.
    field: str = ""
    parameter: str = ""
    # The parameter's constraints when it is not the value itself (an ARN for a queue URL).
    parameter_constraints: Mapping[str, object] | None = None
    required: bool = False  # blank is refused (only by `Settings`: the consumer's is optional)

    def __post_init__(self) -> None:
        if not self.field:
            object.__setattr__(self, "field", self.variable.lower())
        if not self.parameter:
            object.__setattr__(self, "parameter", self.variable.title().replace("_", ""))

    @property
    def option(self) -> str:
        return "--" + self.variable.lower().replace("_", "-")

    @property
    def template_constraints(self) -> Mapping[str, object]:
        if self.parameter_constraints is not None:
            return self.parameter_constraints
        return {"Default": self.default, **self.rule.constraints}

    def parse(self, raw: str | None, *, required: bool | None = None) -> T:
        text = self.default if raw is None else raw.strip()
        try:
            value = self.rule.convert(text)
        except ValueError as error:
            raise SettingsError(self.variable, raw, self.rule.refusal(error)) from None
        if value is None and (self.required if required is None else required):
            raise SettingsError(self.variable, raw, f"required: {self.rule.text}")
        return value

    def read(self, env: Mapping[str, str], *, required: bool | None = None) -> T:
        return self.parse(env.get(self.variable), required=required)


def integer_rule(low: int, high: int, text: str | None = None) -> Rule[int]:
    return Rule(
        int_between(low, high),
        text or f"an integer from {low} to {high}",
        f"{low}-{high}",
        {"Type": "Number", "MinValue": low, "MaxValue": high},
    )


def flag_rule(on: str = "true", off: str = "false") -> Rule[bool]:
    """A switch spelled `on`/`off`; the variable also takes true/false, 1/0, yes/no, any case."""

    def convert(text: str) -> bool:
        lowered = text.lower()
        if lowered == on or lowered in _TRUE:
            return True
        if lowered == off or lowered in _FALSE:
            return False
        raise ValueError(text)

    return Rule(convert, f"{on} or {off}", f"{on} or {off}", choices(on, off))


def choices(*values: str) -> Mapping[str, object]:
    return {"Type": "String", "AllowedValues": list(values)}
