"""Settings from the environment: defaults, each variable, and one clear line per bad value."""

from __future__ import annotations

import dataclasses

import pytest
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.settings import SETTING, SETTINGS, ConsumerSettings, Settings, SettingsError
from dlq_replay.core.settings_rules import flag_rule

from ._support import MAIN, OPERATOR, SOURCE_ARN

BASE_ENV = {"OPERATOR_QUEUE_URL": OPERATOR}
TOPIC = "arn:aws:sns:us-east-1:123456789012:parked"
FIFO_TOPIC = "arn:aws:sns:eu-west-1:123456789012:parked_Orders-1.fifo"
GOV_TOPIC = "arn:aws-us-gov:sns:us-gov-west-1:123456789012:parked"


def test_defaults() -> None:
    settings = Settings.from_env(BASE_ENV)
    assert settings == Settings(
        operator_queue_url=OPERATOR,
        main_queue_url=None,
        max_attempts=3,
        backoff=BackoffPolicy(base_seconds=60, multiplier=2.0, cap_seconds=900, jitter=Jitter.FULL),
        count_attribute="sqs-dlq-replay-nb",
        allowed_source_queue_arns=frozenset(),
        log_message_body=False,
        endpoint_url_sqs=None,
    )
    assert type(settings.max_attempts) is int
    assert type(settings.backoff.multiplier) is float


def test_every_variable_is_parsed() -> None:
    other = "arn:aws-cn:sqs:cn-north-1:123456789012:payments.fifo"
    settings = Settings.from_env(
        {
            "OPERATOR_QUEUE_URL": f" {OPERATOR} ",
            "MAIN_QUEUE_URL": MAIN,
            "MAX_ATTEMPTS": "100",
            "BACKOFF_BASE_SECONDS": "30",
            "BACKOFF_MULTIPLIER": "1.5",
            "BACKOFF_CAP_SECONDS": "43200",
            "JITTER": "decorrelated",
            "REPLAY_COUNT_ATTRIBUTE": "my.Count_attr-1",
            "ALLOWED_SOURCE_QUEUE_ARNS": f"{SOURCE_ARN}, {other},",
            "LOG_MESSAGE_BODY": "true",
            "PARK_NOTIFICATION_TOPIC_ARN": TOPIC,
            "MAX_MESSAGE_AGE_SECONDS": "86400",
            "SEND_CONCURRENCY": "32",
            "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:4566",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9999",
        }
    )
    assert settings == Settings(
        operator_queue_url=OPERATOR,
        main_queue_url=MAIN,
        max_attempts=100,
        backoff=BackoffPolicy(30, 1.5, 43_200, Jitter.DECORRELATED),
        count_attribute="my.Count_attr-1",
        allowed_source_queue_arns=frozenset({SOURCE_ARN, other}),
        log_message_body=True,
        park_notification_topic_arn=TOPIC,
        max_message_age_seconds=86_400,
        send_concurrency=32,
        endpoint_url_sqs="http://127.0.0.1:4566",
    )


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("MAX_ATTEMPTS", "1", 1),
        ("MAX_ATTEMPTS", "007", 7),
        ("BACKOFF_BASE_SECONDS", "1", 1),
        ("BACKOFF_MULTIPLIER", "1", 1.0),
        ("BACKOFF_MULTIPLIER", "10", 10.0),
        ("BACKOFF_CAP_SECONDS", "1", 1),
        ("BACKOFF_CAP_SECONDS", "901", 901),
        ("JITTER", "full", Jitter.FULL),
        ("JITTER", "equal", Jitter.EQUAL),
        ("JITTER", "none", Jitter.NONE),
        ("REPLAY_COUNT_ATTRIBUTE", "a" * 256, "a" * 256),
        ("REPLAY_COUNT_ATTRIBUTE", "awsx.count", "awsx.count"),
        ("LOG_MESSAGE_BODY", "TRUE", True),
        ("LOG_MESSAGE_BODY", "false", False),
        ("LOG_MESSAGE_BODY", "", False),
        ("MAIN_QUEUE_URL", "   ", None),
        ("AWS_ENDPOINT_URL", "http://localhost:4566", "http://localhost:4566"),
        ("PARK_NOTIFICATION_TOPIC_ARN", "", None),
        ("PARK_NOTIFICATION_TOPIC_ARN", "  ", None),
        ("PARK_NOTIFICATION_TOPIC_ARN", TOPIC, TOPIC),
        ("PARK_NOTIFICATION_TOPIC_ARN", f" {FIFO_TOPIC} ", FIFO_TOPIC),
        ("PARK_NOTIFICATION_TOPIC_ARN", GOV_TOPIC, GOV_TOPIC),
        ("MAX_MESSAGE_AGE_SECONDS", "0", 0),
        ("MAX_MESSAGE_AGE_SECONDS", "1", 1),
        ("MAX_MESSAGE_AGE_SECONDS", "1209600", 1_209_600),
        ("SEND_CONCURRENCY", "1", 1),
        ("SEND_CONCURRENCY", "8", 8),
    ],
)
def test_single_values(variable: str, value: str, expected: object) -> None:
    settings = Settings.from_env({**BASE_ENV, variable: value})
    actual = {
        "MAX_ATTEMPTS": settings.max_attempts,
        "BACKOFF_BASE_SECONDS": settings.backoff.base_seconds,
        "BACKOFF_MULTIPLIER": settings.backoff.multiplier,
        "BACKOFF_CAP_SECONDS": settings.backoff.cap_seconds,
        "JITTER": settings.backoff.jitter,
        "REPLAY_COUNT_ATTRIBUTE": settings.count_attribute,
        "LOG_MESSAGE_BODY": settings.log_message_body,
        "MAIN_QUEUE_URL": settings.main_queue_url,
        "AWS_ENDPOINT_URL": settings.endpoint_url_sqs,
        "PARK_NOTIFICATION_TOPIC_ARN": settings.park_notification_topic_arn,
        "MAX_MESSAGE_AGE_SECONDS": settings.max_message_age_seconds,
        "SEND_CONCURRENCY": settings.send_concurrency,
    }[variable]
    assert actual == expected
    assert type(actual) is type(expected)


