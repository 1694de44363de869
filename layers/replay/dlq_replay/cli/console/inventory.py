"""The overview: every dead-letter queue the console knows (one some queue's RedrivePolicy
names, and the stack's DLQ and operator queue whatever they hold), sorted by backlog, with
`status`'s counters and replay state; the oldest age is CloudWatch's or, where it has none, the
snapshot's. Nothing here receives a message.

One read costs a bounded number of calls whatever the region holds: ListQueues once per 1,000
queues, one GetQueueAttributes per queue (identity, redrive policy and counters together),
READ_WORKERS of them in flight at once; CloudWatch once per 500 DLQs.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.queues import arn_name, is_fifo_url
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.pause import breaker_status
from dlq_replay.ops.queueinfo import DEFAULT_RETENTION_SECONDS, QueueInfo, RedrivePolicy
from dlq_replay.ops.stack import Deployment
from dlq_replay.ops.status import event_source_status
from dlq_replay.sqs.depth import QueueDepth, oldest_message_ages

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

# GetQueueAttributes calls in flight at once: 500 queues in about 63 round trips, well within
# the SQS client's connection pool (32) and SQS's request rate.
READ_WORKERS = 8
# ListQueues' largest page (SQS returns at most 1,000 URLs, and a NextToken only when asked
# for a page size).
LIST_PAGE_SIZE = 1000
# GetMetricData takes at most 500 queries per call.
METRIC_QUERIES = 500

_ATTRIBUTES: list[QueueAttributeNameType] = [
    "QueueArn",
    "FifoQueue",
    "VisibilityTimeout",
    "RedrivePolicy",
    "MessageRetentionPeriod",
    # The counters last (`queue_of` reads them as such).
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]
_GONE = ("NonExistentQueue", "QueueDoesNotExist")
_ROLES = {"dlq": "stack DLQ", "operator": "operator queue"}  # by Deployment.known_queues' role


@dataclass(frozen=True, slots=True)
class DlqRow:
    name: str
    url: str
    arn: str
    roles: tuple[str, ...]  # "stack DLQ", "operator queue", "DLQ"
    visible: int
    in_flight: int
    delayed: int
    oldest_age: float | None
    sources: tuple[str, ...]  # queues whose RedrivePolicy names this one
    moves_to: str | None  # its own RedrivePolicy's target (the safety net)
    max_receive_count: int | None
    kinds: Mapping[str, int] = field(default_factory=dict)  # from the snapshot, when read

    @property
    def backlog(self) -> int:
        return self.visible + self.in_flight + self.delayed


@dataclass(frozen=True, slots=True)
class Overview:
    rows: tuple[DlqRow, ...]
    stack: str | None
    replay: str | None  # running, paused, outage breaker open, ... (with a stack)
    operator_depth: int | None
    notes: tuple[str, ...] = ()
    read_at: float = 0.0


class Queue(NamedTuple):
    """One queue as one GetQueueAttributes answer describes it."""

    info: QueueInfo
    depth: QueueDepth


def queue_of(url: str, attributes: Mapping[str, object]) -> Queue | None:
    """A queue from its attributes, which whoever owns it wrote: an unreadable RedrivePolicy is
    no policy, an unreadable setting its default and an unreadable counter 0, so one odd queue
    never hides the others. None without an ARN (nothing to name the queue by)."""
    arn = attributes.get("QueueArn")
    if not isinstance(arn, str) or not arn_name(arn):
        return None
    fifo = attributes.get("FifoQueue")
    info = QueueInfo(
        url=url,
        arn=arn,
        fifo=(isinstance(fifo, str) and fifo.lower() == "true") or is_fifo_url(url),
        visibility_timeout=_number(attributes.get("VisibilityTimeout"), 30),
        redrive=redrive_policy(attributes.get("RedrivePolicy")),
        retention_seconds=_number(
            attributes.get("MessageRetentionPeriod"), DEFAULT_RETENTION_SECONDS
        ),
    )
    visible, in_flight, delayed = (_number(attributes.get(name), 0) for name in _ATTRIBUTES[5:])
    return Queue(info, QueueDepth(visible, in_flight, delayed))


def redrive_policy(text: object) -> RedrivePolicy | None:
    """A RedrivePolicy attribute's target and receive count; None when absent or malformed."""
    if not isinstance(text, str):
        return None
    try:  # not JSON, not an object, or without either key
        policy = json.loads(text)
        target, count = policy["deadLetterTargetArn"], policy["maxReceiveCount"]
    except (ValueError, TypeError, KeyError):
        return None
    if not isinstance(target, str) or not target or isinstance(count, bool):
        return None
    if isinstance(count, str):
        count = _number(count, -1)
    elif isinstance(count, float) and count.is_integer():
        count = int(count)
    if not isinstance(count, int) or count < 0:
        return None
    return RedrivePolicy(target, count)


