"""The operator's view of a deployment: status, peek, redrive and plan (DESIGN.md §7).

Logic only: every function takes boto3 clients (or nothing at all) and returns frozen
dataclasses; parsing options and printing live in `ops_commands`. Two SQS facts shape it:

* `ReceiveMessage` raises a message's receive count, and on a queue with a RedrivePolicy that
  count decides when SQS moves the message on (the DLQ's safety net, the main queue's DLQ).
  Looking at messages therefore spends a budget (`ReceiveBudget`) and stops before it is gone.
* `StartMessageMoveTask` only takes a queue that is some queue's DLQ as its source and moves
  messages unchanged; anything else (a rewritten count, a filter, a limit) is a client-side
  move: send the copy, then delete exactly the originals whose copy was sent.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE, PARK_REASON_ATTRIBUTE, Attribute
from dlq_replay.core.backoff import MAX_SQS_DELAY_SECONDS, BackoffPolicy
from dlq_replay.core.decision import park_reason_of
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.core.queues import QueueArn, is_fifo_url
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE
from dlq_replay.sqs.depth import QueueDepth, queue_depth
from dlq_replay.sqs.sending import (
    MAX_BATCH_ENTRIES,
    BatchSender,
    change_visibility,
    delete_messages,
)

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

# Output names of template.yaml that lead to the queues and the function.
STACK_OUTPUTS: dict[str, str] = {
    "main": "MainQueueUrl",
    "dlq": "DeadLetterQueueUrl",
    "operator": "OperatorQueueUrl",
    "function": "ReplayFunctionName",
}
QUEUE_ROLES = ("main", "dlq", "operator")
# `--filter-reason none`: messages without a park reason (SQS's own safety net moved them).
NO_REASON = "none"
MAX_MOVE_RATE = 500  # StartMessageMoveTask's MaxNumberOfMessagesPerSecond limit
_FINAL_MOVE_STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED"})


class OpsError(Exception):
    """An operation that cannot go on; one line for the user. `usage` marks a bad request."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


# -- finding the queues --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deployment:
    """Where the queues and the function are: from `--stack` outputs and explicit options."""

    main: str | None = None
    dlq: str | None = None
    operator: str | None = None
    function_name: str | None = None
    stack: str | None = None

    def queue(self, role: str) -> str | None:
        return {"main": self.main, "dlq": self.dlq, "operator": self.operator}.get(role)

    def known_queues(self) -> list[tuple[str, str]]:
        return [(role, url) for role in QUEUE_ROLES if (url := self.queue(role))]


def stack_outputs(cfn: CloudFormationClient, stack_name: str) -> dict[str, str]:
    """Every output of a deployed stack, by output key (missing stack: ClientError)."""
    stacks = cfn.describe_stacks(StackName=stack_name)["Stacks"]
    if not stacks:
        raise OpsError(f"stack {stack_name} not found")
    return {
        str(output["OutputKey"]): str(output["OutputValue"])
        for output in stacks[0].get("Outputs", [])
        if "OutputKey" in output and "OutputValue" in output
    }


def discover(
    explicit: Deployment, cfn: CloudFormationClient | None = None, stack: str | None = None
) -> Deployment:
    """The deployment: stack outputs (when a stack is named), explicit values on top."""
    found: dict[str, str] = {}
    if stack:
        if cfn is None:
            raise ValueError("a CloudFormation client is needed to read a stack")
        outputs = stack_outputs(cfn, stack)
        found = {role: outputs[key] for role, key in STACK_OUTPUTS.items() if outputs.get(key)}
        if not any(role in found for role in QUEUE_ROLES):
            names = ", ".join(STACK_OUTPUTS.values())
            raise OpsError(f"stack {stack} has none of the outputs {names}: is it sqs-dlq-replay?")
    return Deployment(
        main=explicit.main or found.get("main"),
        dlq=explicit.dlq or found.get("dlq"),
        operator=explicit.operator or found.get("operator"),
        function_name=explicit.function_name or found.get("function"),
        stack=stack,
    )


