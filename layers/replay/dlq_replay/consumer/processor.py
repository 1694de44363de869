"""Drop-ins for Powertools' `BatchProcessor` and `SqsFifoPartialProcessor` that back off failed
records; a record whose handler raised `ParkMessage` is parked and reported done."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, SqsFifoPartialProcessor

from dlq_replay.consumer.failures import Failure, FailureOptions, FailurePath
from dlq_replay.core.backoff import RandomSource
from dlq_replay.core.failure import ParkDetail, ParkRule
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.queues import Arn
from dlq_replay.core.settings import ConsumerSettings

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.core.log import Log

# The mapping received the batch a little before the invocation: kept off SQS's 12 hours.
RECEIVE_MARGIN_SECONDS = 60


class _BackoffOnFailure:
    """Remember each failure's exception; settle them before Powertools builds the response."""

    _path: FailurePath
    _clock: Callable[[], float]
    _started: float
    _errors: dict[str, BaseException | None]
    fail_messages: list[Any]
    success_messages: list[Any]
    exceptions: list[Any]

    def _setup(
        self,
        sqs: SQSClient,
        settings: ConsumerSettings,
        options: FailureOptions,
        clock: Callable[[], float],
    ) -> None:
        self._sqs = sqs
        self._path = FailurePath(sqs, settings, options)
        self._clock = clock

    def _prepare(self) -> None:
        self._started = self._clock()
        self._errors = {}
        super()._prepare()  # type: ignore[misc]

    def failure_handler(self, record: Any, exception: Any) -> Any:
        self._errors[record.message_id] = exception[1]
        return super().failure_handler(record, exception)  # type: ignore[misc]

    def _clean(self) -> None:
        if self.fail_messages:
            self._settle()
        super()._clean()  # type: ignore[misc]

    def _settle(self) -> None:
        held = int(self._clock() - self._started) + RECEIVE_MARGIN_SECONDS
        by_queue: dict[str, list[Failure]] = {}
        for record in self.fail_messages:
            message = InboundMessage.from_lambda_record(record.raw_event)
            failure = Failure(message, self._errors.get(message.message_id))
            by_queue.setdefault(message.queue_arn, []).append(failure)
        parked: set[str] = set()
        for queue_arn, failures in by_queue.items():
            try:
                queue_url = Arn.queue(queue_arn).url(self._sqs.meta.endpoint_url)
            except ValueError:
                self._path.unknown_queue(queue_arn, failures)
                continue
            parked |= self._path.settle(queue_url, failures, held)
        if not parked:
            return
        # Parked records are done: Lambda deletes them like successes.
        done = [r for r in self.fail_messages if r.message_id in parked]
        self.fail_messages = [r for r in self.fail_messages if r.message_id not in parked]
        self.success_messages.extend(done)
        parked_errors = {id(self._errors[r.message_id]) for r in done}
        self.exceptions = [e for e in self.exceptions if id(e[1]) not in parked_errors]


class BackoffBatchProcessor(_BackoffOnFailure, BatchProcessor):
    """`BatchProcessor(EventType.SQS)` whose failed records back off (or park now)."""

    def __init__(
        self,
        sqs: SQSClient,
        settings: ConsumerSettings,
        *,
        rng: RandomSource | None = None,
        logger: Log | None = None,
        clock: Callable[[], float] = time.monotonic,
        raise_on_entire_batch_failure: bool = True,
        park_rule: ParkRule | None = None,
        park_detail: ParkDetail | None = None,
    ) -> None:
        super().__init__(EventType.SQS, raise_on_entire_batch_failure=raise_on_entire_batch_failure)
        self._setup(sqs, settings, FailureOptions(park_rule, park_detail, rng, logger), clock)


class BackoffFifoProcessor(_BackoffOnFailure, SqsFifoPartialProcessor):
    """`SqsFifoPartialProcessor` whose failed records back off, a message group together."""

    def __init__(
        self,
        sqs: SQSClient,
        settings: ConsumerSettings,
        *,
        skip_group_on_error: bool = False,
        rng: RandomSource | None = None,
        logger: Log | None = None,
        clock: Callable[[], float] = time.monotonic,
        park_rule: ParkRule | None = None,
        park_detail: ParkDetail | None = None,
    ) -> None:
        super().__init__(skip_group_on_error=skip_group_on_error)
        self._setup(sqs, settings, FailureOptions(park_rule, park_detail, rng, logger), clock)
