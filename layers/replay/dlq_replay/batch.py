"""Lambda's SQS event in, the partial-batch response out, on Powertools' batch processors.

The replayer handles the whole batch first (its sends are batched across records); the
Powertools record handler then only reports each record's outcome, so the response shape and
the FIFO rule (a failed record fails the rest of its group) are Powertools' own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from botocore.config import Config

from dlq_replay.messages import InboundMessage
from dlq_replay.replayer import Log, Outcome, Replayer
from dlq_replay.settings import Settings

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import Metrics
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_sqs import SQSClient

# Standard retry mode retries throttling and 5xx with backoff; the timeouts keep one slow call
# from eating the function's whole timeout.
SQS_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=15
)


class RecordNotDone(Exception):  # noqa: N818 - names the outcome, not an error class
    """Raised inside the record handler only, to mark a batch item failure for Powertools."""


def sqs_client(
    endpoint_url: str | None = None,
    region_name: str | None = None,
    session: boto3.Session | None = None,
) -> SQSClient:
    """The SQS client the replay uses everywhere: standard retries, bounded timeouts."""
    make = session.client if session is not None else boto3.client
    return make("sqs", endpoint_url=endpoint_url, region_name=region_name, config=SQS_CLIENT_CONFIG)


class LambdaReplay:
    """The callable behind `app.handler`: one event, one partial-batch response."""

    def __init__(self, replayer: Replayer) -> None:
        self._replayer = replayer

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], *, logger: Log, metrics: Metrics | None = None
    ) -> LambdaReplay:
        """Parse the settings (raising SettingsError on a bad value) and make the client."""
        settings = Settings.from_env(env)
        return cls(Replayer(settings, sqs_client(), logger=logger, metrics=metrics))

    def __call__(
        self, event: Mapping[str, Any], context: LambdaContext | None = None
    ) -> PartialItemFailureResponse:
        records = list(event.get("Records") or [])
        outcomes = self._replayer.process(
            [InboundMessage.from_lambda_record(record) for record in records]
        )
        processor: BatchProcessor
        if any(str(r.get("eventSourceARN", "")).endswith(".fifo") for r in records):
            processor = SqsFifoPartialProcessor(skip_group_on_error=True)
        else:
            processor = BatchProcessor(event_type=EventType.SQS)
        # Every record's fate is already logged; a batch where all failed is still an answer,
        # not an exception (Lambda retries exactly the records it lists).
        processor.raise_on_entire_batch_failure = False
        return process_partial_response(
            event=dict(event),
            record_handler=_record_handler(outcomes),
            processor=processor,
            context=context,
        )


def _record_handler(outcomes: Mapping[str, Outcome]) -> Any:
    def record_handler(record: SQSRecord) -> str:
        outcome = outcomes[record.message_id]
        if not outcome.done:
            raise RecordNotDone(outcome.decision.action.value)
        return outcome.decision.action.value

    return record_handler