BAD_VALUES = [
    ("MAX_ATTEMPTS", "0", "integer from 1 to 100"),
    ("MAX_ATTEMPTS", "101", "integer from 1 to 100"),
    ("MAX_ATTEMPTS", "abc", "integer from 1 to 100"),
    ("MAX_ATTEMPTS", "2.5", "integer from 1 to 100"),
    ("MAX_ATTEMPTS", "", "integer from 1 to 100"),
    ("MAX_ATTEMPTS", "3\n4", "integer from 1 to 100"),
    ("JITTER", "foo", "one of full, equal, decorrelated, none"),
    ("JITTER", "FULL", "one of full, equal, decorrelated, none"),
    ("BACKOFF_BASE_SECONDS", "-5", "integer from 1 to 43200"),
    ("BACKOFF_BASE_SECONDS", "0", "integer from 1 to 43200"),
    ("BACKOFF_MULTIPLIER", "0.5", "a number >= 1"),
    ("BACKOFF_MULTIPLIER", "nan", "a number >= 1"),
    ("BACKOFF_MULTIPLIER", "inf", "a number >= 1"),
    ("BACKOFF_MULTIPLIER", "1e400", "a number >= 1"),
    ("BACKOFF_MULTIPLIER", "two", "a number >= 1"),
    ("BACKOFF_CAP_SECONDS", "0", "integer from 1 to 43200 (12 hours)"),
    ("BACKOFF_CAP_SECONDS", "43201", "integer from 1 to 43200 (12 hours)"),
    ("OPERATOR_QUEUE_URL", "", "required: the URL of an SQS queue"),
    ("OPERATOR_QUEUE_URL", "   ", "required: the URL of an SQS queue"),
    ("REPLAY_COUNT_ATTRIBUTE", "AWS.x", "not starting with AWS. or Amazon."),
    ("REPLAY_COUNT_ATTRIBUTE", "aws.x", "not starting with AWS. or Amazon."),
    ("REPLAY_COUNT_ATTRIBUTE", "amazon.x", "not starting with AWS. or Amazon."),
    ("REPLAY_COUNT_ATTRIBUTE", ".lead", "no leading, trailing or doubled period"),
    ("REPLAY_COUNT_ATTRIBUTE", "trail.", "no leading, trailing or doubled period"),
    ("REPLAY_COUNT_ATTRIBUTE", "a..b", "no leading, trailing or doubled period"),
    ("REPLAY_COUNT_ATTRIBUTE", "a" * 257, "1-256 of A-Z a-z 0-9 _ - ."),
    ("REPLAY_COUNT_ATTRIBUTE", "my count", "1-256 of A-Z a-z 0-9 _ - ."),
    ("REPLAY_COUNT_ATTRIBUTE", "count/1", "1-256 of A-Z a-z 0-9 _ - ."),
    ("REPLAY_COUNT_ATTRIBUTE", "", "1-256 of A-Z a-z 0-9 _ - ."),
    ("ALLOWED_SOURCE_QUEUE_ARNS", f"{SOURCE_ARN},not-an-arn", "comma-separated list of SQS"),
    ("ALLOWED_SOURCE_QUEUE_ARNS", MAIN, "comma-separated list of SQS"),
    (
        "ALLOWED_SOURCE_QUEUE_ARNS",
        "arn:aws:sns:us-east-1:123456789012:orders",
        "comma-separated list of SQS",
    ),
    ("LOG_MESSAGE_BODY", "maybe", "true or false"),
    ("OPERATOR_QUEUE_URL", "sqs.us-east-1.amazonaws.com/1/q", "not an http:// or https:// URL"),
    ("OPERATOR_QUEUE_URL", "file:///etc/passwd", "not an http:// or https:// URL"),
    ("OPERATOR_QUEUE_URL", f"{OPERATOR}\x1b[2J", "white space or control characters"),
    ("MAIN_QUEUE_URL", f"{MAIN}\x00", "white space or control characters"),
    ("MAIN_QUEUE_URL", "ftp://host/123456789012/orders", "not an http:// or https:// URL"),
    ("MAIN_QUEUE_URL", "https://host/123456789012/orders.main", "does not end in a queue name"),
    ("REPLAY_COUNT_ATTRIBUTE", "dlq-replay-not-before", "nor with dlq-replay-"),
    ("REPLAY_COUNT_ATTRIBUTE", "dlq-replay-park-reason", "nor with dlq-replay-"),
    ("REPLAY_COUNT_ATTRIBUTE", "DLQ-Replay-Park-Reason", "nor with dlq-replay-"),
    ("PARK_NOTIFICATION_TOPIC_ARN", SOURCE_ARN, "an SNS topic ARN"),
    ("PARK_NOTIFICATION_TOPIC_ARN", "parked", "an SNS topic ARN"),
    ("PARK_NOTIFICATION_TOPIC_ARN", "arn:aws:sns:us-east-1:1234:parked", "an SNS topic ARN"),
    ("PARK_NOTIFICATION_TOPIC_ARN", f"{TOPIC}:sub-id", "an SNS topic ARN"),
    ("PARK_NOTIFICATION_TOPIC_ARN", f"{TOPIC}.fifo.fifo", "an SNS topic ARN"),
    ("PARK_NOTIFICATION_TOPIC_ARN", TOPIC + "x" * 251, "an SNS topic ARN"),
    ("MAX_MESSAGE_AGE_SECONDS", "-1", "integer from 0 (no limit) to 1209600 (14 days)"),
    ("MAX_MESSAGE_AGE_SECONDS", "1209601", "integer from 0 (no limit) to 1209600"),
    ("MAX_MESSAGE_AGE_SECONDS", "1.5", "integer from 0 (no limit) to 1209600"),
    ("MAX_MESSAGE_AGE_SECONDS", "", "integer from 0 (no limit) to 1209600"),
    ("SEND_CONCURRENCY", "0", "integer from 1 to 32"),
    ("SEND_CONCURRENCY", "33", "integer from 1 to 32"),
    ("SEND_CONCURRENCY", "four", "integer from 1 to 32"),
]