def function_environment(lam: LambdaClient, function_name: str) -> dict[str, str]:
    """The replay function's environment variables (its settings, DESIGN.md §2)."""
    config = lam.get_function_configuration(FunctionName=function_name)
    return dict(config.get("Environment", {}).get("Variables", {}))


# -- queues -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RedrivePolicy:
    target_arn: str
    max_receive_count: int

    @property
    def target_name(self) -> str:
        return self.target_arn.rsplit(":", 1)[-1]


@dataclass(frozen=True, slots=True)
class QueueInfo:
    url: str
    arn: str
    fifo: bool
    visibility_timeout: int
    redrive: RedrivePolicy | None

    @property
    def name(self) -> str:
        return self.arn.rsplit(":", 1)[-1]


def queue_info(sqs: SQSClient, url: str) -> QueueInfo:
    """A queue's identity and the settings the operator tools care about."""
    found = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["QueueArn", "FifoQueue", "VisibilityTimeout", "RedrivePolicy"],
    )["Attributes"]
    redrive: RedrivePolicy | None = None
    if found.get("RedrivePolicy"):
        policy = json.loads(found["RedrivePolicy"])
        redrive = RedrivePolicy(str(policy["deadLetterTargetArn"]), int(policy["maxReceiveCount"]))
    return QueueInfo(
        url=url,
        arn=found.get("QueueArn", ""),
        fifo=found.get("FifoQueue", "false").lower() == "true" or is_fifo_url(url),
        visibility_timeout=int(found.get("VisibilityTimeout", "30")),
        redrive=redrive,
    )


def dead_letter_sources(sqs: SQSClient, url: str) -> list[str]:
    """URLs of the queues whose RedrivePolicy names this queue as their DLQ."""
    sources: list[str] = []
    for page in sqs.get_paginator("list_dead_letter_source_queues").paginate(QueueUrl=url):
        sources.extend(page.get("queueUrls", []))
    return sources


# -- status -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueStatus:
    role: str
    queue: QueueInfo
    depth: QueueDepth
    oldest_age_seconds: float | None  # CloudWatch's ApproximateAgeOfOldestMessage, if reported


@dataclass(frozen=True, slots=True)
class EventSourceStatus:
    function_name: str
    found: bool  # a mapping from the DLQ to the function exists
    state: str | None = None  # Enabled, Disabled, Creating, Enabling, Disabling, ...
    uuid: str | None = None
    batch_size: int | None = None
    maximum_concurrency: int | None = None
    last_result: str | None = None

    @property
    def enabled(self) -> bool:
        return self.state == "Enabled"


@dataclass(frozen=True, slots=True)
class Status:
    queues: tuple[QueueStatus, ...]
    event_source: EventSourceStatus | None
    age_note: str | None = None  # why ages are missing, when CloudWatch could not be read


def status(
    sqs: SQSClient,
    deployment: Deployment,
    *,
    cloudwatch: Any = None,
    lam: LambdaClient | None = None,
    now: datetime | None = None,
) -> Status:
    """Depth, age of the oldest message and redrive wiring of each known queue, and the
    state of the replay function's event source on the DLQ (when the function is known)."""
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
    event_source: EventSourceStatus | None = None
    if lam is not None and deployment.function_name:
        dlq = next((info for role, info in infos if role == "dlq"), None)
        event_source = event_source_status(lam, deployment.function_name, dlq.arn if dlq else None)
    return Status(queues, event_source, note)


