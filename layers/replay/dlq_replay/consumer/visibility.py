"""What a consumer of the main queue imports: the replay count, the id to deduplicate by, and a
visibility heartbeat."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.attributes import (
    ORIGIN_ATTRIBUTE,
    Attribute,
    from_lambda,
    from_sqs,
    parse_count,
)
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class AttributesNotReceivedWarning(UserWarning):
    """A boto3 message came without its message attributes: its replay count cannot be read."""


def replay_attempt(message: Mapping[str, Any], attribute: str = DEFAULT_COUNT_ATTRIBUTE) -> int:
    """How many times the replay sent this message back: 0 for a first delivery.

    Takes a Lambda SQS record (`messageAttributes`) or a boto3 message (`MessageAttributes`);
    a count that is not a valid one reads as 0, since such a message was never replayed by us.
    SQS returns message attributes only when ReceiveMessage asks for them
    (`MessageAttributeNames=["All"]` or the count's name); a boto3 message received without
    asking for any attribute (no `MessageAttributes`, no `Attributes`) warns, once per call site
    (Python's warning filter), since every such message reads as 0.
    """
    if not _is_lambda_record(message) and not {"MessageAttributes", "Attributes"} & set(message):
        # Neither message nor system attributes: a ReceiveMessage that asked for none. (A
        # message without any attribute, received with both asked for, still has "Attributes".)
        warnings.warn(
            "replay_attempt: the message has no MessageAttributes; receive with "
            f"MessageAttributeNames=['All'] (or [{attribute!r}]), else every message reads "
            "as attempt 0",
            AttributesNotReceivedWarning,
            stacklevel=2,
        )
    return parse_count(_attribute_values(message).get(attribute)) or 0


def origin_id(message: Mapping[str, Any]) -> str:
    """The id that names a message across all its replays, to deduplicate by (e.g. as the key
    of Powertools idempotency): the first DLQ message id its `dlq-replay-origin` carries (the
    replay writes it with WRITE_ORIGIN_ATTRIBUTE=true), else the message's own id, which is
    that same id on a first delivery (SQS keeps a message's id when it moves it to a DLQ).

    Takes a Lambda SQS record or a boto3 message (received with its message attributes).
    """
    origin = _attribute_values(message).get(ORIGIN_ATTRIBUTE)
    if origin is not None and origin.string_value:
        return origin.string_value.rsplit("/", 1)[0]
    return str(message["messageId"] if _is_lambda_record(message) else message["MessageId"])


def _is_lambda_record(message: Mapping[str, Any]) -> bool:
    """Lambda's record shape (camelCase, base64 binaries) rather than boto3's message."""
    return "messageAttributes" in message or "messageId" in message


def _attribute_values(message: Mapping[str, Any]) -> Mapping[str, Attribute]:
    if _is_lambda_record(message):
        return from_lambda(message.get("messageAttributes")).values
    return from_sqs(message.get("MessageAttributes")).values


class VisibilityHeartbeat:
    """Keeps a message invisible while long work on it runs in this process.

    Every `interval` seconds the visibility timeout is set to `timeout` seconds from now, so a
    slow but healthy consumer never lets the message reappear (and be counted as a failure
    into the DLQ). The beat stops when the block exits, normally or with an exception; a
    failed beat is kept in `errors` and never raised into the work.
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        receipt_handle: str,
        *,
        timeout: int = 30,
        interval: float | None = None,
    ) -> None:
        if timeout < 1:
            raise ValueError("timeout must be at least 1 second")
        self._sqs = sqs
        self._queue_url = queue_url
        self._receipt_handle = receipt_handle
        self._timeout = timeout
        self._interval = interval if interval is not None else timeout / 3
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="visibility-heartbeat", daemon=True)
        self.beats = 0
        self.errors: list[Exception] = []

    def __enter__(self) -> VisibilityHeartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._sqs.change_message_visibility(
                    QueueUrl=self._queue_url,
                    ReceiptHandle=self._receipt_handle,
                    VisibilityTimeout=self._timeout,
                )
                self.beats += 1
            except (ClientError, BotoCoreError) as error:
                self.errors.append(error)