@pytest.mark.parametrize(("variable", "value", "rule"), BAD_VALUES)
def test_bad_value_is_one_line_naming_variable_value_and_rule(
    variable: str, value: str, rule: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({**BASE_ENV, variable: value})
    text = str(caught.value)
    assert "\n" not in text
    assert "\r" not in text
    assert text.startswith(f"{variable}=")
    assert repr(value) in text
    assert rule in text
    assert caught.value.variable == variable
    assert caught.value.value == value
    assert isinstance(caught.value, ValueError)


def test_missing_operator_queue_is_named() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"MAIN_QUEUE_URL": MAIN})
    assert str(caught.value) == (
        "OPERATOR_QUEUE_URL=<missing> is invalid: required: the URL of an SQS queue"
    )
    assert caught.value.variable == "OPERATOR_QUEUE_URL"
    assert caught.value.value is None


def test_exact_message_for_the_topic_arn() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({**BASE_ENV, "PARK_NOTIFICATION_TOPIC_ARN": "parked"})
    assert str(caught.value) == (
        "PARK_NOTIFICATION_TOPIC_ARN='parked' is invalid: must be empty, or an SNS topic ARN "
        "(arn:<partition>:sns:<region>:<account>:<name>)"
    )


def test_exact_message_for_max_attempts() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({**BASE_ENV, "MAX_ATTEMPTS": "0"})
    assert str(caught.value) == ("MAX_ATTEMPTS='0' is invalid: must be an integer from 1 to 100")


