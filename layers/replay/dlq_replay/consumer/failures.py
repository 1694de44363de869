"""The consumer's failure path on SQS: park what asked to be parked, back off the rest (a refused
park leaves its record failed). Drop-ins for Powertools' `BatchProcessor` and
`SqsFifoPartialProcessor` take it for their failed records (a record whose handler raised
`ParkMessage` is parked and reported done); `settle_failure` for consumers that receive with
boto3 (no Lambda, no Powertools: the usage, and the receive it needs, are in docs/consumer.md)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, SqsFifoPartialProcessor
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.backoff import RandomSource
from dlq_replay.core.failure import (
    ParkDetail,
    ParkMessage,
    ParkRule,
    park_now_copy,
    visibility_delay,
)
from dlq_replay.core.messages import InboundMessage, unencodable
from dlq_replay.core.queues import Arn, is_fifo_url
from dlq_replay.core.settings import ConsumerSettings
from dlq_replay.core.text import printable
from dlq_replay.sqs.sending import BatchSender, change_visibility

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.core.log import Log


@dataclass(frozen=True, slots=True)
class FailureOptions:
    """How failures are settled beyond the settings: `park_rule` turns exceptions into parks
    (`park_on`); `park_detail(park, body) -> str` writes `dlq-replay-error` (default
    `body_free_detail`); `rng` draws the delays; `logger` gets a line per settled message."""

    park_rule: ParkRule | None = None
    park_detail: ParkDetail | None = None
    rng: RandomSource | None = None
    logger: Log | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """A message the consumer did not finish, and why (None: not attempted, e.g. FIFO)."""

    message: InboundMessage
    error: BaseException | None = None


class FailurePath:
    def __init__(
        self, sqs: SQSClient, settings: ConsumerSettings, options: FailureOptions | None = None
    ) -> None:
        self._options = options = options or FailureOptions()
        self._sqs = sqs
        self._settings = settings
        self._rng = options.rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self.logger: Log = options.logger or logging.getLogger("dlq_replay.consumer")

    def settle(
        self, queue_url: str, failures: Sequence[Failure], held_seconds: int = 0
    ) -> set[str]:
        """Park the `ParkMessage` failures, back off the others; the ids parked (to be deleted).
        `held_seconds`: so no visibility passes SQS's 12 hours."""
        failures = [self._with_park_rule(failure) for failure in failures]
        parked = self._park([f for f in failures if isinstance(f.error, ParkMessage)])
        self._back_off(
            queue_url,
            [f.message for f in failures if f.message.message_id not in parked],
            held_seconds,
        )
        return parked

    def _with_park_rule(self, failure: Failure) -> Failure:
        error = failure.error
        if self._options.park_rule is None or error is None or isinstance(error, ParkMessage):
            return failure
        park = self._options.park_rule(error)
        return failure if park is None else Failure(failure.message, park)

    def unknown_queue(self, queue_arn: str, failures: Sequence[Failure]) -> None:
        for failure in failures:
            self.logger.error(
                "record's eventSourceARN names no queue: not backed off, not parked",
                extra={"message_id": failure.message.message_id, "event_source_arn": queue_arn},
            )

    def _park(self, failures: Sequence[Failure]) -> set[str]:
        if not failures:
            return set()
        operator_queue_url = self._settings.operator_queue_url
        if operator_queue_url is None:
            for failure in failures:
                self.logger.error(
                    "ParkMessage raised but OPERATOR_QUEUE_URL is not set: the record fails",
                    extra={"message_id": failure.message.message_id},
                )
            return set()
        parks: list[tuple[InboundMessage, ParkMessage]] = []
        for failure in failures:
            assert isinstance(failure.error, ParkMessage)
            problem = unencodable(failure.message)
            if problem is not None:  # a hand-made record: it fails alone, the others settle
                self.logger.error(
                    "cannot park: the record fails and is retried",
                    extra={"message_id": printable(failure.message.message_id), "problem": problem},
                )
                continue
            parks.append((failure.message, failure.error))
        detail = self._options.park_detail
        copies = [
            park_now_copy(message, park, operator_queue_url, detail) for message, park in parks
        ]
        refused = BatchSender(self._sqs).send(copies)
        parked = set()
        for message, park in parks:
            fields = {"message_id": message.message_id, "reason": f"consumer:{park.reason}"}
            if (why := refused.get(message.message_id)) is not None:
                self.logger.error(
                    "park failed: the record fails and is retried",
                    extra={**fields, "error_code": why.code, "error": why.message},
                )
            else:
                parked.add(message.message_id)
                self.logger.info("record parked by its consumer", extra=fields)
        return parked

    def _back_off(self, queue_url: str, messages: Sequence[InboundMessage], held: int) -> None:
        if not messages:
            return
        delays = self._delays(queue_url, messages, held)
        refused = change_visibility(
            self._sqs, queue_url, [(m.receipt_handle, delays[m.message_id]) for m in messages]
        )
        for index, code in refused:
            self.logger.warning(
                "could not back off a failed message; it returns after its visibility timeout",
                extra={"message_id": messages[index].message_id, "code": code},
            )
        for message in messages:
            self.logger.info(
                "record backed off",
                extra={
                    "message_id": message.message_id,
                    "receive_count": message.receive_count,
                    "visibility_seconds": delays[message.message_id],
                },
            )

    def _delays(
        self, queue_url: str, messages: Sequence[InboundMessage], held: int
    ) -> dict[str, int]:
        """One delay per message; on a FIFO queue its group's first, so it comes back in order."""
        delays: dict[str, int] = {}
        by_group: dict[str, int] = {}
        fifo = is_fifo_url(queue_url)
        for message in messages:
            group = message.message_group_id if fifo else None
            if group is not None and group in by_group:
                delays[message.message_id] = by_group[group]
                continue
            delay = visibility_delay(self._settings.backoff, message.receive_count, self._rng, held)
            delays[message.message_id] = delay
            if group is not None:
                by_group[group] = delay
        return delays


