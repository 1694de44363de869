"""The function's configuration, parsed once into a frozen dataclass.

Every setting is one row of `SETTINGS`: its variable, rule, default and help. The environment
parser, the CLI options that set the function's settings, and the test that holds template.yaml
and the documented parameters to it all read that table, so a bad value is refused the same way
everywhere, before a single record is touched, with one line that names the variable, the value
and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from dlq_replay.core.attributes import INTERNAL_ATTRIBUTE_PREFIX
from dlq_replay.core.backoff import MAX_VISIBILITY_TIMEOUT_SECONDS, BackoffPolicy, Jitter
from dlq_replay.core.queues import QUEUE_ARN_PATTERN, queue_url_problem

DEFAULT_COUNT_ATTRIBUTE = "sqs-dlq-replay-nb"
# A batch of 10,000 records is 1,000 SendMessageBatch requests; 8 at once cuts its time 8-fold
# (bench/bench_batch_send.py) with threads that cost a 128 MB function next to nothing.
DEFAULT_SEND_CONCURRENCY = 8
SEND_CONCURRENCY_LIMIT = 32  # the SQS client's connection pool (sqs/client.py) is this big
MAX_ATTEMPTS_LIMIT = 100
# SQS keeps a message at most 14 days, so an older first failure cannot be seen anyway.
MAX_MESSAGE_AGE_LIMIT = 1_209_600
# SNS topic ARNs: 1-256 of A-Z a-z 0-9 - _ as the name, FIFO topics ending in .fifo.
SNS_TOPIC_ARN_PATTERN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sns:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    r"(?P<name>[A-Za-z0-9_-]{1,251}(?:\.fifo)?|[A-Za-z0-9_-]{252,256})"
)

# SQS message attribute names: up to 256 of A-Z a-z 0-9 _ - . ; no leading or trailing period,
# no two periods in a row, not starting with AWS. or Amazon. (any case).
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


def _int_between(low: int, high: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ValueError(text)
        number = int(text)
        if not low <= number <= high:
            raise ValueError(text)
        return number

    return convert


def _number_at_least(low: float) -> Callable[[str], float]:
    def convert(text: str) -> float:
        number = float(text)  # raises ValueError on junk
        if not (number >= low and number < float("inf")):
            raise ValueError(text)
        return number

    return convert


def _attribute_name(text: str) -> str:
    if (
        not _ATTRIBUTE_NAME.fullmatch(text)
        or _RESERVED_PREFIX.match(text)
        or text.lower().startswith(INTERNAL_ATTRIBUTE_PREFIX)
    ):
        raise ValueError(text)
    return text


def _arn_list(text: str) -> frozenset[str]:
    arns = frozenset(part.strip() for part in text.split(",") if part.strip())
    if any(not QUEUE_ARN_PATTERN.fullmatch(arn) for arn in arns):
        raise ValueError(text)
    return arns


def _topic_arn(text: str) -> str | None:
    if not text:
        return None
    if not SNS_TOPIC_ARN_PATTERN.fullmatch(text):
        raise ValueError(text)
    return text


def _queue_url(text: str) -> str | None:
    if not text:
        return None
    problem = queue_url_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


def _boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(text)


@dataclass(frozen=True, slots=True)
class Rule(Generic[T]):
    """What the text of one setting may be: the converter (raises ValueError), the words that
    complete "must be ...", the short form the CLI's help shows, and the same rule as the
    constraints of its template.yaml parameter (tests/template/test_settings_table.py)."""

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
    """One row of the settings table: everything the environment parser, the CLI options and
    the template test know about a setting."""

    variable: str
    # The attribute of `Settings` it fills; `backoff.<name>` for the BackoffPolicy's.
    field: str
    rule: Rule[T]
    default: str  # the text an unset variable stands for ("" is blank: none, off)
    help: str  # one line: what it does
    parameter: str | None = None  # the template.yaml parameter that sets it, if any
    # The parameter's constraints when it is not the value itself (an ARN for a queue URL).
    parameter_constraints: Mapping[str, object] | None = None
    required: bool = False  # blank is refused (only by `Settings`: the consumer's is optional)

    @property
    def option(self) -> str:
        """The CLI option that sets it: --max-attempts for MAX_ATTEMPTS."""
        return "--" + self.variable.lower().replace("_", "-")

    @property
    def template_constraints(self) -> Mapping[str, object]:
        """What template.yaml's parameter must declare (Type, Default and the rule)."""
        if self.parameter_constraints is not None:
            return self.parameter_constraints
        return {"Default": self.default, **self.rule.constraints}

    def parse(self, raw: str | None, *, required: bool | None = None) -> T:
        """The value of the variable's text (None: unset), or a one-line SettingsError."""
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


def _integer(low: int, high: int, text: str | None = None) -> Rule[int]:
    return Rule(
        _int_between(low, high),
        text or f"an integer from {low} to {high}",
        f"{low}-{high}",
        {"Type": "Number", "MinValue": low, "MaxValue": high},
    )


