"""The function's configuration, parsed once into a frozen dataclass.

The variables and their rules: docs/deploying.md, 'Function environment'.

Every rule lives here, so a bad value is refused before a single record is touched, with one
line that names the variable, the value and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

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


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the replay needs to decide and route, and nothing it can look up at run time."""

    operator_queue_url: str
    main_queue_url: str | None = None
    max_attempts: int = 3
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE
    allowed_source_queue_arns: frozenset[str] = frozenset()
    log_message_body: bool = False
    # Replayed copies carry dlq-replay-origin (core/attributes.py) when a slot is free.
    write_origin: bool = False
    # Each park is announced on this SNS topic (notify/sns.py); None: no notices.
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
        """Parse the function's environment variables; unknown variables are ignored."""
        reader = _Reader(env)
        return cls(
            operator_queue_url=reader.required_queue_url("OPERATOR_QUEUE_URL"),
            main_queue_url=reader.queue_url("MAIN_QUEUE_URL"),
            max_attempts=reader.parse(
                "MAX_ATTEMPTS",
                "3",
                _int_between(1, MAX_ATTEMPTS_LIMIT),
                f"an integer from 1 to {MAX_ATTEMPTS_LIMIT}",
            ),
            backoff=_backoff(reader),
            count_attribute=reader.parse(
                "REPLAY_COUNT_ATTRIBUTE",
                DEFAULT_COUNT_ATTRIBUTE,
                _attribute_name,
                "an SQS message attribute name: 1-256 of A-Z a-z 0-9 _ - ., no leading, "
                "trailing or doubled period, not starting with AWS. or Amazon., nor with "
                f"{INTERNAL_ATTRIBUTE_PREFIX} (the replay's own attributes)",
            ),
            allowed_source_queue_arns=reader.parse(
                "ALLOWED_SOURCE_QUEUE_ARNS",
                "",
                _arn_list,
                "a comma-separated list of SQS queue ARNs (arn:<partition>:sqs:<region>:"
                "<account>:<name>)",
            ),
            log_message_body=reader.parse("LOG_MESSAGE_BODY", "false", _boolean, "true or false"),
            write_origin=reader.parse("WRITE_ORIGIN_ATTRIBUTE", "false", _boolean, "true or false"),
            park_notification_topic_arn=reader.parse(
                "PARK_NOTIFICATION_TOPIC_ARN",
                "",
                _topic_arn,
                "empty, or an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)",
            ),
            max_message_age_seconds=reader.parse(
                "MAX_MESSAGE_AGE_SECONDS",
                "0",
                _int_between(0, MAX_MESSAGE_AGE_LIMIT),
                f"an integer from 0 (no limit) to {MAX_MESSAGE_AGE_LIMIT} (14 days)",
            ),
            send_concurrency=reader.parse(
                "SEND_CONCURRENCY",
                str(DEFAULT_SEND_CONCURRENCY),
                _int_between(1, SEND_CONCURRENCY_LIMIT),
                f"an integer from 1 to {SEND_CONCURRENCY_LIMIT}",
            ),
            sqs_endpoint_url=reader.optional("AWS_ENDPOINT_URL_SQS")
            or reader.optional("AWS_ENDPOINT_URL"),
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
        reader = _Reader(env)
        return cls(
            backoff=_backoff(reader), operator_queue_url=reader.queue_url("OPERATOR_QUEUE_URL")
        )


def _backoff(reader: _Reader) -> BackoffPolicy:
    jitter_names = ", ".join(j.value for j in Jitter)
    return BackoffPolicy(
        base_seconds=reader.parse(
            "BACKOFF_BASE_SECONDS",
            "60",
            _int_between(1, MAX_VISIBILITY_TIMEOUT_SECONDS),
            f"an integer from 1 to {MAX_VISIBILITY_TIMEOUT_SECONDS}",
        ),
        multiplier=reader.parse("BACKOFF_MULTIPLIER", "2", _number_at_least(1.0), "a number >= 1"),
        cap_seconds=reader.parse(
            "BACKOFF_CAP_SECONDS",
            "900",
            _int_between(1, MAX_VISIBILITY_TIMEOUT_SECONDS),
            f"an integer from 1 to {MAX_VISIBILITY_TIMEOUT_SECONDS} (12 hours)",
        ),
        jitter=reader.parse("JITTER", "full", Jitter, f"one of {jitter_names}"),
    )


class _Reader:
    """Reads one variable at a time and turns any parse failure into a SettingsError."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def required_queue_url(self, name: str) -> str:
        url = self.queue_url(name)
        if url is None:
            raise SettingsError(name, self._env.get(name), "required: the URL of an SQS queue")
        return url

    def queue_url(self, name: str) -> str | None:
        value = self._env.get(name)
        if value is None or not value.strip():
            return None
        problem = queue_url_problem(value.strip())
        if problem is not None:
            raise SettingsError(name, value, f"must be the URL of an SQS queue; this one {problem}")
        return value.strip()

    def optional(self, name: str) -> str | None:
        value = self._env.get(name, "").strip()
        return value or None

    def parse(self, name: str, default: str, convert: Callable[[str], T], rule: str) -> T:
        raw = self._env.get(name)
        text = default if raw is None else raw.strip()
        try:
            return convert(text)
        except ValueError:
            raise SettingsError(name, raw, f"must be {rule}") from None


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


def _boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(text)
