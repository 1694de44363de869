"""Reading a target's ARN (its service and region pick the client) and a rule's ARN (its bus
and name are the lookup of a FIFO target's group id)."""

from __future__ import annotations

import pytest
from dlq_replay.core.queues import Arn, rule_location


def test_an_arns_parts_keep_the_colons_of_its_resource() -> None:
    arn = Arn.parse("arn:aws-cn:lambda:cn-north-1:123456789012:function:orders:live")

    assert arn == Arn("aws-cn", "lambda", "cn-north-1", "123456789012", "function:orders:live")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "orders",
        "arn:aws:s3:::bucket",
        "arn:aws:sqs:us-east-1:123456789012:",
        "urn:aws:sqs:a:b:c",
    ],
)
def test_what_is_not_an_arn_with_a_region_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not an ARN"):
        Arn.parse(text)


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("arn:aws:events:us-east-1:123456789012:rule/nightly", ("us-east-1", "nightly", None)),
        ("arn:aws:events:eu-west-1:123456789012:rule/shop/orders", ("eu-west-1", "orders", "shop")),
        (
            "arn:aws:events:us-east-1:123456789012:rule/aws.partner/saas.com/a1/orders",
            ("us-east-1", "orders", "aws.partner/saas.com/a1"),
        ),
    ],
)
def test_a_rule_arn_names_its_region_rule_and_bus(
    rule: str, expected: tuple[str, str, str | None]
) -> None:
    assert rule_location(rule) == expected


@pytest.mark.parametrize(
    "rule",
    [
        "arn:aws:events:us-east-1:123456789012:event-bus/shop",
        "arn:aws:events:us-east-1:123456789012:rule/",
        "arn:aws:sqs:us-east-1:123456789012:rule/x",
    ],
)
def test_what_is_not_a_rule_arn_is_refused(rule: str) -> None:
    with pytest.raises(ValueError, match="not an EventBridge rule ARN"):
        rule_location(rule)
