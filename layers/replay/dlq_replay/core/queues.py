"""Queue identities: names, ARN and URL patterns, and what the name says about the queue type
(the ARN itself is parsed by core/arns.py).

One definition of each, used by the settings, the routing of replays and the operator CLI, so
they all accept exactly the queues SQS itself accepts.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# SQS queue names: 1-80 of A-Z a-z 0-9 - _, the 80 including the `.fifo` of a FIFO queue
# (CreateQueue, "QueueName"; the same rule as template.yaml's AllowedPattern).
QUEUE_NAME = r"(?:[A-Za-z0-9_-]{1,75}\.fifo|[A-Za-z0-9_-]{1,80})"
QUEUE_NAME_PATTERN = re.compile(QUEUE_NAME)
QUEUE_ARN_PATTERN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sqs:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    rf"(?P<name>{QUEUE_NAME})"
)
# Control characters and white space have no place in a URL (and would end up in logs).
_UNPRINTABLE = re.compile(r"[\x00-\x20\x7f-\x9f]")

# DNS suffix of the SQS endpoint per partition; the URL of a queue is built from it when a
# record names its source queue only by ARN (Lambda's DeadLetterQueueSourceArn).
PARTITION_DNS_SUFFIX = {
    "aws": "amazonaws.com",
    "aws-cn": "amazonaws.com.cn",
    "aws-us-gov": "amazonaws.com",
    "aws-iso": "c2s.ic.gov",
    "aws-iso-b": "sc2s.sgov.gov",
    "aws-iso-e": "cloud.adc-e.uk",
    "aws-iso-f": "csp.hci.ic.gov",
    "aws-eusc": "amazonaws.eu",
}


def queue_url_problem(url: str) -> str | None:
    """Why `url` cannot be an SQS queue URL, or None when it can.

    `http(s)://host/.../<queue name>`: SQS's own URLs and every SQS-compatible endpoint's
    (emulators, brokers) end in the queue's name.
    """
    if _UNPRINTABLE.search(url):
        return "holds white space or control characters"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "is not an http:// or https:// URL"
    name = parts.path.rstrip("/").rsplit("/", 1)[-1]
    if not QUEUE_NAME_PATTERN.fullmatch(name):
        return (
            f"does not end in a queue name (1-80 of A-Z a-z 0-9 - _, FIFO names ending in "
            f".fifo): {name!r}"
        )
    return None


def is_fifo_url(queue_url: str) -> bool:
    """FIFO queue names, and so their URLs, end in `.fifo` (an SQS naming rule)."""
    return queue_url.rstrip("/").endswith(".fifo")
