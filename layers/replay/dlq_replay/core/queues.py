"""Identities: ARNs, queue names and URLs, FIFO-ness: the one home of each fact, so everyone
reads a name, a region or `.fifo` the same way (tests/unit/test_one_home.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

# SQS queue names: 1-80 of A-Z a-z 0-9 - _, the 80 including a FIFO queue's `.fifo`.
QUEUE_NAME = r"(?:[A-Za-z0-9_-]{1,75}\.fifo|[A-Za-z0-9_-]{1,80})"
QUEUE_NAME_PATTERN = re.compile(QUEUE_NAME)
QUEUE_ARN_PATTERN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sqs:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    rf"(?P<name>{QUEUE_NAME})"
)
# SNS topic ARNs: 1-256 of A-Z a-z 0-9 - _ as the name, FIFO topics ending in .fifo.
SNS_TOPIC_ARN_PATTERN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sns:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    r"(?P<name>[A-Za-z0-9_-]{1,251}(?:\.fifo)?|[A-Za-z0-9_-]{252,256})"
)
_REGION_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_UNPRINTABLE = re.compile(r"[\x00-\x20\x7f-\x9f]")

# DNS suffix of the SQS endpoint per partition, for a queue's URL built from its ARN.
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
    """Why `url` cannot be an SQS queue URL (`http(s)://host/.../<queue name>`), or None."""
    if _UNPRINTABLE.search(url):
        return "holds white space or control characters"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "is not an http:// or https:// URL"
    name = queue_name(parts.path)
    if not QUEUE_NAME_PATTERN.fullmatch(name):
        return (
            f"does not end in a queue name (1-80 of A-Z a-z 0-9 - _, FIFO names ending in "
            f".fifo): {name!r}"
        )
    return None


def queue_name(url: str) -> str:
    """A queue URL's last path segment, a trailing slash ignored (unchecked)."""
    return url.rstrip("/").rsplit("/", 1)[-1]


def url_region(url: str) -> str | None:
    """The region of `https://sqs.<region>.amazonaws.com[.cn]/...`; None for other text."""
    region, dot, rest = url.removeprefix("https://sqs.").partition(".")
    found = url.startswith("https://sqs.") and dot and rest.startswith("amazonaws.com")
    return region if found and region and _REGION_CHARACTERS.issuperset(region) else None


def is_fifo_name(name: str) -> bool:
    """FIFO queue and topic names end in `.fifo` (an SQS and SNS naming rule)."""
    return name.endswith(".fifo")


def is_fifo_url(queue_url: str) -> bool:
    return is_fifo_name(queue_url.rstrip("/"))


def is_fifo_arn(arn: str) -> bool:
    """A FIFO queue's or topic's ARN: it ends in the name. Unchecked: any text a record names."""
    return is_fifo_name(arn)


# ARN-shaped text others send, read without `Arn.parse`'s checks (which would refuse what the
# replay has always accepted).


def arn_name(arn: str) -> str:
    """A queue's or topic's name: what follows the ARN's last colon (the whole text if none)."""
    return arn.rsplit(":", 1)[-1]


def arn_resource(arn: str) -> str:
    """What follows the fifth colon (the last field of text with fewer)."""
    return arn.split(":", 5)[-1]


def arn_account(arn: str) -> str | None:
    """The account field of text with all six ARN fields; None for text with fewer."""
    fields = arn.split(":", 5)
    return fields[4] if len(fields) == 6 else None


def arn_region(arn: str) -> str:
    """The region field; ValueError for text with fewer than four fields."""
    fields = arn.split(":", 4)
    if len(fields) < 4:
        raise ValueError(f"not an ARN: {arn!r}")
    return fields[3]


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
        return is_fifo_name(self.resource)

    def sibling(self, resource: str) -> str:
        """The ARN of another resource of this service, region and account."""
        return f"arn:{self.partition}:{self.service}:{self.region}:{self.account}:{resource}"

    def url(self, endpoint_url: str | None = None) -> str:
        """A queue's URL: on `endpoint_url` when given (an emulator), else AWS's own endpoint."""
        if endpoint_url:
            return f"{endpoint_url.rstrip('/')}/{self.account}/{self.name}"
        suffix = PARTITION_DNS_SUFFIX.get(self.partition, "amazonaws.com")
        return f"https://sqs.{self.region}.{suffix}/{self.account}/{self.name}"


_RULE_PREFIX = "rule/"


def rule_location(rule_arn: str) -> tuple[str, str, str | None]:
    """(region, rule name, event bus name or None for the default bus) of `...:rule/[<bus
    name>/]<rule name>`: a bus name may hold slashes (a partner bus), a rule name may not."""
    arn = Arn.parse(rule_arn)
    bus, _, name = arn.resource.removeprefix(_RULE_PREFIX).rpartition("/")
    if arn.service != "events" or not arn.resource.startswith(_RULE_PREFIX) or not name:
        raise ValueError(f"not an EventBridge rule ARN: {rule_arn!r}")
    return arn.region, name, bus or None


class TargetService(StrEnum):
    LAMBDA = "lambda"
    SQS = "sqs"
    SNS = "sns"
    STATES = "states"
    EVENTS = "events"
    OTHER = "other"


def target_service(text: str) -> TargetService:
    """The service an ARN names, among those the replay delivers to; else OTHER."""
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
