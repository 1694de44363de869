"""The template's queue ARN parameters and the package accept exactly the same queues."""

from __future__ import annotations

import re
from typing import Any

import pytest
from dlq_replay.core.queues import QUEUE_NAME_PATTERN
from unit.test_queues import INVALID_NAMES, VALID_NAMES

ARN_PARAMETERS = ("MainQueueArn", "DeadLetterQueueArn", "OperatorQueueArn")


@pytest.mark.parametrize("name", VALID_NAMES + INVALID_NAMES)
def test_every_queue_arn_parameter_agrees_with_the_package(
    sam_template: dict[str, Any], name: str
) -> None:
    arn = f"arn:aws:sqs:eu-west-1:123456789012:{name}"
    expected = bool(QUEUE_NAME_PATTERN.fullmatch(name))
    for parameter in ARN_PARAMETERS:
        pattern = sam_template["Parameters"][parameter]["AllowedPattern"]
        assert bool(re.fullmatch(pattern, arn)) == expected, (parameter, name)
