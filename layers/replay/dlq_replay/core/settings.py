"""The function's configuration (docs/deploying.md): one row of `SETTINGS` per setting, read by
the environment parser, the CLI options and the test of template.yaml, so a bad value is refused
the same way everywhere, before a single record is touched."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dlq_replay.core.attributes import INTERNAL_ATTRIBUTE_PREFIX
from dlq_replay.core.backoff import MAX_VISIBILITY_TIMEOUT_SECONDS, BackoffPolicy, Jitter
from dlq_replay.core.kinds import KIND_CHOICES, RecordKind
from dlq_replay.core.queues import is_target_arn, queue_url_problem
from dlq_replay.core.settings_rules import (
    ATTRIBUTE_NAME_PARAMETER_PATTERN,
    TOPIC_ARN_PARAMETER_PATTERN,
    Rule,
    Setting,
    SettingsError,
    arn_list,
    attribute_name,
    choices,
    comma_list,
    flag_rule,
    integer_rule,
    number_at_least,
    queue_url,
    topic_arn,
)

# Names of settings_rules.py that this module's users (the CLI, the handler) import from it.
__all__ = ["Setting", "SettingsError"]

DEFAULT_COUNT_ATTRIBUTE = "sqs-dlq-replay-nb"
# 8 SendMessageBatch requests at once cut a batch's time 8-fold (bench/bench_batch_send.py).
DEFAULT_SEND_CONCURRENCY = 8
SEND_CONCURRENCY_LIMIT = 32  # the SQS client's connection pool (sqs/client.py) is this big
MAX_ATTEMPTS_LIMIT = 100
MAX_MESSAGE_AGE_LIMIT = 1_209_600
_JITTERS = [j.value for j in Jitter]
_QUEUE_URL = Rule(
    queue_url, "the URL of an SQS queue", "an SQS queue URL", {"Type": "String"}, explains=True
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
_TOPIC_ARN = Rule(
    topic_arn,
    "empty, or an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)",
    "an SNS topic ARN",
    {"Type": "String", "AllowedPattern": TOPIC_ARN_PARAMETER_PATTERN},
)

# template.yaml's pattern of one ReplayTargetArns entry (blank allowed): `target_service`'s.
TARGET_ARN_PARAMETER_PATTERN = (
    r"^$|^arn:aws[a-z-]*:(lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}"
    r"(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?|(sqs|sns):[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]{1,256}"
    r"|states:[a-z0-9-]+:[0-9]{12}:stateMachine:[A-Za-z0-9_-]{1,80}"
    r"|events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9/_.-]{1,256})$"
)


def _dlq_kind(text: str) -> str:
    if text not in KIND_CHOICES:
        raise ValueError(text)
    return text


# One row per variable of the function's environment, in the order they are checked.
SETTINGS: tuple[Setting[Any], ...] = (
    Setting(
        "OPERATOR_QUEUE_URL",
        _QUEUE_URL,
        "",
        "the queue parked messages go to",
        parameter="OperatorQueueArn",
        parameter_constraints=_QUEUE_ARN_PARAMETER,
        required=True,
    ),
    Setting(
        "MAIN_QUEUE_URL",
        _QUEUE_URL,
        "",
        "the queue replays go to when a record names no allowed source queue (none: such "
        "records are parked unknown-source)",
        parameter="MainQueueArn",
        parameter_constraints=_QUEUE_ARN_PARAMETER,
    ),
    Setting(
        "MAX_ATTEMPTS",
        integer_rule(1, MAX_ATTEMPTS_LIMIT),
        "3",
        "replays before a message is parked",
    ),
    Setting(
        "BACKOFF_BASE_SECONDS",
        integer_rule(1, MAX_VISIBILITY_TIMEOUT_SECONDS),
        "60",
        "ceiling of the first delay, in seconds",
        field="backoff.base_seconds",
    ),
    Setting(
        "BACKOFF_MULTIPLIER",
        # No upper bound: base x multiplier^(n-1) is capped, so a larger multiplier only
        # reaches the cap sooner (core/backoff.py compares in log space).
        Rule(number_at_least(1.0), "a number >= 1", ">= 1", {"Type": "Number", "MinValue": 1}),
        "2",
        "growth of the delay ceiling per attempt",
        field="backoff.multiplier",
    ),
    Setting(
        "BACKOFF_CAP_SECONDS",
        integer_rule(
            1,
            MAX_VISIBILITY_TIMEOUT_SECONDS,
            f"an integer from 1 to {MAX_VISIBILITY_TIMEOUT_SECONDS} (12 hours)",
        ),
        "900",
        "largest delay ceiling, in seconds, applied before the jitter; above 900 the copy "
        "waits in the DLQ",
        field="backoff.cap_seconds",
    ),
    Setting(
        "JITTER",
        Rule(
            Jitter,
            f"one of {', '.join(_JITTERS)}",
            f"{', '.join(_JITTERS[:-1])} or {_JITTERS[-1]}",
            choices(*_JITTERS),
        ),
        "full",
        "how the delay is drawn below its ceiling",
        field="backoff.jitter",
    ),
    Setting(
        "REPLAY_COUNT_ATTRIBUTE",
        Rule(
            attribute_name,
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
        field="count_attribute",
    ),
    Setting(
        "ALLOWED_SOURCE_QUEUE_ARNS",
        Rule(
            arn_list,
            "a comma-separated list of SQS queue ARNs (arn:<partition>:sqs:<region>:"
            "<account>:<name>)",
            "comma list of SQS queue ARNs",
            {"Type": "CommaDelimitedList", "AllowedPattern": QUEUE_ARN_PARAMETER_PATTERN},
        ),
        "",
        "queues that share the DLQ: a record whose source queue is listed is replayed to it",
    ),
    Setting(
        "LOG_MESSAGE_BODY",
        flag_rule(),
        "false",
        "whether message bodies may appear in logs and park notices",
    ),
    Setting(
        "WRITE_ORIGIN_ATTRIBUTE",
        flag_rule(),
        "false",
        "whether replayed copies carry dlq-replay-origin, for consumers to deduplicate by",
        field="write_origin",
    ),
    Setting(
        "PARK_NOTIFICATION_TOPIC_ARN",
        _TOPIC_ARN,
        "",
        "the SNS topic that gets one notice per parked message",
    ),
    Setting(
        "MAX_MESSAGE_AGE_SECONDS",
        integer_rule(
            0,
            MAX_MESSAGE_AGE_LIMIT,
            f"an integer from 0 (no limit) to {MAX_MESSAGE_AGE_LIMIT} (14 days)",
        ),
        "0",
        "a message whose first failure is older (seconds) is parked max-age; 0: no limit",
    ),
    Setting(
        "SEND_CONCURRENCY",
        integer_rule(1, SEND_CONCURRENCY_LIMIT),
        str(DEFAULT_SEND_CONCURRENCY),
        "SendMessageBatch requests in flight at once for one batch",
    ),
    Setting(
        "OUTAGE_BREAKER",
        flag_rule("on", "off"),
        "on",
        "the outage breaker: the replay pauses itself while nearly every replayed copy comes back "
        "(in Lambda with OUTAGE_BREAKER_TABLE and OUTAGE_BREAKER_RULE, which the template sets)",
    ),
    Setting(
        "DLQ_KIND",
        Rule(
            _dlq_kind,
            f"one of {', '.join(KIND_CHOICES)}",
            " | ".join(KIND_CHOICES),
            choices(*KIND_CHOICES),
        ),
        "sqs",
        "which DLQ records the replay accepts (lambda: a function's asynchronous-invocation "
        "DLQ and OnFailure destination; eventbridge: a rule target's DLQ; any: every kind); "
        "a record of another kind is parked unexpected-kind",
        parameter="DeadLetterQueueKind",
    ),
    Setting(
        "REPLAY_TARGET_ARNS",
        Rule(
            comma_list(is_target_arn),
            "a comma-separated list of ARNs of Lambda functions, SQS queues, SNS topics, Step "
            "Functions state machines or EventBridge event buses",
            "comma list of target ARNs",
            {"Type": "CommaDelimitedList", "AllowedPattern": TARGET_ARN_PARAMETER_PATTERN},
        ),
        "",
        "the only targets a record of a serverless kind is delivered to (an unqualified function "
        "ARN allows its versions and aliases); another target is parked target-not-allowed",
    ),
    Setting(
        "FOLLOW_NOTICE_PERCENT",
        integer_rule(1, 100),
        "10",
        "a notice when an operator move's returns reach this percent of what it sent (and at "
        "least 5 messages) before it settles",
    ),
    Setting(
        "FOLLOW_NOTICE_TOPIC_ARN",
        _TOPIC_ARN,
        "",
        "the SNS topic of the notices of operator moves whose copies came back (the template "
        "sets the alarm topic)",
        # The variable is the alarm topic, given or made: not the parameter's value as it is.
        parameter_constraints={
            "Type": "String",
            "Default": "",
            "AllowedPattern": TOPIC_ARN_PARAMETER_PATTERN,
        },
        parameter="AlarmTopicArn",
    ),
)
SETTING: Mapping[str, Setting[Any]] = {setting.variable: setting for setting in SETTINGS}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the replay needs to decide and route; the defaults are the table's."""

    operator_queue_url: str
    main_queue_url: str | None = None
    max_attempts: int = 3
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE
    allowed_source_queue_arns: frozenset[str] = frozenset()
    log_message_body: bool = False
    write_origin: bool = False
    park_notification_topic_arn: str | None = None
    max_message_age_seconds: int = 0  # 0: no age limit
    send_concurrency: int = DEFAULT_SEND_CONCURRENCY
    # In Lambda the breaker also needs its state table and probe rule (breaker/function.py).
    outage_breaker: bool = True
    dlq_kind: str = "sqs"
    replay_target_arns: frozenset[str] = frozenset()
    follow_notice_percent: int = 10
    follow_notice_topic_arn: str | None = None
    # Where URLs built from queue ARNs point (boto3's AWS_ENDPOINT_URL_SQS/AWS_ENDPOINT_URL).
    endpoint_url_sqs: str | None = None

    @property
    def accepted_kinds(self) -> frozenset[RecordKind]:
        return KIND_CHOICES[self.dlq_kind]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        fields: dict[str, Any] = {}
        backoff: dict[str, Any] = {}
        for setting in SETTINGS:
            owner, _, name = setting.field.rpartition(".")
            (backoff if owner == "backoff" else fields)[name] = setting.read(env)
        endpoint = env.get("AWS_ENDPOINT_URL_SQS", "").strip() or env.get("AWS_ENDPOINT_URL", "")
        return cls(
            **fields, backoff=BackoffPolicy(**backoff), endpoint_url_sqs=endpoint.strip() or None
        )


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    """The consumer toolkit's backoff and operator queue, by the replay's variables and rules."""

    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    operator_queue_url: str | None = None  # without it, a ParkMessage fails its record

    def __post_init__(self) -> None:
        if self.operator_queue_url is not None:
            problem = queue_url_problem(self.operator_queue_url)
            if problem:
                raise SettingsError("OPERATOR_QUEUE_URL", self.operator_queue_url, problem)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ConsumerSettings:
        """The backoff's variables and (optional) OPERATOR_QUEUE_URL; others are ignored."""
        backoff = {
            setting.field.removeprefix("backoff."): setting.read(env)
            for setting in SETTINGS
            if setting.field.startswith("backoff.")
        }
        return cls(
            backoff=BackoffPolicy(**backoff),
            operator_queue_url=SETTING["OPERATOR_QUEUE_URL"].read(env, required=False),
        )
