"""What the end-to-end tests deploy (parameters) and what they get back (`Deployment`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_lambda.type_defs import (
        EventSourceMappingConfigurationTypeDef,
        FunctionConfigurationResponseTypeDef,
    )
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
STACK_NAME = "sqs-dlq-replay-e2e"
# Create-everything mode (no queue ARNs) with settings that let a message run its whole course
# in seconds. Most values differ from their defaults, so the checks see them carried through.
PARAMETERS: dict[str, str] = {
    "MainQueueMaxReceiveCount": "1",
    "DeadLetterQueueMaxReceiveCount": "10",
    "MaxAttempts": "2",
    "BackoffBaseSeconds": "1",
    "BackoffMultiplier": "3",
    "BackoffCapSeconds": "2",
    "Jitter": "none",
    "ReplayCountAttribute": "e2e-replays",
    "BatchSize": "5",
    "MaximumBatchingWindowInSeconds": "1",
    "MaximumConcurrency": "2",
    "FunctionTimeout": "10",
}


@dataclass(frozen=True)
class Deployment:
    endpoint_url: str
    outputs: dict[str, str]
    function: FunctionConfigurationResponseTypeDef
    # As deployed, read before moto's mappings were paused.
    mappings: list[EventSourceMappingConfigurationTypeDef]
    sqs: SQSClient