def _flag() -> Rule[bool]:
    return Rule(_boolean, "true or false", "true or false", _choices("true", "false"))


def _choices(*values: str) -> Mapping[str, object]:
    return {"Type": "String", "AllowedValues": list(values)}


_JITTERS = [j.value for j in Jitter]
_QUEUE_URL = Rule(
    _queue_url, "the URL of an SQS queue", "an SQS queue URL", {"Type": "String"}, explains=True
)
# template.yaml's pattern of a queue ARN parameter (blank allowed), the rule of QUEUE_ARN_PATTERN.
QUEUE_ARN_PARAMETER_PATTERN = (
    r"^$|^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$"
)
# The queue URLs are built from ARN parameters: a blank ARN is no queue (create-everything).
_QUEUE_ARN_PARAMETER = {
    "Type": "String",
    "Default": "",
    "AllowedPattern": QUEUE_ARN_PARAMETER_PATTERN,
}

# The settings table: one row per variable of the function's environment (DESIGN.md §2), in
# the order they are checked. The environment parser, the CLI options of worker, plan and demo
# and a test of template.yaml and the documented parameters all read it: a new setting is a
# new row (and its field in `Settings`).
SETTINGS: tuple[Setting[Any], ...] = (
    Setting(
        "OPERATOR_QUEUE_URL",
        "operator_queue_url",
        _QUEUE_URL,
        "",
        "the queue parked messages go to",
        "OperatorQueueArn",
        _QUEUE_ARN_PARAMETER,
        required=True,
    ),
    Setting(
        "MAIN_QUEUE_URL",
        "main_queue_url",
        _QUEUE_URL,
        "",
        "the queue replays go to when a record names no allowed source queue (none: such "
        "records are parked unknown-source)",
        "MainQueueArn",
        _QUEUE_ARN_PARAMETER,
    ),
    Setting(
        "MAX_ATTEMPTS",
        "max_attempts",
        _integer(1, MAX_ATTEMPTS_LIMIT),
        "3",
        "replays before a message is parked",
        "MaxAttempts",
    ),
    Setting(
        "BACKOFF_BASE_SECONDS",
        "backoff.base_seconds",
        _integer(1, MAX_VISIBILITY_TIMEOUT_SECONDS),
        "60",
        "ceiling of the first delay, in seconds",
        "BackoffBaseSeconds",
    ),
    Setting(
        "BACKOFF_MULTIPLIER",
        "backoff.multiplier",
        # No upper bound: base x multiplier^(n-1) is capped, so a larger multiplier only
        # reaches the cap sooner (core/backoff.py compares in log space).
        Rule(_number_at_least(1.0), "a number >= 1", ">= 1", {"Type": "Number", "MinValue": 1}),
        "2",
        "growth of the delay ceiling per attempt",
        "BackoffMultiplier",
    ),
    Setting(
        "BACKOFF_CAP_SECONDS",
        "backoff.cap_seconds",
        _integer(
            1,
            MAX_VISIBILITY_TIMEOUT_SECONDS,
            f"an integer from 1 to {MAX_VISIBILITY_TIMEOUT_SECONDS} (12 hours)",
        ),
        "900",
        "largest delay ceiling, in seconds, applied before the jitter; above 900 the copy "
        "waits in the DLQ",
        "BackoffCapSeconds",
    ),
    Setting(
        "JITTER",
        "backoff.jitter",
        Rule(
            Jitter,
            f"one of {', '.join(_JITTERS)}",
            f"{', '.join(_JITTERS[:-1])} or {_JITTERS[-1]}",
            _choices(*_JITTERS),
        ),
        "full",
        "how the delay is drawn below its ceiling",
        "Jitter",
    ),
    Setting(
        "REPLAY_COUNT_ATTRIBUTE",
        "count_attribute",
        Rule(
            _attribute_name,
            "an SQS message attribute name: 1-256 of A-Z a-z 0-9 _ - ., no leading, "
            "trailing or doubled period, not starting with AWS. or Amazon., nor with "
            f"{INTERNAL_ATTRIBUTE_PREFIX} (the replay's own attributes)",
            "an SQS attribute name",
            {
                "Type": "String",
                "MinLength": 1,
                "MaxLength": 256,
                "AllowedPattern": ATTRIBUTE_NAME_PARAMETER_PATTERN,
            },
        ),
        DEFAULT_COUNT_ATTRIBUTE,
        "the message attribute (type Number) that counts the replays",
        "ReplayCountAttribute",
    ),
    Setting(
        "ALLOWED_SOURCE_QUEUE_ARNS",
        "allowed_source_queue_arns",
        Rule(
            _arn_list,
            "a comma-separated list of SQS queue ARNs (arn:<partition>:sqs:<region>:"
            "<account>:<name>)",
            "comma list of SQS queue ARNs",
            {
                "Type": "CommaDelimitedList",
                "AllowedPattern": QUEUE_ARN_PARAMETER_PATTERN,
            },
        ),
        "",
        "queues that share the DLQ: a record whose source queue is listed is replayed to it",
        "AllowedSourceQueueArns",
    ),
    Setting(
        "LOG_MESSAGE_BODY",
        "log_message_body",
        _flag(),
        "false",
        "whether message bodies may appear in logs and park notices",
        "LogMessageBody",
    ),
    Setting(
        "WRITE_ORIGIN_ATTRIBUTE",
        "write_origin",
        _flag(),
        "false",
        "whether replayed copies carry dlq-replay-origin, for consumers to deduplicate by",
        "WriteOriginAttribute",
    ),
    Setting(
        "PARK_NOTIFICATION_TOPIC_ARN",
        "park_notification_topic_arn",
        Rule(
            _topic_arn,
            "empty, or an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)",
            "an SNS topic ARN",
            {"Type": "String", "AllowedPattern": TOPIC_ARN_PARAMETER_PATTERN},
        ),
        "",
        "the SNS topic that gets one notice per parked message",
        "ParkNotificationTopicArn",
    ),
    Setting(
        "MAX_MESSAGE_AGE_SECONDS",
        "max_message_age_seconds",
        _integer(
            0,
            MAX_MESSAGE_AGE_LIMIT,
            f"an integer from 0 (no limit) to {MAX_MESSAGE_AGE_LIMIT} (14 days)",
        ),
        "0",
        "a message whose first failure is older (seconds) is parked max-age; 0: no limit",
        "MaxMessageAgeSeconds",
    ),
    Setting(
        "SEND_CONCURRENCY",
        "send_concurrency",
        _integer(1, SEND_CONCURRENCY_LIMIT),
        str(DEFAULT_SEND_CONCURRENCY),
        "SendMessageBatch requests in flight at once for one batch",
        "SendConcurrency",
    ),
)
SETTING: Mapping[str, Setting[Any]] = {setting.variable: setting for setting in SETTINGS}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the replay needs to decide and route, and nothing it can look up at run time.

    The defaults are the table's (tests/unit/test_settings.py holds them to it)."""

    operator_queue_url: str
    main_queue_url: str | None = None
    max_attempts: int = 3
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE
    allowed_source_queue_arns: frozenset[str] = frozenset()
    log_message_body: bool = False
    # Replayed copies carry dlq-replay-origin (core/attributes.py) when a slot is free.
    write_origin: bool = False
    # Each park is announced on this SNS topic (sqs/notices.py); None: no notices.
    park_notification_topic_arn: str | None = None
    # A record whose first failure is older than this is parked `max-age`; 0: no age limit.
    max_message_age_seconds: int = 0
    # SendMessageBatch requests in flight at once for one batch (sqs/sending.py).
    send_concurrency: int = DEFAULT_SEND_CONCURRENCY
    # Where URLs built from queue ARNs point: boto3's own AWS_ENDPOINT_URL_SQS/AWS_ENDPOINT_URL
    # (an emulator or SQS-compatible broker); unset means AWS's regional endpoint.
    sqs_endpoint_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Every row of the table, in its order; unknown variables are ignored."""
        fields: dict[str, Any] = {}
        backoff: dict[str, Any] = {}
        for setting in SETTINGS:
            owner, _, name = setting.field.rpartition(".")
            (backoff if owner == "backoff" else fields)[name] = setting.read(env)
        endpoint = env.get("AWS_ENDPOINT_URL_SQS", "").strip() or env.get("AWS_ENDPOINT_URL", "")
        return cls(
            **fields, backoff=BackoffPolicy(**backoff), sqs_endpoint_url=endpoint.strip() or None
        )


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    """The consumer toolkit's knobs (dlq_replay.consumer): the backoff its failed messages'
    visibility changes draw from, and the operator queue a `ParkMessage` sends to. Read from
    the function's own variables, by the same rules, so a consumer and its replay can share
    one configuration."""

    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    operator_queue_url: str | None = None  # without it, a ParkMessage fails its record

    def __post_init__(self) -> None:
        """Refuse, at construction, an operator queue URL `from_env` would refuse."""
        if self.operator_queue_url is not None:
            problem = queue_url_problem(self.operator_queue_url)
            if problem:
                raise SettingsError("OPERATOR_QUEUE_URL", self.operator_queue_url, problem)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ConsumerSettings:
        """BACKOFF_BASE_SECONDS, BACKOFF_MULTIPLIER, BACKOFF_CAP_SECONDS, JITTER and (optional)
        OPERATOR_QUEUE_URL; other variables are ignored."""
        backoff = {
            setting.field.removeprefix("backoff."): setting.read(env)
            for setting in SETTINGS
            if setting.field.startswith("backoff.")
        }
        return cls(
            backoff=BackoffPolicy(**backoff),
            operator_queue_url=SETTING["OPERATOR_QUEUE_URL"].read(env, required=False),
        )