def settle_failure(
    sqs: SQSClient,
    queue_url: str,
    message: Mapping[str, Any],
    error: BaseException | None,
    settings: ConsumerSettings,
    *,
    held_seconds: int = 0,
    options: FailureOptions | None = None,
) -> bool:
    """Park (then delete) a message whose handler raised `ParkMessage` (or what
    `options.park_rule` names), else hide it for its backoff: True when parked. `held_seconds`:
    time since the receive."""
    inbound = InboundMessage.from_boto3(message)
    path = FailurePath(sqs, settings, options)
    parked = path.settle(queue_url, [Failure(inbound, error)], held_seconds)
    if not parked:
        return False
    try:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=inbound.receipt_handle)
    except (ClientError, BotoCoreError) as failure:
        # Parked already: the source copy comes back and may be parked a second time.
        path.logger.warning(
            "parked, but the source copy could not be deleted",
            extra={"message_id": inbound.message_id, "error": str(failure)},
        )
    return True


def park_now(
    sqs: SQSClient,
    queue_url: str,
    message: Mapping[str, Any],
    park: ParkMessage,
    settings: ConsumerSettings,
) -> bool:
    """Send a message to the operator queue now (`consumer:<reason>`), then delete it, without
    raising first; False when the park failed and the message backed off instead. Kept for
    0.1.0's callers: `settle_failure` with the `ParkMessage` does the same."""
    return settle_failure(sqs, queue_url, message, park, settings)


# The mapping received the batch a little before the invocation: kept off SQS's 12 hours.
RECEIVE_MARGIN_SECONDS = 60


class _BackoffOnFailure:
    """Remember each failure's exception; settle them before Powertools builds the response."""

    _started: float
    _errors: dict[str, BaseException | None]
    fail_messages: list[Any]
    success_messages: list[Any]
    exceptions: list[Any]

    def __init__(
        self,
        sqs: SQSClient,
        settings: ConsumerSettings,
        powertools: Mapping[str, Any],  # the Powertools processor's own arguments
        *,
        rng: RandomSource | None = None,
        logger: Log | None = None,
        clock: Callable[[], float] = time.monotonic,
        park_rule: ParkRule | None = None,
        park_detail: ParkDetail | None = None,
    ) -> None:
        super().__init__(**powertools)
        self._sqs, self._clock = sqs, clock
        self._path = FailurePath(sqs, settings, FailureOptions(park_rule, park_detail, rng, logger))

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


class BackoffOptions(TypedDict, total=False):
    """The backoff processors' own keyword arguments (`FailureOptions`' and the clock)."""

    rng: RandomSource | None
    logger: Log | None
    clock: Callable[[], float]
    park_rule: ParkRule | None
    park_detail: ParkDetail | None


class BackoffBatchProcessor(_BackoffOnFailure, BatchProcessor):
    """`BatchProcessor(EventType.SQS)` whose failed records back off (or park now)."""

    def __init__(
        self,
        sqs: SQSClient,
        settings: ConsumerSettings,
        *,
        raise_on_entire_batch_failure: bool = True,
        **options: Unpack[BackoffOptions],
    ) -> None:
        powertools = {
            "event_type": EventType.SQS,
            "raise_on_entire_batch_failure": raise_on_entire_batch_failure,
        }
        super().__init__(sqs, settings, powertools, **options)


class BackoffFifoProcessor(_BackoffOnFailure, SqsFifoPartialProcessor):
    """`SqsFifoPartialProcessor` whose failed records back off, a message group together."""

    def __init__(
        self,
        sqs: SQSClient,
        settings: ConsumerSettings,
        *,
        skip_group_on_error: bool = False,
        **options: Unpack[BackoffOptions],
    ) -> None:
        super().__init__(sqs, settings, {"skip_group_on_error": skip_group_on_error}, **options)
