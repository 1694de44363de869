"""Which queues use a queue as their DLQ (ListDeadLetterSourceQueues)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def dead_letter_sources(sqs: SQSClient, url: str) -> list[str]:
    """URLs of the queues whose RedrivePolicy names this queue as their DLQ."""
    sources: list[str] = []
    for page in sqs.get_paginator("list_dead_letter_source_queues").paginate(QueueUrl=url):
        sources.extend(page.get("queueUrls", []))
    return sources