def _number(value: object, default: int) -> int:
    """A counter or setting as SQS sends it (decimal digits), else `default`."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    return default


def read_queues(
    sqs: SQSClient, urls: list[str], notes: list[str], workers: int = READ_WORKERS
) -> dict[str, Queue]:
    """Each queue's attributes, one call per queue, `workers` at a time; by ARN. A queue
    deleted meanwhile is left out; one SQS refused to describe is left out with a note. The
    first failure to reach SQS at all (BotoCoreError) ends the read: the calls not yet made
    are not made, each would wait out its own retries."""
    refused: dict[str, int] = {}
    lock = threading.Lock()
    unreachable = threading.Event()

    def one(url: str) -> Queue | None:
        if unreachable.is_set():
            return None
        try:
            found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=_ATTRIBUTES)
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", "error"))
            if not any(gone in code for gone in _GONE):
                with lock:
                    refused[code] = refused.get(code, 0) + 1
            return None
        except BotoCoreError:
            unreachable.set()
            raise
        return queue_of(url, {str(k): v for k, v in found.get("Attributes", {}).items()})

    with ThreadPoolExecutor(max(1, min(workers, len(urls))), thread_name_prefix="overview") as pool:
        queues = list(pool.map(one, urls))
    notes.extend(f"{n} queue(s) not shown: SQS said {code}" for code, n in refused.items())
    return {queue.info.arn: queue for queue in queues if queue is not None}


def read_overview(
    sqs: SQSClient,
    client: Callable[[str], Any],
    deployment: Deployment,
    kinds: Callable[[str], tuple[Mapping[str, int], float | None]],
    workers: int = READ_WORKERS,
) -> Overview:
    """Every DLQ (of the stack, or of the region without one), sorted by backlog, read with the
    console's clients (made once: a read every 5 s makes none); `kinds(url)`: a queue's kinds
    and oldest age from its snapshot (empty and None when not read)."""
    known = dict(deployment.known_queues())
    pages = sqs.get_paginator("list_queues").paginate(PaginationConfig={"PageSize": LIST_PAGE_SIZE})
    urls = [url for page in pages for url in page.get("QueueUrls", [])]
    urls += [url for url in known.values() if url not in urls]
    notes: list[str] = []
    queues = read_queues(sqs, urls, notes, workers)
    sources: dict[str, list[str]] = {}
    for queue in queues.values():
        if queue.info.redrive is not None:
            sources.setdefault(queue.info.redrive.target_arn, []).append(queue.info.name)
    roles_by_url = {url: role for role, url in known.items()}
    stack_names = {q.info.name for q in queues.values() if q.info.url in roles_by_url}

    def listed(info: QueueInfo) -> bool:
        if roles_by_url.get(info.url) in {"dlq", "operator"}:
            return True
        named_by = sources.get(info.arn, [])
        return bool(named_by) and (not deployment.stack or bool(stack_names & set(named_by)))

    chosen = [queue for queue in queues.values() if listed(queue.info)]
    ages = _ages(client, [queue.info.name for queue in chosen], notes)

    def row(queue: Queue) -> DlqRow:
        info, depth = queue.info, queue.depth
        counts, snapshot_age = kinds(info.url)
        return DlqRow(
            name=info.name,
            url=info.url,
            arn=info.arn,
            roles=(_ROLES.get(roles_by_url.get(info.url, ""), "DLQ"),),
            visible=depth.visible,
            in_flight=depth.in_flight,
            delayed=depth.delayed,
            oldest_age=ages.get(info.name, snapshot_age),
            sources=tuple(sorted(sources.get(info.arn, []))),
            moves_to=info.redrive.target_name if info.redrive else None,
            max_receive_count=info.redrive.max_receive_count if info.redrive else None,
            kinds=counts,
        )

    rows = sorted(map(row, chosen), key=lambda r: (-r.backlog, r.name))
    operator = next((r.backlog for r in rows if "operator queue" in r.roles), None)
    dlq = next((q.info.arn for q in queues.values() if q.info.url == deployment.dlq), None)
    replay = _replay_state(client, deployment.function_name, dlq, notes)
    return Overview(tuple(rows), deployment.stack, replay, operator, tuple(notes), time.time())


def _ages(client: Callable[[str], Any], names: list[str], notes: list[str]) -> dict[str, float]:
    """CloudWatch's oldest ages, one call per METRIC_QUERIES queues; a note when none."""
    ages: dict[str, float] = {}
    try:
        cloudwatch = client("cloudwatch")
        for start in range(0, len(names), METRIC_QUERIES):
            found, note = oldest_message_ages(cloudwatch, names[start : start + METRIC_QUERIES])
            ages.update(found)
            if note:
                notes.append(note)
                break
    except (ClientError, BotoCoreError) as error:
        notes.append(f"oldest ages from the snapshots only (CloudWatch: {type(error).__name__})")
    return ages


def _replay_state(
    client: Callable[[str], Any], function: str | None, dlq_arn: str | None, notes: list[str]
) -> str | None:
    """`status`'s answer in a word or three: running, paused, outage breaker open."""
    if not function:
        return None
    try:
        lam = client("lambda")
        source = event_source_status(lam, function, dlq_arn)
        breaker = breaker_status(lam, client("dynamodb"), function)
    except (ClientError, BotoCoreError, OpsError) as error:
        notes.append(f"replay state unknown ({type(error).__name__})")
        return "unknown"
    if breaker.phase == "open":
        return "outage breaker open (paused itself)"
    if breaker.phase == "half-open":
        return "outage breaker half-open (probing)"
    if not source.found:
        return "no event source on the DLQ"
    return "running" if source.enabled else f"paused ({source.state})"
