"""The message going in (a DLQ record) and the copies going out (SendMessageBatch entries)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from dlq_replay.core import attributes
from dlq_replay.core.attributes import Attribute, ParsedAttributes
from dlq_replay.core.queues import is_fifo_url
from dlq_replay.core.text import printable, utf8_size

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

# System attribute of the record that names the queue a message was dead-lettered from.
SOURCE_ARN_ATTRIBUTE = "DeadLetterQueueSourceArn"
# Largest message SQS takes: body plus every attribute's name, type and value.
MAX_MESSAGE_BYTES = 1_048_576
_T = TypeVar("_T")
_R = TypeVar("_R")


def unencodable(message: InboundMessage) -> str | None:
    """Why no copy of the message can be written, or None: a text holds a lone surrogate (only
    hand-made events carry one), which cannot be encoded as UTF-8. The label is made only for a
    text that fails (`_where`): this runs for every record."""
    texts = [message.body, message.message_id, message.message_group_id, message.trace_header]
    for name, value in message.attributes.items():
        texts += [name, value.data_type, value.string_value]
    for position, text in enumerate(texts):
        if text is None:
            continue
        try:
            text.encode()
        except UnicodeEncodeError as error:
            code = ord(text[error.start])
            return (
                f"{_where(message, position)} holds a lone surrogate (U+{code:04X} at character "
                f"{error.start}), which cannot be encoded as UTF-8: no copy can be written"
            )
    return None


_PLACES = ("the body", "the message id", "MessageGroupId", "AWSTraceHeader")


def _where(message: InboundMessage, position: int) -> str:
    """Where the text at `position` of `unencodable`'s list is: a place, or an attribute's part."""
    if position < len(_PLACES):
        return _PLACES[position]
    index, part = divmod(position - len(_PLACES), 3)
    label = f"message attribute {index + 1}"
    if part == 2:
        return f"the value of {label} ({printable(list(message.attributes)[index])})"
    return f"the {('name', 'type')[part]} of {label}"


def message_size(body: str, values: Mapping[str, Attribute]) -> int:
    return utf8_size(body) + sum(value.size(name) for name, value in values.items())


def fits_limits(body: str, values: Mapping[str, Attribute]) -> bool:
    """Whether a copy with these attributes is one SQS accepts: ≤ 10 attributes, ≤ 1 MiB."""
    return (
        len(values) <= attributes.MAX_MESSAGE_ATTRIBUTES
        and message_size(body, values) <= MAX_MESSAGE_BYTES
    )


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """What the replay needs from one record of the DLQ, in whatever way it was received."""

    message_id: str
    receipt_handle: str
    body: str
    attributes: Mapping[str, Attribute]
    queue_arn: str
    dropped_attributes: Mapping[str, str] = field(default_factory=dict)  # name -> why
    dead_letter_source_arn: str | None = None
    message_group_id: str | None = None
    trace_header: str | None = None
    receive_count: int = 1
    # SQS's ApproximateFirstReceiveTimestamp (epoch ms): the first receive of this copy.
    first_received_ms: int | None = None
    # SQS's SentTimestamp (epoch ms): when this copy was sent; kept when SQS dead-letters it.
    sent_ms: int | None = None

    @classmethod
    def from_lambda_record(cls, record: Mapping[str, Any]) -> InboundMessage:
        """From one record of Lambda's SQS event (camelCase keys, base64 binaries)."""
        parsed = attributes.from_lambda(record.get("messageAttributes"))
        return cls._build(record, _LAMBDA_KEYS, parsed, record.get("eventSourceARN", ""))

    @classmethod
    def from_boto3(cls, message: Mapping[str, Any], queue_arn: str = "") -> InboundMessage:
        """From one message of boto3's ReceiveMessage (PascalCase keys, raw binaries)."""
        parsed = attributes.from_sqs(message.get("MessageAttributes"))
        return cls._build(message, _BOTO3_KEYS, parsed, queue_arn)

    @classmethod
    def _build(
        cls, raw: Mapping[str, Any], keys: tuple[str, ...], parsed: ParsedAttributes, queue_arn: Any
    ) -> InboundMessage:
        """The fields both shapes share, once: system attributes have the same names."""
        id_key, handle_key, body_key, system_key = keys
        system = _mapping(raw.get(system_key))
        return cls(
            message_id=str(raw[id_key]),
            receipt_handle=str(raw.get(handle_key, "")),
            body=str(raw.get(body_key, "")),
            attributes=parsed.values,
            dropped_attributes=parsed.dropped,
            queue_arn=str(queue_arn),
            dead_letter_source_arn=system.get(SOURCE_ARN_ATTRIBUTE) or None,
            message_group_id=system.get("MessageGroupId") or None,
            trace_header=system.get("AWSTraceHeader") or None,
            receive_count=_receive_count(system.get("ApproximateReceiveCount")),
            first_received_ms=_timestamp_ms(system.get("ApproximateFirstReceiveTimestamp")),
            sent_ms=_timestamp_ms(system.get("SentTimestamp")),
        )