def oldest_message_ages(
    cloudwatch: Any, queue_names: Sequence[str], *, now: datetime | None = None
) -> tuple[dict[str, float], str | None]:
    """The latest ApproximateAgeOfOldestMessage of each queue (CloudWatch, 1-minute periods).

    SQS reports the age only as a CloudWatch metric, a few minutes behind; a queue without a
    recent datapoint is left out. A failure to read CloudWatch is a note, not an error.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    end = now or datetime.now(UTC)
    queries = [
        {
            "Id": f"q{index}",
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/SQS",
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Dimensions": [{"Name": "QueueName", "Value": name}],
                },
                "Period": 60,
                "Stat": "Maximum",
            },
        }
        for index, name in enumerate(queue_names)
    ]
    try:
        response = cloudwatch.get_metric_data(
            MetricDataQueries=queries,
            StartTime=end - timedelta(minutes=15),
            EndTime=end,
            ScanBy="TimestampDescending",
        )
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "error")
        return {}, f"age of the oldest message unavailable: CloudWatch said {code}"
    except BotoCoreError as error:
        return {}, f"age of the oldest message unavailable: {type(error).__name__}"
    ages: dict[str, float] = {}
    for result in response.get("MetricDataResults", []):
        index = int(str(result.get("Id", "q-1"))[1:])
        values = list(result.get("Values", []))
        if values and 0 <= index < len(queue_names):
            ages[queue_names[index]] = float(values[0])
    return ages, None


def event_source_status(
    lam: LambdaClient, function_name: str, dlq_arn: str | None
) -> EventSourceStatus:
    """The function's event source mapping on the DLQ (the first one when the DLQ is unknown)."""
    mappings: list[Any] = []
    for page in lam.get_paginator("list_event_source_mappings").paginate(
        FunctionName=function_name
    ):
        mappings.extend(page.get("EventSourceMappings", []))
    chosen = next(
        (m for m in mappings if dlq_arn is None or str(m.get("EventSourceArn", "")) == dlq_arn),
        None,
    )
    if chosen is None:
        return EventSourceStatus(function_name, found=False)
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


# -- the receive budget -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceiveBudget:
    """The receive-count rule for looking at a queue with a RedrivePolicy.

    SQS moves a message on the receive that would take its receive count past
    `max_receive_count`, and shows a count only by receiving the message. A message arrives on
    a DLQ with the count it had on its source queue (`arrival_count`, the largest
    maxReceiveCount among the source queues), so a fresh one has
    `max_receive_count - arrival_count - 1` receives left after one look. The tools
    * refuse to start when even a fresh message would keep fewer than `reserve` receives,
    * stop before their next receive once a message they saw keeps `reserve` or fewer,
    * and never receive a message in flight (one the replay is holding for a long delay).
    """

    max_receive_count: int
    arrival_count: int = 0
    reserve: int = 1
    target_name: str = ""

    @property
    def fresh_left(self) -> int:
        """Receives a message fresh on this queue keeps after one more receive."""
        return self.max_receive_count - self.arrival_count - 1

    @property
    def exhausted(self) -> bool:
        return self.fresh_left < self.reserve

    def left(self, receive_count: int) -> int:
        """Receives still delivering the message, given its count after the latest receive."""
        return max(0, self.max_receive_count - receive_count)

    def stop_after(self, receive_count: int) -> bool:
        return self.left(receive_count) <= self.reserve


def receive_budget(sqs: SQSClient, queue: QueueInfo, reserve: int = 1) -> ReceiveBudget | None:
    """The budget of a queue with a RedrivePolicy; None when receives cannot move messages."""
    if queue.redrive is None:
        return None
    arrival = 0
    for source_url in dead_letter_sources(sqs, queue.url):
        source = queue_info(sqs, source_url)
        if source.redrive is not None:
            arrival = max(arrival, source.redrive.max_receive_count)
    return ReceiveBudget(
        queue.redrive.max_receive_count, arrival, reserve, queue.redrive.target_name
    )


def budget_refusal(budget: ReceiveBudget, queue: QueueInfo) -> str:
    return (
        f"{queue.name}: maxReceiveCount {budget.max_receive_count} leaves no receive to spare "
        f"(a message arrives with {budget.arrival_count} receives, one look leaves "
        f"{budget.fresh_left}, the reserve is {budget.reserve}); receiving could move messages "
        f"to {budget.target_name}"
    )


# -- receiving ----------------------------------------------------------------------------------


