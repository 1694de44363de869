"""Queue names, ARNs and URLs: one definition, matching SQS (and template.yaml) exactly."""

from __future__ import annotations

import pytest
from dlq_replay.core.queues import QUEUE_NAME_PATTERN, Arn, queue_url_problem
from dlq_replay.core.settings import Settings

from ._support import ACCOUNT, OPERATOR

VALID_NAMES = [
    "q",
    "a" * 75,
    "a" * 76,  # 76-80: CloudFormation-generated names on long or nested stacks
    "a" * 80,
    "Orders_DLQ-1",
    "a" * 75 + ".fifo",  # the 80 includes .fifo
    "x.fifo",
]
INVALID_NAMES = [
    "",
    "a" * 81,
    "a" * 76 + ".fifo",
    ".fifo",
    "orders.dlq",
    "orders dlq",
    "orders/dlq",
    "ordérs",
]


@pytest.mark.parametrize("name", VALID_NAMES)
def test_every_name_sqs_allows_is_a_queue_name(name: str) -> None:
    assert QUEUE_NAME_PATTERN.fullmatch(name)
    arn = Arn.queue(f"arn:aws:sqs:eu-west-1:{ACCOUNT}:{name}")
    assert arn.name == name
    assert arn.is_fifo == name.endswith(".fifo")
    assert arn.url() == f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/{name}"
    assert queue_url_problem(arn.url()) is None


@pytest.mark.parametrize("name", INVALID_NAMES)
def test_names_sqs_refuses_are_not_queue_names(name: str) -> None:
    assert not QUEUE_NAME_PATTERN.fullmatch(name)
    with pytest.raises(ValueError, match="not an SQS queue ARN"):
        Arn.queue(f"arn:aws:sqs:eu-west-1:{ACCOUNT}:{name}")


def test_an_80_character_name_is_an_allowed_source() -> None:
    arn = f"arn:aws-us-gov:sqs:us-gov-west-1:{ACCOUNT}:{'s' * 80}"
    settings = Settings.from_env({"OPERATOR_QUEUE_URL": OPERATOR, "ALLOWED_SOURCE_QUEUE_ARNS": arn})
    assert settings.allowed_source_queue_arns == frozenset({arn})


@pytest.mark.parametrize(
    "url",
    [
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/orders",
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/{'a' * 75}.fifo",
        "http://127.0.0.1:4566/000000000000/orders-dlq",
        "http://localhost:9324/queue/orders/",
    ],
)
def test_queue_urls(url: str) -> None:
    assert queue_url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("sqs.us-east-1.amazonaws.com/1/orders", "is not an http:// or https:// URL"),
        ("ftp://host/1/orders", "is not an http:// or https:// URL"),
        ("https:///1/orders", "is not an http:// or https:// URL"),
        ("https://host/1/orders\n", "white space or control characters"),
        ("https://host/1/ord\x00ers", "white space or control characters"),
        ("https://host/1/my orders", "white space or control characters"),
        ("https://[host/1/orders", "is not a valid URL"),
        ("https://host/1/orders.dlq", "does not end in a queue name"),
        (f"https://host/1/{'a' * 81}", "does not end in a queue name"),
        ("https://host", "does not end in a queue name"),
    ],
)
def test_what_cannot_be_a_queue_url(url: str, problem: str) -> None:
    found = queue_url_problem(url)
    assert found is not None
    assert problem in found