_LAMBDA_KEYS = ("messageId", "receiptHandle", "body", "attributes")
_BOTO3_KEYS = ("MessageId", "ReceiptHandle", "Body", "Attributes")


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    record_id: str
    queue_url: str
    body: str
    attributes: Mapping[str, Attribute]
    delay_seconds: int = 0
    message_group_id: str | None = None
    deduplication_id: str | None = None
    trace_header: str | None = None

    @property
    def size_bytes(self) -> int:
        return message_size(self.body, self.attributes)

    def to_entry(self, entry_id: str) -> SendMessageBatchRequestEntryTypeDef:
        """The SendMessageBatch entry; DelaySeconds only when non-zero (FIFO refuses it)."""
        entry: SendMessageBatchRequestEntryTypeDef = {"Id": entry_id, "MessageBody": self.body}
        if self.attributes:
            entry["MessageAttributes"] = {
                name: value.to_sqs() for name, value in self.attributes.items()
            }
        if self.delay_seconds:
            entry["DelaySeconds"] = self.delay_seconds
        if self.message_group_id is not None:
            entry["MessageGroupId"] = self.message_group_id
        if self.deduplication_id is not None:
            entry["MessageDeduplicationId"] = self.deduplication_id
        if self.trace_header is not None:
            entry["MessageSystemAttributes"] = {
                "AWSTraceHeader": {"DataType": "String", "StringValue": self.trace_header}
            }
        return entry


def sized_batches(
    items: Iterable[_T], size: Callable[[_T], int], entries: int, limit: int
) -> Iterator[tuple[list[_T], int]]:
    """Requests of at most `entries` items and `limit` bytes, in order, each with its bytes; an
    item too big to share one goes alone, for the service to judge."""
    batch: list[_T] = []
    total = 0
    for item in items:
        item_size = size(item)
        if batch and (len(batch) == entries or total + item_size > limit):
            yield batch, total
            batch, total = [], 0
        batch.append(item)
        total += item_size
    if batch:
        yield batch, total


def in_order_per_key(items: Iterable[_T], key: Callable[[_T], str]) -> list[list[_T]]:
    """Tasks for a pool: one per item, but the items whose key is one FIFO queue or target
    (its URL or ARN) all in one, in order."""
    tasks: dict[str | int, list[_T]] = {}
    for index, item in enumerate(items):
        fifo = key(item)
        tasks.setdefault(fifo if is_fifo_url(fifo) else index, []).append(item)
    return list(tasks.values())


def run_tasks(
    work: Callable[[_T], _R], tasks: Sequence[_T], concurrency: int, name: str
) -> list[_R]:
    """`work` on every task, up to `concurrency` at once, the results in order. A pool per
    call: no thread outlives the invocation (Lambda freezes between them)."""
    workers = min(concurrency, len(tasks))
    if workers <= 1:
        return [work(task) for task in tasks]
    with ThreadPoolExecutor(workers, thread_name_prefix=name) as pool:
        return list(pool.map(work, tasks))


def _mapping(value: Any) -> Mapping[str, Any]:
    """A record's system attributes; anything but an object reads as none (informational)."""
    return value if attributes.is_mapping(value) else {}


def _receive_count(value: Any) -> int:
    """SQS's ApproximateReceiveCount; informational, so a malformed one reads as 1, not a crash."""
    text = str(value or "")
    return int(text) if text.isdigit() and len(text) < 10 else 1


def _timestamp_ms(value: Any) -> int | None:
    """An epoch-milliseconds system attribute; None when absent or malformed (never a crash)."""
    text = str(value or "")
    return int(text) if text.isdigit() and len(text) < 16 else None