def receive(
    sqs: SQSClient, url: str, count: int, *, visibility_timeout: int, wait_seconds: int
) -> list[MessageTypeDef]:
    return sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=max(1, min(MAX_BATCH_ENTRIES, count)),
        VisibilityTimeout=visibility_timeout,
        WaitTimeSeconds=wait_seconds,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", [])


def release(sqs: SQSClient, url: str, receipt_handles: Iterable[str]) -> int:
    """Make received messages visible again at once; returns how many SQS refused.

    A refusal loses nothing: such a message comes back when its visibility timeout ends.
    """
    return len(change_visibility(sqs, url, [(handle, 0) for handle in receipt_handles]))


def receive_count_of(message: MessageTypeDef) -> int:
    return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))


# -- peek -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PeekedMessage:
    message_id: str
    replay_count: int | None  # None: the count attribute holds no valid count
    raw_count: str | None
    park_reason: str | None
    group_id: str | None
    attribute_names: tuple[str, ...]
    sent_at: datetime | None
    age_seconds: float | None
    receive_count: int  # after this peek
    receives_left: int | None  # before SQS moves it on (queues with a RedrivePolicy)
    body: str | None  # only when asked for
    source_arn: str | None = None


@dataclass(frozen=True, slots=True)
class PeekResult:
    queue: QueueInfo
    messages: tuple[PeekedMessage, ...]
    budget: ReceiveBudget | None
    stopped: str | None = None  # why the peek stopped before its limit
    not_released: int = 0  # messages SQS refused to make visible again


def peek(
    sqs: SQSClient,
    url: str,
    *,
    limit: int = 10,
    body: bool = False,
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE,
    reserve: int = 1,
    wait_seconds: int = 1,
    hide_seconds: int = 30,
    now: Callable[[], float] = time.time,
) -> PeekResult:
    """Look at up to `limit` messages without consuming them.

    Messages are received (hidden for `hide_seconds` at most, so a crash cannot keep them
    away for long), and made visible again as soon as the peek has them all: a message is
    never returned twice and so never received twice by one peek. On a queue with a
    RedrivePolicy the receive budget applies; the first receive takes a single message.
    """
    queue = queue_info(sqs, url)
    budget = receive_budget(sqs, queue, reserve)
    if budget is not None and budget.exhausted:
        raise OpsError(budget_refusal(budget, queue))
    seen: dict[str, MessageTypeDef] = {}
    stopped: str | None = None
    refused = 0
    try:
        while len(seen) < limit:
            want = 1 if budget is not None and not seen else limit - len(seen)
            batch = receive(
                sqs, url, want, visibility_timeout=hide_seconds, wait_seconds=wait_seconds
            )
            fresh = [m for m in batch if m["MessageId"] not in seen]
            for message in batch:
                seen[message["MessageId"]] = message
            if not fresh:
                break
            if budget is not None and any(budget.stop_after(receive_count_of(m)) for m in fresh):
                stopped = (
                    f"stopped: a message has {budget.reserve} or fewer receives left before "
                    f"SQS moves it to {budget.target_name}"
                )
                break
    finally:
        refused = release(sqs, url, [m["ReceiptHandle"] for m in seen.values()])
    messages = tuple(
        _peeked(m, count_attribute, budget, body, now()) for m in list(seen.values())[:limit]
    )
    return PeekResult(queue, messages, budget, stopped, refused)


def _peeked(
    message: MessageTypeDef,
    count_attribute: str,
    budget: ReceiveBudget | None,
    with_body: bool,
    now: float,
) -> PeekedMessage:
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    values = parsed.values
    system = message.get("Attributes", {})
    count_value = values.get(count_attribute)
    sent_ms = system.get("SentTimestamp")
    sent_at = datetime.fromtimestamp(int(sent_ms) / 1000, UTC) if sent_ms else None
    received = receive_count_of(message)
    return PeekedMessage(
        message_id=message["MessageId"],
        replay_count=attributes.parse_count(count_value),
        raw_count=count_value.string_value if count_value is not None else None,
        park_reason=park_reason_of(message.get("Body", ""), values),
        group_id=system.get("MessageGroupId"),
        attribute_names=tuple(sorted([*values, *parsed.dropped])),
        sent_at=sent_at,
        age_seconds=max(0.0, now - int(sent_ms) / 1000) if sent_ms else None,
        receive_count=received,
        receives_left=budget.left(received) if budget is not None else None,
        body=message.get("Body", "") if with_body else None,
        source_arn=system.get("DeadLetterQueueSourceArn"),
    )


