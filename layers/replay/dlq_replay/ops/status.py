"""`status`: depth and oldest-message age of each queue, and the replay's event source; with
`sample`, the kinds of record the DLQ holds (a peek: receives within the budget)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dlq_replay.core.kinds import RecordKind
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.peek import PeekedMessage, PeekRequest, peek
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.ops.receiving import ALL_KINDS
from dlq_replay.ops.stack import Deployment
from dlq_replay.sqs.depth import QueueDepth, oldest_message_ages, queue_depth, seconds_until_expiry

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient


EXPIRY_WARNING_SECONDS = 86_400  # warn when the oldest message expires within a day


@dataclass(frozen=True, slots=True)
class QueueStatus:
    role: str
    queue: QueueInfo
    depth: QueueDepth
    oldest_age_seconds: float | None  # CloudWatch's ApproximateAgeOfOldestMessage, if reported

    @property
    def expires_in_seconds(self) -> float | None:
        """Time until SQS deletes the oldest message; None when CloudWatch reported no age."""
        return seconds_until_expiry(self.queue.retention_seconds, self.oldest_age_seconds)

    @property
    def expiry_warning(self) -> bool:
        return expiry_warning(self.expires_in_seconds)


def expiry_warning(expires_in_seconds: float | None) -> bool:
    """Known and under EXPIRY_WARNING_SECONDS (exactly a day left is not yet a warning)."""
    return expires_in_seconds is not None and expires_in_seconds < EXPIRY_WARNING_SECONDS


@dataclass(frozen=True, slots=True)
class EventSourceStatus:
    function_name: str
    found: bool  # a mapping from the DLQ to the function exists
    function_missing: bool = False  # there is no such function at all
    state: str | None = None  # Enabled, Disabled, Creating, Enabling, Disabling, ...
    uuid: str | None = None
    batch_size: int | None = None
    maximum_concurrency: int | None = None
    last_result: str | None = None

    @property
    def enabled(self) -> bool:
        return self.state == "Enabled"


@dataclass(frozen=True, slots=True)
class KindCounts:
    """Records looked at (`sampled`), by kind, by (kind, target) and by the service's error."""

    sampled: int = 0
    kinds: Mapping[str, int] = field(default_factory=dict)
    targets: Mapping[str, int] = field(default_factory=dict)  # "<kind> -> <target or ->"
    errors: Mapping[str, int] = field(default_factory=dict)  # error code (or message)
    stopped: str | None = None  # why fewer were looked at (the receive budget)


def kind_counts(records: Sequence[PeekedMessage], stopped: str | None = None) -> KindCounts:
    kinds = Counter(r.kind for r in records)
    targets = Counter(
        f"{r.kind} -> {r.target_arn or '-'}" for r in records if r.kind != RecordKind.SQS
    )
    errors = Counter(e for r in records if (e := r.error_code or r.error_message))
    return KindCounts(len(records), dict(kinds), dict(targets), dict(errors), stopped)


@dataclass(frozen=True, slots=True)
class Status:
    queues: tuple[QueueStatus, ...]
    event_source: EventSourceStatus | None
    age_note: str | None = None  # why ages are missing, when CloudWatch could not be read
    kinds: KindCounts | None = None  # only when asked for: a sample is a receive

    @property
    def expiring(self) -> tuple[QueueStatus, ...]:
        """The queues whose oldest message SQS deletes within EXPIRY_WARNING_SECONDS."""
        return tuple(queue for queue in self.queues if queue.expiry_warning)


def status(
    sqs: SQSClient,
    deployment: Deployment,
    *,
    cloudwatch: Any = None,
    lam: LambdaClient | None = None,
    now: datetime | None = None,
    sample: int = 0,
    replay_targets: frozenset[str] = frozenset(),
    accepted_kinds: frozenset[RecordKind] = ALL_KINDS,
) -> Status:
    """Each known queue and the replay's event source on the DLQ (when the function is known);
    with `sample`, up to that many of the DLQ's records by kind: a peek, a receive of each."""
    known = deployment.known_queues()
    if not known:
        raise OpsError(
            "no queues: pass --stack NAME or --main-queue-url/--dlq-url/--operator-queue-url",
            usage=True,
        )
    infos = [(role, queue_info(sqs, url)) for role, url in known]
    ages: dict[str, float] = {}
    note: str | None = None
    if cloudwatch is not None:
        ages, note = oldest_message_ages(cloudwatch, [info.name for _, info in infos], now=now)
    queues = tuple(
        QueueStatus(role, info, queue_depth(sqs, info.url), ages.get(info.name))
        for role, info in infos
    )
    dlq = next((info for role, info in infos if role == "dlq"), None)
    event_source: EventSourceStatus | None = None
    if lam is not None and deployment.function_name:
        event_source = event_source_status(lam, deployment.function_name, dlq.arn if dlq else None)
    kinds = None
    if sample:
        if dlq is None:
            raise OpsError("--sample looks at the DLQ: pass --stack NAME or --dlq-url", usage=True)
        request = PeekRequest(
            dlq, sample, replay_targets=replay_targets, accepted_kinds=accepted_kinds
        )
        result = peek(sqs, request)
        kinds = kind_counts(result.messages, result.stopped)
    return Status(queues, event_source, note, kinds)


def _function_exists(lam: LambdaClient, function_name: str) -> bool:
    """False only when Lambda says there is no such function (a refused look is no answer)."""
    from botocore.exceptions import ClientError

    try:
        lam.get_function_configuration(FunctionName=function_name)
    except ClientError as error:
        return error.response.get("Error", {}).get("Code") != "ResourceNotFoundException"
    return True


def event_source_status(
    lam: LambdaClient, function_name: str, dlq_arn: str | None
) -> EventSourceStatus:
    """The function's event source mapping on the DLQ (the first one when the DLQ is unknown)."""
    pages = lam.get_paginator("list_event_source_mappings").paginate(FunctionName=function_name)
    mappings = [m for page in pages for m in page.get("EventSourceMappings", [])]
    chosen = next(
        (m for m in mappings if dlq_arn is None or str(m.get("EventSourceArn", "")) == dlq_arn),
        None,
    )
    if chosen is None:
        return EventSourceStatus(
            function_name, found=False, function_missing=not _function_exists(lam, function_name)
        )
    scaling = chosen.get("ScalingConfig") or {}
    return EventSourceStatus(
        function_name,
        found=True,
        state=chosen.get("State"),
        uuid=chosen.get("UUID"),
        batch_size=chosen.get("BatchSize"),
        maximum_concurrency=scaling.get("MaximumConcurrency"),
        last_result=chosen.get("LastProcessingResult"),
    )
