"""A local stand-in for Lambda's SQS event source mapping: pollers hand each batch to a handler
as the event Lambda would deliver, and delete the records not in its `batchItemFailures`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.retries.standard import RetryContext, ThrottledRetryableChecker

from dlq_replay.core import attributes
from dlq_replay.core.log import Log
from dlq_replay.core.queues import arn_region
from dlq_replay.local.answers import ForeignAnswerError, error_text
from dlq_replay.sqs.sending import change_visibility, delete_messages

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from dlq_replay.breaker.worker_side import BreakerGate

Handler = Callable[[dict[str, Any], Any], Mapping[str, Any]]


MAX_RECEIVE_BATCH = 10
MAX_ERROR_PAUSE_SECONDS = 30.0
START_UP_PATIENCE_SECONDS = 300.0
# A receive waiting at a signal is let finish: 3 s is within the shutdown's 4 s grace (cli.shutdown)
DEFAULT_WAIT_SECONDS = 3


@dataclass
class PollStats:
    received: int = 0
    deleted: int = 0
    failed: int = 0
    delete_errors: int = 0
    poll_errors: int = 0
    released: int = 0  # received after the stop: made visible again, untouched
    # Under way now (a shutdown that cannot wait says so): receives waiting, messages not settled.
    polling: int = 0
    in_hand: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def under_way(self) -> tuple[int, int]:
        """(receives waiting, messages in hand), read together."""
        with self.lock:
            return self.polling, self.in_hand

    def track(self, polling: int = 0, in_hand: int = 0) -> None:
        with self.lock:
            self.polling += polling
            self.in_hand += in_hand

    def add(
        self, received: int, deleted: int, failed: int, delete_errors: int, *, released: int = 0
    ) -> None:
        with self.lock:
            self.released += released
            self.received += received
            self.deleted += deleted
            self.failed += failed
            self.delete_errors += delete_errors


@dataclass(frozen=True, slots=True)
class Polling:
    """Messages per receive (Lambda's BatchSize), the long-poll wait, the visibility timeout."""

    batch_size: int = MAX_RECEIVE_BATCH
    wait_seconds: int = DEFAULT_WAIT_SECONDS
    visibility_timeout: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= MAX_RECEIVE_BATCH:
            raise ValueError(f"batch_size must be 1-{MAX_RECEIVE_BATCH}, got {self.batch_size}")


def lambda_record(message: Mapping[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """A record as Lambda's event source mapping delivers it: camelCase keys, base64 binaries,
    system attributes as strings (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html)."""
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": {
            name: str(value) for name, value in (message.get("Attributes") or {}).items()
        },
        "messageAttributes": {name: value.to_lambda() for name, value in parsed.values.items()},
        "md5OfMessageAttributes": message.get("MD5OfMessageAttributes"),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def lambda_event(
    messages: Sequence[Mapping[str, Any]], queue_arn: str, region: str
) -> dict[str, Any]:
    return {"Records": [lambda_record(message, queue_arn, region) for message in messages]}


class LocalEventSource:
    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        handler: Handler,
        polling: Polling = Polling(),  # frozen: one default for all is safe
        *,
        logger: Log | None = None,
        queue_arn: str | None = None,
        gate: BreakerGate | None = None,  # asked before every receive
        stats: PollStats | None = None,
    ) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._handler = handler
        self._polling = polling
        self._logger: Log = logger or logging.getLogger("dlq_replay.local.eventsource")
        self.queue_arn = queue_arn or read_queue_arn(sqs, queue_url)
        self.region = arn_region(self.queue_arn)
        self.stats = stats or PollStats()  # the caller's, to read what is under way
        self._gate = gate

    def poll_once(self, stop: threading.Event | None = None) -> int:
        """Receive one batch, run the handler, delete the successes; the messages received. A batch
        arriving once `stop` is set is made visible again, untouched."""
        request: dict[str, Any] = {
            "QueueUrl": self._queue_url,
            "MaxNumberOfMessages": self._polling.batch_size,
            "WaitTimeSeconds": self._polling.wait_seconds,
            "MessageAttributeNames": ["All"],
            "MessageSystemAttributeNames": ["All"],
        }
        if self._polling.visibility_timeout is not None:
            request["VisibilityTimeout"] = self._polling.visibility_timeout
        self.stats.track(polling=1)
        try:
            messages = self._sqs.receive_message(**request).get("Messages", [])
            self.stats.track(in_hand=len(messages))
        finally:
            self.stats.track(polling=-1)
        try:
            return self._settle(messages, stop)
        finally:
            self.stats.track(in_hand=-len(messages))

    def _settle(self, messages: list[MessageTypeDef], stop: threading.Event | None) -> int:
        if not messages:
            return 0
        if stop is not None and stop.is_set():
            entries = [(m["ReceiptHandle"], 0) for m in messages]
            refused = len(change_visibility(self._sqs, self._queue_url, entries))
            self.stats.add(len(messages), 0, 0, 0, released=len(messages) - refused)
            return len(messages)
        failed = self._handle(messages)
        done = [m for m in messages if m["MessageId"] not in failed]
        # A failed delete only means a redelivery, never a loss.
        delete_errors = len(delete_messages(self._sqs, self._queue_url, done))
        self.stats.add(len(messages), len(done) - delete_errors, len(failed), delete_errors)
        return len(messages)

    def _handle(self, messages: list[MessageTypeDef]) -> set[str]:
        """The handler on the batch; the ids it did not finish. A batch the handler raised on is
        handled again one record at a time: what one message raises fails it alone."""
        failed: set[str] = set()
        records = []
        for message in messages:
            try:
                records.append(lambda_record(message, self.queue_arn, self.region))
            except Exception as error:  # this message's fault alone
                failed.add(message["MessageId"])
                self._failed_alone(message["MessageId"], error)
        for batch in [records] if len(records) <= 1 else [records, *([r] for r in records)]:
            try:
                response = self._handler({"Records": batch}, None)
            except Exception as error:
                if len(batch) == 1:
                    failed.add(batch[0]["messageId"])
                    self._failed_alone(batch[0]["messageId"], error)
                continue
            failed.update(i["itemIdentifier"] for i in response.get("batchItemFailures", []))
            if batch is records:
                break
        return failed

    def _failed_alone(self, message_id: str, error: Exception) -> None:
        self._logger.error(
            "record not handled; it returns after its visibility timeout",
            extra={"message_id": message_id, "error": f"{type(error).__name__}: {error}"},
        )

    def run(self, stop: threading.Event) -> None:
        """Poll until `stop` is set, a batch in hand finished; a failed poll is retried after a
        pause doubling up to 30 s, as Lambda's event source keeps polling."""
        pause = 0.0
        while not stop.is_set():
            if self._gate is not None and not self._gate.wait_until_receiving(stop):
                return
            try:
                self.poll_once(stop)
                pause = 0.0
            except Exception as error:  # any failure of one poll is retried
                pause = min(MAX_ERROR_PAUSE_SECONDS, max(1.0, pause * 2))
                with self.stats.lock:
                    self.stats.poll_errors += 1
                self._logger.error(
                    "poll failed; retrying",
                    extra={"error": error_text(error), "retry_in_seconds": pause},
                )
                stop.wait(pause)


def run_pollers(
    source: LocalEventSource, count: int, stop: threading.Event
) -> list[threading.Thread]:
    """Start `count` pollers on one source (boto3 clients are thread-safe)."""
    threads = [
        threading.Thread(target=source.run, args=(stop,), name=f"poller-{index}", daemon=True)
        for index in range(count)
    ]
    for thread in threads:
        thread.start()
    return threads


def read_queue_arn(sqs: SQSClient, queue_url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def can_heal(error: Exception) -> bool:
    """Whether waiting may cure the error: throttling (botocore's list of codes), a 5xx, or an
    endpoint not reachable (or a proxy's error page in its place)."""
    if isinstance(error, ForeignAnswerError):
        return error.status >= 500
    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        context = RetryContext(attempt_number=1, parsed_response=dict(error.response))
        return status >= 500 or ThrottledRetryableChecker().is_retryable(context)
    return isinstance(error, (BotoConnectionError, HTTPClientError))


def queue_arn_when_reachable(
    sqs: SQSClient,
    queue_url: str,
    stop: threading.Event,
    logger: Log,
    *,
    patience: float = START_UP_PATIENCE_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """The queue's ARN, an error that can heal retried for up to `patience` seconds; None when
    `stop` is set while waiting."""
    deadline = clock() + patience
    pause = 0.0
    while True:
        try:
            return read_queue_arn(sqs, queue_url)
        except (ClientError, BotoCoreError) as error:
            left = deadline - clock()
            if not can_heal(error) or left <= 0:
                raise
            pause = min(MAX_ERROR_PAUSE_SECONDS, max(1.0, pause * 2), left)
            logger.warning(
                "cannot read the queue yet; retrying",
                extra={
                    "queue_url": queue_url,
                    "error": error_text(error),
                    "retry_in_seconds": round(pause, 1),
                    "gives_up_in_seconds": round(left, 1),
                },
            )
            if stop.wait(pause):
                return None