# -- redrive ----------------------------------------------------------------------------------


class MoveMode(StrEnum):
    NATIVE = "native"  # SQS's StartMessageMoveTask
    CLIENT = "client"  # receive, send copies, delete what was sent


class SkipReason(StrEnum):
    FILTERED = "filtered"  # its park reason is not one asked for
    NO_SOURCE = "no-source-queue"  # --to source, and SQS recorded no source queue


class FailReason(StrEnum):
    UNCOPYABLE = "uncopyable-attribute"  # a list-valued attribute SQS will not take on send
    MISSING_GROUP = "missing-group-id"  # a FIFO destination and no MessageGroupId
    DELETE = "delete-failed"  # the copy was sent but the original stayed (a rerun resends it)


@dataclass(frozen=True, slots=True)
class RedriveRequest:
    """What to move where, and how; the queues are already resolved."""

    source: QueueInfo
    destination: QueueInfo | None  # None: back to each message's source queue
    limit: int | None = None
    rate: float | None = None  # messages per second
    reset_count: bool = False
    reasons: frozenset[str] = frozenset()  # empty: every message
    dry_run: bool = False
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE
    hide_seconds: int = 120
    wait_seconds: int = 1
    reserve: int = 1

    @property
    def rewrites(self) -> bool:
        return self.reset_count or bool(self.reasons) or self.limit is not None


def choose_mode(
    sqs: SQSClient, request: RedriveRequest, *, client_side: bool
) -> tuple[MoveMode, str]:
    """Native move where SQS offers it, else client-side; with the reason, for the user."""
    if client_side:
        return MoveMode.CLIENT, "client-side move asked for"
    if request.rewrites:
        asked = [
            name
            for name, on in (
                ("--reset-count", request.reset_count),
                ("--filter-reason", bool(request.reasons)),
                ("--limit", request.limit is not None),
            )
            if on
        ]
        return MoveMode.CLIENT, f"{', '.join(asked)}: only a client-side move can do that"
    if not dead_letter_sources(sqs, request.source.url):
        return (
            MoveMode.CLIENT,
            f"{request.source.name} is no queue's DLQ, so StartMessageMoveTask does not take it",
        )
    return MoveMode.NATIVE, f"{request.source.name} is a DLQ: SQS's own move task applies"


@dataclass(frozen=True, slots=True)
class RedriveTally:
    """What a client-side move did; `moved + failed + skipped == seen` always holds.

    In a dry run `moved` counts the messages that would have been moved, and nothing moves.
    """

    seen: int = 0
    moved: int = 0
    failed: int = 0
    skipped: int = 0
    dry_run: bool = False
    failures: Mapping[str, int] = field(default_factory=dict)
    skips: Mapping[str, int] = field(default_factory=dict)
    stopped: str | None = None
    not_released: int = 0

    @property
    def adds_up(self) -> bool:
        return self.moved + self.failed + self.skipped == self.seen


