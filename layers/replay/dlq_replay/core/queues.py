"""Identities: ARNs (`Arn`, the one ARN type, and which ARNs the replay delivers to), queue
names and URLs. One definition of each for the settings, the replay, the deliveries and the
operator CLI, so they all accept exactly what AWS accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
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
    """Why `url` cannot be an SQS queue URL, or None when it can: `http(s)://host/.../<queue
    name>`, as SQS's own and every SQS-compatible endpoint's URLs end in the queue's name."""
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


_ARN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):"
    r"(?P<account>\d{12}|):(?P<resource>\S+)"
)
# A function ARN, with its version or alias (or $LATEST, as destination records name it).
_FUNCTION_ARN = re.compile(
    r"(?P<function>arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64})"
    r"(?::(?P<qualifier>\$LATEST|[A-Za-z0-9_-]{1,128}))?"
)


@dataclass(frozen=True, slots=True)
class Arn:
    """A parsed ARN. For a queue, `name` is its name and `url` its URL."""

    partition: str
    service: str
    region: str
    account: str
    resource: str

    @classmethod
    def parse(cls, text: str) -> Arn:
        """Any ARN with a region (every resource the replay reads or delivers to has one)."""
        match = _ARN.fullmatch(text)
        if match is None or not match["region"]:
            raise ValueError(f"not an ARN with a region: {text!r}")
        return cls(**match.groupdict())

    @classmethod
    def queue(cls, text: str) -> Arn:
        """An SQS queue's ARN, its name as SQS allows queue names."""
        match = QUEUE_ARN_PATTERN.fullmatch(text)
        if match is None:
            raise ValueError(f"not an SQS queue ARN: {text!r}")
        return cls(match["partition"], "sqs", match["region"], match["account"], match["name"])

    @property
    def name(self) -> str:
        return self.resource

    @property
    def is_fifo(self) -> bool:
        return self.resource.endswith(".fifo")

    def url(self, endpoint_url: str | None = None) -> str:
        """A queue's URL: on `endpoint_url` when given (an emulator), else AWS's own endpoint."""
        if endpoint_url:
            return f"{endpoint_url.rstrip('/')}/{self.account}/{self.name}"
        suffix = PARTITION_DNS_SUFFIX.get(self.partition, "amazonaws.com")
        return f"https://sqs.{self.region}.{suffix}/{self.account}/{self.name}"


class TargetService(StrEnum):
    """The services a record can be delivered to, and everything else."""

    LAMBDA = "lambda"
    SQS = "sqs"
    SNS = "sns"
    STATES = "states"
    EVENTS = "events"
    OTHER = "other"


def target_service(text: str) -> TargetService:
    """The service an ARN names, among those the replay delivers to; OTHER for the rest
    (Kinesis, an API destination, a log group, ...), and for text that is no ARN."""
    try:
        arn = Arn.parse(text)
    except ValueError:
        return TargetService.OTHER
    plain = ":" not in arn.resource and "/" not in arn.resource
    found = {
        "lambda": _FUNCTION_ARN.fullmatch(text) is not None,
        "sqs": plain,
        "sns": plain,
        "states": arn.resource.startswith("stateMachine:"),
        "events": arn.resource.startswith("event-bus/"),
    }.get(arn.service, False)
    return TargetService(arn.service) if found else TargetService.OTHER


def is_target_arn(text: str) -> bool:
    """Whether REPLAY_TARGET_ARNS may list it: an ARN of a service the replay delivers to."""
    return target_service(text) is not TargetService.OTHER


def target_allowed(arn: str, allowed: frozenset[str]) -> bool:
    """Listed as is, or a version or alias of a function listed unqualified."""
    if arn in allowed:
        return True
    match = _FUNCTION_ARN.fullmatch(arn)
    return bool(match and match["qualifier"] and match["function"] in allowed)
