"""Lambda entry point over the `dlq_replay` package shipped in the layer. Init (inside the
SnapStart snapshot) makes only the SQS client; the settings are read on the first invocation
and kept, a bad value failing that invocation with one line naming it."""

from __future__ import annotations

import os
from contextlib import suppress
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from botocore.exceptions import BotoCoreError
from dlq_replay.aws_lambda.replay import LambdaReplay, MalformedEventError
from dlq_replay.core.settings import SettingsError
from dlq_replay.sqs.client import sqs_client

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_sqs import SQSClient

logger = Logger(service="sqs-dlq-replay")
metrics = Metrics(namespace="SqsDlqReplay", service="sqs-dlq-replay")


@cache
def _session() -> boto3.Session:
    return boto3.Session()


@cache
def _sqs() -> SQSClient:
    return sqs_client(session=_session())


@cache
def _replay() -> LambdaReplay:
    try:
        return LambdaReplay.from_env(
            os.environ, sqs=_sqs(), session=_session(), logger=logger, metrics=metrics
        )
    except SettingsError as error:
        logger.error(str(error), extra={"variable": error.variable})
        raise


# A client that cannot be made here (no region, a malformed endpoint URL) is made again by
# the first invocation, which then fails with the reason.
with suppress(BotoCoreError, ValueError):
    _sqs()


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    # One metric per deployment: the template's alarms and dashboard select this function's
    # metrics by FunctionName next to Powertools' service dimension.
    metrics.set_default_dimensions(FunctionName=context.function_name)
    try:
        return _replay()(event, context)
    except MalformedEventError as error:
        logger.error(str(error))
        raise