def redrive(
    sqs: SQSClient,
    request: RedriveRequest,
    *,
    on_progress: Callable[[RedriveTally], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RedriveTally:
    """Move messages client-side, in batches of up to 10.

    For each batch: send the copies with one SendMessageBatch per destination, then delete
    exactly the originals whose copy was sent. Messages not moved (skipped, failed, or all of
    them in a dry run) stay hidden until the run ends, so no message is looked at twice, and
    are then made visible at once, also when the run is interrupted. A crash between a send
    and its delete leaves the original in place: a rerun sends it again (a duplicate on a
    standard queue; on FIFO the same deduplication id within SQS's 5-minute window).
    """
    budget = receive_budget(sqs, request.source, request.reserve)
    if budget is not None and budget.exhausted:
        raise OpsError(budget_refusal(budget, request.source))
    return _ClientMove(sqs, request, budget, clock, sleep).run(on_progress)


class _ClientMove:
    """The state of one client-side move; snapshots of it go out as RedriveTally."""

    def __init__(
        self,
        sqs: SQSClient,
        request: RedriveRequest,
        budget: ReceiveBudget | None,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self.sqs = sqs
        self.request = request
        self.budget = budget
        self.clock = clock
        self.sleep = sleep
        self.sender = BatchSender(sqs)
        self.seen: set[str] = set()
        self.in_hand: dict[str, str] = {}  # message id -> receipt handle, not deleted yet
        self.moved = 0
        self.failures: Counter[str] = Counter()
        self.skips: Counter[str] = Counter()
        self.stopped: str | None = None
        self.not_released = 0
        self.source_urls: dict[str, str | None] = {}
        self.started = clock()
        self.sent_total = 0
        rate = request.rate
        self.batch_size = (
            MAX_BATCH_ENTRIES if rate is None else max(1, min(MAX_BATCH_ENTRIES, math.floor(rate)))
        )

    def tally(self) -> RedriveTally:
        return RedriveTally(
            seen=len(self.seen),
            moved=self.moved,
            failed=sum(self.failures.values()),
            skipped=sum(self.skips.values()),
            dry_run=self.request.dry_run,
            failures=dict(self.failures),
            skips=dict(self.skips),
            stopped=self.stopped,
            not_released=self.not_released,
        )

    def run(self, on_progress: Callable[[RedriveTally], None] | None) -> RedriveTally:
        try:
            while (want := self._wanted()) > 0:
                fresh = self._receive(want)
                if not fresh:
                    break
                self._handle(fresh)
                if on_progress is not None:
                    on_progress(self.tally())
                if self._budget_spent(fresh):
                    break
        finally:
            self.not_released = release(self.sqs, self.request.source.url, self.in_hand.values())
        return self.tally()

    def _wanted(self) -> int:
        """How many messages the next receive asks for (0: the limit is reached)."""
        if self.request.limit is None:
            return self.batch_size
        handled = self.moved + sum(self.failures.values())
        return min(self.batch_size, self.request.limit - handled)

    def _receive(self, want: int) -> list[MessageTypeDef]:
        request = self.request
        batch = receive(
            self.sqs,
            request.source.url,
            want,
            visibility_timeout=request.hide_seconds,
            wait_seconds=request.wait_seconds,
        )
        fresh: list[MessageTypeDef] = []
        for message in batch:
            # A message seen before came back after its hide time: keep its new handle only.
            self.in_hand[message["MessageId"]] = message["ReceiptHandle"]
            if message["MessageId"] not in self.seen:
                self.seen.add(message["MessageId"])
                fresh.append(message)
        return fresh

    def _handle(self, fresh: Sequence[MessageTypeDef]) -> None:
        copies: list[tuple[MessageTypeDef, OutboundMessage]] = []
        for message in fresh:
            outcome = plan_copy(self.sqs, message, self.request, self.source_urls)
            if isinstance(outcome, SkipReason):
                self.skips[outcome] += 1
            elif isinstance(outcome, FailReason):
                self.failures[outcome] += 1
            elif self.request.dry_run:
                self.moved += 1
            else:
                copies.append((message, outcome))
        if copies:
            self._move(copies)

    def _move(self, copies: Sequence[tuple[MessageTypeDef, OutboundMessage]]) -> None:
        if self.request.rate is not None:
            pause = self.started + self.sent_total / self.request.rate - self.clock()
            if pause > 0:
                self.sleep(pause)
        failed = self.sender.send([copy for _, copy in copies])
        self.sent_total += len(copies)
        for failure in failed.values():
            self.failures[failure.code or "send-failed"] += 1
        sent = [message for message, _ in copies if message["MessageId"] not in failed]
        not_deleted = set(delete_messages(self.sqs, self.request.source.url, sent))
        for message in sent:
            if message["MessageId"] in not_deleted:
                self.failures[FailReason.DELETE] += 1
            else:
                self.moved += 1
                self.in_hand.pop(message["MessageId"], None)

    def _budget_spent(self, fresh: Sequence[MessageTypeDef]) -> bool:
        budget = self.budget
        if budget is None:
            return False
        kept = [m for m in fresh if m["MessageId"] in self.in_hand]
        if any(budget.stop_after(receive_count_of(m)) for m in kept):
            self.stopped = (
                f"stopped: a message left in {self.request.source.name} has {budget.reserve} "
                f"or fewer receives before SQS moves it to {budget.target_name}"
            )
            return True
        return False


def plan_copy(
    sqs: SQSClient,
    message: MessageTypeDef,
    request: RedriveRequest,
    source_urls: dict[str, str | None],
) -> OutboundMessage | SkipReason | FailReason:
    """The copy of one received message, or why it is skipped or cannot be copied.

    Body and every attribute byte for byte, except the park reason and the not-before
    attribute (never on a message for the main queue) and, with `reset_count`, the count.
    """
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    values = parsed.values
    reason_text = park_reason_of(message.get("Body", ""), values) or NO_REASON
    if request.reasons and reason_text not in request.reasons:
        return SkipReason.FILTERED
    system = message.get("Attributes", {})
    if request.destination is not None:
        destination = request.destination.url
    else:
        source_arn = system.get("DeadLetterQueueSourceArn")
        found = _source_url(sqs, source_arn, source_urls) if source_arn else None
        if found is None:
            return SkipReason.NO_SOURCE
        destination = found
    if parsed.dropped:
        return FailReason.UNCOPYABLE
    group = system.get("MessageGroupId")
    fifo = is_fifo_url(destination)
    if fifo and not group:
        return FailReason.MISSING_GROUP
    dropped = {PARK_REASON_ATTRIBUTE, NOT_BEFORE_ATTRIBUTE}
    if request.reset_count:
        dropped.add(request.count_attribute)
    carried: dict[str, Attribute] = {k: v for k, v in values.items() if k not in dropped}
    return OutboundMessage(
        record_id=message["MessageId"],
        queue_url=destination,
        body=message.get("Body", ""),
        attributes=carried,
        message_group_id=group,
        # Deterministic: a rerun after a crash between send and delete is deduplicated by SQS
        # within its 5-minute window; fresh, because each parked message has its own id.
        deduplication_id=f"{message['MessageId']}-redrive" if fifo else None,
        trace_header=system.get("AWSTraceHeader"),
    )


def _source_url(sqs: SQSClient, arn: str, cache: dict[str, str | None]) -> str | None:
    from botocore.exceptions import ClientError

    if arn not in cache:
        try:
            parsed = QueueArn.parse(arn)
            cache[arn] = sqs.get_queue_url(
                QueueName=parsed.name, QueueOwnerAWSAccountId=parsed.account
            )["QueueUrl"]
        except (ValueError, ClientError):
            cache[arn] = None
    return cache[arn]


# -- the native move task -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MoveTask:
    status: str  # RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED
    moved: int
    to_move: int | None
    handle: str | None = None
    failure_reason: str | None = None
    source_arn: str | None = None
    destination_arn: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in _FINAL_MOVE_STATES

    @property
    def succeeded(self) -> bool:
        return self.status == "COMPLETED"


def start_move_task(
    sqs: SQSClient, source_arn: str, destination_arn: str | None, rate: float | None
) -> str:
    """Start SQS's own move task; returns its handle. No destination: back to the sources."""
    params: dict[str, Any] = {"SourceArn": source_arn}
    if destination_arn is not None:
        params["DestinationArn"] = destination_arn
    if rate is not None:
        params["MaxNumberOfMessagesPerSecond"] = max(1, min(MAX_MOVE_RATE, math.floor(rate)))
    return sqs.start_message_move_task(**params)["TaskHandle"]


def latest_move_task(sqs: SQSClient, source_arn: str) -> MoveTask | None:
    """The most recent move task of a source queue (only one can run at a time)."""
    results = sqs.list_message_move_tasks(SourceArn=source_arn, MaxResults=1).get("Results", [])
    if not results:
        return None
    entry = results[0]
    to_move = entry.get("ApproximateNumberOfMessagesToMove")
    return MoveTask(
        status=str(entry.get("Status", "UNKNOWN")),
        moved=int(entry.get("ApproximateNumberOfMessagesMoved", 0)),
        to_move=int(to_move) if to_move is not None else None,
        handle=entry.get("TaskHandle"),
        failure_reason=entry.get("FailureReason"),
        source_arn=entry.get("SourceArn"),
        destination_arn=entry.get("DestinationArn"),
    )


def wait_move_task(
    sqs: SQSClient,
    source_arn: str,
    *,
    poll_seconds: float = 5.0,
    on_progress: Callable[[MoveTask], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> MoveTask:
    """Poll ListMessageMoveTasks until the latest task of the source queue has finished."""
    while True:
        task = latest_move_task(sqs, source_arn)
        if task is None:
            raise OpsError(f"no message move task found for {source_arn}")
        if on_progress is not None:
            on_progress(task)
        if task.finished:
            return task
        sleep(poll_seconds)


# -- plan -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttemptPlan:
    attempt: int
    ceiling: int
    low: int
    high: int
    median: int
    p95: int
    mean: float
    dlq_share: float  # share of delays longer than the destination's DelaySeconds (§4 path)
    typical_total: float  # sum of the means of attempts 1..n (the median of their sum)
    worst_total: int  # sum of the ceilings of attempts 1..n


@dataclass(frozen=True, slots=True)
class BackoffPlan:
    policy: BackoffPolicy
    max_attempts: int
    fifo: bool
    attempts: tuple[AttemptPlan, ...]

    @property
    def typical_total(self) -> float:
        return self.attempts[-1].typical_total if self.attempts else 0.0

    @property
    def worst_total(self) -> int:
        return self.attempts[-1].worst_total if self.attempts else 0

    @property
    def best_total(self) -> int:
        return sum(a.low for a in self.attempts)


def quantile(low: int, high: int, percent: int) -> int:
    """The percent-quantile of the discrete uniform distribution on the integers low..high.

    The smallest value v with P(X <= v) >= percent/100: with k = high - low + 1 values,
    low + ceil(percent k / 100) - 1, in integers (no float rounding at the edges).
    """
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in 1..100, got {percent}")
    count = high - low + 1
    return low + -(-percent * count // 100) - 1


def backoff_plan(policy: BackoffPolicy, max_attempts: int, *, fifo: bool = False) -> BackoffPlan:
    """The delay schedule of DESIGN.md §3, attempt by attempt, and the time until parking.

    A message is replayed `max_attempts` times, each after a delay drawn uniformly from
    `policy.bounds(n)` (whole seconds); the failure after the last replay parks it, with no
    further delay. The delays are independent and each is symmetric around its mean, so the
    median of the total is the sum of the means; the worst case is the sum of the ceilings.
    Not included: the time each attempt spends failing on the main queue (visibility timeout
    times its maxReceiveCount) and the event source's polling.
    """
    limit = 0 if fifo else MAX_SQS_DELAY_SECONDS
    plans: list[AttemptPlan] = []
    typical = 0.0
    worst = 0
    for attempt in range(1, max_attempts + 1):
        low, high = policy.bounds(attempt)
        mean = (low + high) / 2
        typical += mean
        worst += high
        plans.append(
            AttemptPlan(
                attempt=attempt,
                ceiling=policy.ceiling(attempt),
                low=low,
                high=high,
                median=quantile(low, high, 50),
                p95=quantile(low, high, 95),
                mean=mean,
                dlq_share=max(0, high - max(low, limit + 1) + 1) / (high - low + 1),
                typical_total=typical,
                worst_total=worst,
            )
        )
    return BackoffPlan(policy, max_attempts, fifo, tuple(plans))
