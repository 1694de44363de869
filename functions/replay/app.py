"""Lambda entry point: a thin handler over the `dlq_replay` package shipped in the layer.

Settings are read on the first invocation, not at import, and then kept for the life of the
execution environment; a bad value fails that invocation with one line naming it.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.settings import SettingsError

logger = Logger(service="sqs-dlq-replay")
metrics = Metrics(namespace="SqsDlqReplay", service="sqs-dlq-replay")


@cache
def _replay() -> LambdaReplay:
    try:
        return LambdaReplay.from_env(os.environ, logger=logger, metrics=metrics)
    except SettingsError as error:
        logger.error(str(error), extra={"variable": error.variable})
        raise


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    # One metric per deployment: the template's alarms and dashboard select this function's
    # metrics by FunctionName next to Powertools' service dimension.
    metrics.set_default_dimensions(FunctionName=context.function_name)
    return _replay()(event, context)