def test_unknown_variables_are_ignored() -> None:
    env = {
        **BASE_ENV,
        "MAX_ATTEMPT": "0",  # a near-miss name is not ours
        "JITTER_MODE": "foo",
        "AWS_LAMBDA_FUNCTION_NAME": "replay",
        "PATH": "/usr/bin",
    }
    assert Settings.from_env(env) == Settings.from_env(BASE_ENV)


def test_settings_are_frozen() -> None:
    settings = Settings.from_env(BASE_ENV)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_attempts = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.backoff.cap_seconds = 1  # type: ignore[misc]
    assert settings.max_attempts == 3
    assert settings.backoff.cap_seconds == 900


def test_the_dataclass_defaults_are_the_tables() -> None:
    # Settings built in code (tests, the demo) and from an empty environment agree.
    assert Settings(operator_queue_url=OPERATOR) == Settings.from_env(BASE_ENV)
    assert ConsumerSettings() == ConsumerSettings.from_env({})


def test_every_field_has_its_row_and_every_row_its_field() -> None:
    rows = {setting.field for setting in SETTINGS}
    fields = {f.name for f in dataclasses.fields(Settings)} - {"backoff", "endpoint_url_sqs"}
    fields |= {f"backoff.{f.name}" for f in dataclasses.fields(BackoffPolicy)}
    assert rows == fields


def test_a_row_parses_one_value_alone() -> None:
    # What the CLI's options use: no other variable (no operator queue) is needed.
    assert SETTING["BACKOFF_MULTIPLIER"].parse("2.5") == 2.5
    assert SETTING["MAIN_QUEUE_URL"].parse("  ") is None
    with pytest.raises(SettingsError) as caught:
        SETTING["OPERATOR_QUEUE_URL"].parse(" ")
    assert str(caught.value) == (
        "OPERATOR_QUEUE_URL=' ' is invalid: required: the URL of an SQS queue"
    )
    assert SETTING["OPERATOR_QUEUE_URL"].parse(" ", required=False) is None


def test_a_switch_spelled_on_and_off() -> None:
    # What a setting such as an on/off breaker would use: its template's values, and the rest.
    rule = flag_rule("on", "off")
    assert [rule.convert(t) for t in ("on", "OFF", "true", "0", "")] == [
        True,
        False,
        True,
        False,
        False,
    ]
    assert rule.constraints == {"Type": "String", "AllowedValues": ["on", "off"]}
    with pytest.raises(ValueError, match="maybe"):
        rule.convert("maybe")
