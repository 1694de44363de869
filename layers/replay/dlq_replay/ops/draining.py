"""Emptying a queue: receive and delete every message visible in it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from dlq_replay.sqs.sending import MAX_BATCH_ENTRIES, delete_messages

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


def drained_batches(sqs: SQSClient, queue_url: str) -> Iterator[list[MessageTypeDef]]:
    """Receive what is visible now, 10 at a time with every message and system attribute, and
    delete each batch before yielding it, in the order SQS hands them out; ends at the first
    receive that finds nothing. A message SQS does not delete is yielded all the same (it
    comes back when its visibility timeout ends)."""
    while batch := sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=MAX_BATCH_ENTRIES,
        WaitTimeSeconds=0,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", []):
        delete_messages(sqs, queue_url, batch)
        yield batch


def drain(sqs: SQSClient, queue_url: str) -> list[MessageTypeDef]:
    """Receive and delete every message visible in a queue; the messages, in receive order."""
    return [message for batch in drained_batches(sqs, queue_url) for message in batch]
