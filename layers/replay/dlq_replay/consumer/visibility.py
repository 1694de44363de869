"""The replay count, the id to deduplicate by, and a visibility heartbeat."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
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
    """How many times the replay sent this message back (a Lambda record or a boto3 message): 0
    for a first delivery or an invalid count. A boto3 message received without attributes warns."""
    if not _is_lambda_record(message) and not {"MessageAttributes", "Attributes"} & set(message):
        # A ReceiveMessage that asked for none (else "Attributes" is there, if empty).
        warnings.warn(
            "replay_attempt: the message has no MessageAttributes; receive with "
            f"MessageAttributeNames=['All'] (or [{attribute!r}]), else every message reads "
            "as attempt 0",
            AttributesNotReceivedWarning,
            stacklevel=2,
        )
    return parse_count(_attribute_values(message).get(attribute)) or 0


def origin_id(message: Mapping[str, Any]) -> str:
    """The id to deduplicate by across replays: the first DLQ message id its `dlq-replay-origin`
    carries (WRITE_ORIGIN_ATTRIBUTE=true), else its own (SQS keeps it when it dead-letters)."""
    origin = _attribute_values(message).get(ORIGIN_ATTRIBUTE)
    if origin is not None and origin.string_value:
        return origin.string_value.rsplit("/", 1)[0]
    return str(message["messageId"] if _is_lambda_record(message) else message["MessageId"])


def _is_lambda_record(message: Mapping[str, Any]) -> bool:
    return "messageAttributes" in message or "messageId" in message


def _attribute_values(message: Mapping[str, Any]) -> Mapping[str, Attribute]:
    if _is_lambda_record(message):
        return from_lambda(message.get("messageAttributes")).values
    return from_sqs(message.get("MessageAttributes")).values


class VisibilityHeartbeat:
    """Keeps a message invisible while long work on it runs (else it reappears and counts as a
    failure); a failed beat is kept in `errors`, never raised into the work."""

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

    def __exit__(self, *exc_info: object) -> None:
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
