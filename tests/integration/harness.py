"""What the integration tests need around moto's SQS: queues wired like the template wires them,
messages pushed through a real redrive into the DLQ, Lambda's event built from what SQS returns,
and recorders for the requests the replayer makes.

The replayer always gets its own client; `Sqs` (the test's view of the queues) uses another, so
a request log or a Stubber on the replayer's client sees the replayer's requests and no others.
"""

from __future__ import annotations

import copy
import importlib
import io
import json
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.settings import Settings
from dlq_replay.engine.replayer import Clock, Replayer
from dlq_replay.engine.report import Outcome
from dlq_replay.local.eventsource import lambda_event
from dlq_replay.ops.receiving import drained_batches
from dlq_replay.sqs.depth import queue_depth
from samtranslator.yaml_helper import yaml_parse

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from botocore.model import OperationModel
    from dlq_replay.core.backoff import RandomSource
    from dlq_replay.notify.sns import SnsClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, MessageTypeDef

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
ACCOUNT_ID = "123456789012"  # moto's default account
COUNT = "sqs-dlq-replay-nb"
NOT_BEFORE = "dlq-replay-not-before"
PARK_REASON = "dlq-replay-park-reason"
# The DLQ's own safety net (DLQ -> operator queue) must outlast the main queue's maxReceiveCount
# plus the holds of the long-delay path (docs/design.md, 'The safety net').
DLQ_MAX_RECEIVE_COUNT = 10


@dataclass(frozen=True, slots=True)
class Queue:
    url: str
    arn: str

    @property
    def name(self) -> str:
        return self.arn.rsplit(":", 1)[1]

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")


@dataclass(frozen=True, slots=True)
class ReplayQueues:
    """main -> DLQ (real RedrivePolicy) -> operator queue (the safety net)."""

    main: Queue
    dlq: Queue
    operator: Queue
    max_receive_count: int = 1


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message a producer sends to a source queue."""

    body: str
    attributes: Mapping[str, MessageAttributeValueTypeDef] = field(default_factory=dict)
    group_id: str | None = None
    dedup_id: str | None = None
    trace_header: str | None = None


def string(value: str, data_type: str = "String") -> MessageAttributeValueTypeDef:
    return {"DataType": data_type, "StringValue": value}


def number(value: str | int, data_type: str = "Number") -> MessageAttributeValueTypeDef:
    return {"DataType": data_type, "StringValue": str(value)}


def binary(value: bytes, data_type: str = "Binary") -> MessageAttributeValueTypeDef:
    return {"DataType": data_type, "BinaryValue": value}


def attributes_of(message: MessageTypeDef) -> dict[str, dict[str, Any]]:
    """A received message's attributes as plain dicts, for exact comparisons."""
    return {name: dict(value) for name, value in message.get("MessageAttributes", {}).items()}


def system_attributes_of(message: MessageTypeDef) -> dict[str, str]:
    return {str(name): value for name, value in message.get("Attributes", {}).items()}


class Sqs:
    """The test's own view of SQS: queues, producers, a real redrive, and draining."""

    def __init__(self, client: SQSClient) -> None:
        self.client = client

    def create_queue(
        self, name: str, attributes: Mapping[QueueAttributeNameType, str] | None = None
    ) -> Queue:
        url = self.client.create_queue(QueueName=name, Attributes=dict(attributes or {}))[
            "QueueUrl"
        ]
        arn = self.client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        return Queue(url, arn)

    def create_source_queue(
        self, name: str, dlq: Queue, *, max_receive_count: int = 1, fifo: bool = False
    ) -> Queue:
        """A queue whose RedrivePolicy sends what it cannot deliver to `dlq`."""
        return self.create_queue(
            name, {**_fifo_attributes(fifo), "RedrivePolicy": _redrive(dlq, max_receive_count)}
        )

    def create_replay_queues(
        self, prefix: str = "orders", *, fifo: bool = False, max_receive_count: int = 1
    ) -> ReplayQueues:
        suffix = ".fifo" if fifo else ""
        operator = self.create_queue(f"{prefix}-operator{suffix}", _fifo_attributes(fifo))
        dlq = self.create_source_queue(
            f"{prefix}-dlq{suffix}", operator, max_receive_count=DLQ_MAX_RECEIVE_COUNT, fifo=fifo
        )
        main = self.create_source_queue(
            f"{prefix}-main{suffix}", dlq, max_receive_count=max_receive_count, fifo=fifo
        )
        return ReplayQueues(main, dlq, operator, max_receive_count)

    def send(self, queue: Queue, message: Outgoing) -> str:
        """SendMessage, the one call with which moto keeps AWSTraceHeader."""
        params: dict[str, Any] = {"QueueUrl": queue.url, "MessageBody": message.body}
        if message.attributes:
            params["MessageAttributes"] = dict(message.attributes)
        if message.group_id is not None:
            params["MessageGroupId"] = message.group_id
        if queue.fifo:
            params["MessageDeduplicationId"] = message.dedup_id or uuid.uuid4().hex
        if message.trace_header is not None:
            params["MessageSystemAttributes"] = {
                "AWSTraceHeader": {"DataType": "String", "StringValue": message.trace_header}
            }
        return self.client.send_message(**params)["MessageId"]

    def dead_letter(
        self,
        source: Queue,
        dlq: Queue,
        messages: Sequence[Outgoing],
        *,
        max_receive_count: int = 1,
    ) -> list[MessageTypeDef]:
        """Send `messages` to `source`, let a consumer fail them until SQS's own redrive moves
        them into `dlq`, then receive them from the DLQ as Lambda's event source would (every
        message and system attribute). The DLQ messages stay in flight, like Lambda's."""
        # One message at a time, so the DLQ holds them in the order they were sent (moto's
        # redrive of several messages of one FIFO group at once moves them out of order).
        for message in messages:
            self.send(source, message)
            for _ in range(max_receive_count + 2):
                # A failing consumer: receives and never deletes; VisibilityTimeout=0 returns
                # the message at once. Past maxReceiveCount, the next receive moves it.
                received = self.client.receive_message(
                    QueueUrl=source.url, MaxNumberOfMessages=1, VisibilityTimeout=0
                )
                if not received.get("Messages"):
                    break
            assert self.total(source) == 0, "the redrive left a message in the source queue"
        dead: list[MessageTypeDef] = []
        while len(dead) < len(messages):
            batch = self.client.receive_message(
                QueueUrl=dlq.url,
                MaxNumberOfMessages=min(10, len(messages) - len(dead)),
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            ).get("Messages", [])
            if not batch:
                break
            dead.extend(batch)
        assert [m["Body"] for m in dead] == [m.body for m in messages]
        return dead

    def dead_letter_event(
        self, queues: ReplayQueues, messages: Sequence[Outgoing]
    ) -> dict[str, Any]:
        """The Lambda event for `messages` after a real redrive main -> DLQ."""
        dead = self.dead_letter(
            queues.main, queues.dlq, messages, max_receive_count=queues.max_receive_count
        )
        return lambda_event(dead, queues.dlq.arn, REGION)

    def receive_event(self, queue: Queue, *, visibility_timeout: int = 30) -> dict[str, Any]:
        """One poll of `queue` as Lambda's event source does it, as the event it delivers."""
        received = self.client.receive_message(
            QueueUrl=queue.url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=visibility_timeout,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        return lambda_event(received, queue.arn, REGION)

    def drain(self, queue: Queue) -> list[MessageTypeDef]:
        """Receive and delete every message visible now, in the order SQS hands them out."""
        return drain_within(self.client, queue.url, batches=100)

    def total(self, queue: Queue) -> int:
        """Every message the queue holds: visible, in flight and delayed."""
        return queue_depth(self.client, queue.url).total

    def end_delays(self, queue: Queue) -> None:
        """Make every delayed message of `queue` deliverable now, as if its DelaySeconds had
        passed. moto serves delays in real time and the long-delay path writes copies with
        DelaySeconds=900; no test waits 15 minutes. The one reach into moto's internals."""
        from moto.sqs.models import sqs_backends

        for message in sqs_backends[ACCOUNT_ID][REGION].get_queue(queue.name)._messages:
            message.delayed_until = 0


def drain_within(client: SQSClient, queue_url: str, *, batches: int) -> list[MessageTypeDef]:
    """`dlq_replay.ops.receiving.drain`, failing the test when `batches` receives do not empty the
    queue (something keeps refilling it)."""
    drained: list[MessageTypeDef] = []
    for count, batch in enumerate(drained_batches(client, queue_url), start=1):
        drained.extend(batch)
        if count == batches:
            raise AssertionError(f"{queue_url} did not drain")
    return drained


def _fifo_attributes(fifo: bool) -> dict[QueueAttributeNameType, str]:
    return {"FifoQueue": "true", "ContentBasedDeduplication": "false"} if fifo else {}


def _redrive(dlq: Queue, max_receive_count: int) -> str:
    return json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": str(max_receive_count)})


@dataclass(frozen=True, slots=True)
class Call:
    operation: str
    params: dict[str, Any]


class RequestLog:
    """Every request a client makes, as the caller passed it (botocore event hook)."""

    def __init__(self, client: SQSClient) -> None:
        self.calls: list[Call] = []
        client.meta.events.register("provide-client-params.sqs", self._record)

    def _record(self, params: dict[str, Any], model: OperationModel, **_: Any) -> None:
        self.calls.append(Call(model.name, copy.deepcopy(params)))

    def operations(self) -> list[str]:
        return [call.operation for call in self.calls]

    def of(self, operation: str) -> list[dict[str, Any]]:
        return [call.params for call in self.calls if call.operation == operation]

    def sent_entries(self, queue: Queue) -> list[dict[str, Any]]:
        """Every SendMessageBatch entry addressed to `queue`, in request order."""
        return [
            entry
            for params in self.of("SendMessageBatch")
            if params["QueueUrl"] == queue.url
            for entry in params["Entries"]
        ]


# SQS's SendMessage reference (MessageBody; a String attribute value "has the same
# restrictions"): #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
# Written out here again, so the tests do not take the code's word for it.
SQS_CHARACTERS = re.compile("[\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")


def valid_for_sqs(text: str) -> bool:
    return SQS_CHARACTERS.fullmatch(text) is not None


class CharacterCheck:
    """Judges every SendMessageBatch entry a client sends by SQS's character rules (moto does
    not): its body, and each attribute's name, type and string value."""

    def __init__(self, client: SQSClient) -> None:
        self.refused: list[str] = []
        self.details: list[str] = []  # every dlq-replay-error value sent
        client.meta.events.register("provide-client-params.sqs.SendMessageBatch", self._check)

    def _check(self, params: dict[str, Any], **_: Any) -> None:
        for entry in params["Entries"]:
            texts = [entry["MessageBody"]]
            for name, value in entry.get("MessageAttributes", {}).items():
                texts += [name, value["DataType"], value.get("StringValue", "")]
                if name == "dlq-replay-error":
                    self.details.append(value["StringValue"])
            self.refused += [text for text in texts if not valid_for_sqs(text)]


@dataclass
class LogLine:
    level: str
    message: str
    extra: dict[str, Any]


class RecordingLog:
    """A `dlq_replay.core.log.Log` that keeps every line, for assertions."""

    def __init__(self) -> None:
        self.lines: list[LogLine] = []

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(LogLine("debug", msg, dict(kwargs.get("extra") or {})))

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(LogLine("info", msg, dict(kwargs.get("extra") or {})))

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(LogLine("warning", msg, dict(kwargs.get("extra") or {})))

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(LogLine("error", msg, dict(kwargs.get("extra") or {})))

    def for_message(self, message_id: str) -> list[LogLine]:
        return [line for line in self.lines if line.extra.get("message_id") == message_id]


class FakeClock:
    """An injected clock (epoch seconds) that only moves when told."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class LowestRandom:
    """A `RandomSource` that always draws the lowest delay: 0 with full jitter."""

    def randint(self, a: int, b: int) -> int:
        return a


class FakeContext(LambdaContext):
    """The Lambda context the Powertools decorators read."""

    def __init__(self) -> None:
        self._function_name = "sqs-dlq-replay"
        self._function_version = "$LATEST"
        self._invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:replay"
        self._memory_limit_in_mb = 256
        self._aws_request_id = "2d5e3a4c-0000-4000-8000-000000000001"
        self._log_group_name = "/aws/lambda/sqs-dlq-replay"
        self._log_stream_name = "2026/01/01/[$LATEST]0123456789abcdef"


def failed_ids(response: Mapping[str, Any]) -> list[str]:
    """The itemIdentifiers of a partial-batch response, in order."""
    return [item["itemIdentifier"] for item in response["batchItemFailures"]]


def record_ids(event: Mapping[str, Any]) -> list[str]:
    return [record["messageId"] for record in event["Records"]]


class ReplayFactory:
    """Builds `LambdaReplay(Replayer(...))` from environment-style settings."""

    def __init__(
        self, client: SQSClient, log: RecordingLog, endpoint_url: str | None = None
    ) -> None:
        self._client = client
        self._log = log
        # A Lambda environment would carry AWS_ENDPOINT_URL_SQS; these settings do not read it.
        self._endpoint_url = endpoint_url

    def __call__(
        self,
        queues: ReplayQueues,
        env: Mapping[str, str | None] | None = None,
        *,
        client: SQSClient | None = None,
        clock: Clock | None = None,
        rng: RandomSource | None = None,
        sns: SnsClient | None = None,
        metrics: Metrics | None = None,
        on_outcome: Callable[[Outcome], None] | None = None,
    ) -> LambdaReplay:
        """Defaults: the queues' main and operator URLs, full jitter drawing 0 (no delay), so a
        replay is visible at once. A None value in `env` removes the variable."""
        merged: dict[str, str | None] = {
            "AWS_ENDPOINT_URL_SQS": self._endpoint_url,
            "MAIN_QUEUE_URL": queues.main.url,
            "OPERATOR_QUEUE_URL": queues.operator.url,
            "BACKOFF_BASE_SECONDS": "1",
            **(env or {}),
        }
        settings = Settings.from_env({k: v for k, v in merged.items() if v is not None})
        replayer = Replayer(
            settings,
            client or self._client,
            logger=self._log,
            clock=clock or time.time,
            rng=rng or LowestRandom(),
            sns=sns,
            metrics=metrics,
            on_outcome=on_outcome,
        )
        return LambdaReplay(replayer)


class AppHandle:
    """`functions/replay/app.py` as Lambda imports it, with typed access for the tests."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def handler(self, event: Mapping[str, Any]) -> PartialItemFailureResponse:
        handler: Callable[[dict[str, Any], FakeContext], PartialItemFailureResponse] = (
            self._module.handler
        )
        return handler(dict(event), FakeContext())

    def reimport(self) -> ModuleType:
        """Import the module again, as Lambda's init does in a new execution environment."""
        self._module = importlib.reload(self._module)
        return self._module

    def reset(self) -> None:
        """Forget the cached replay, settings and clients, as a new execution environment."""
        for cached in (self._module._replay, self._module._sqs, self._module._session):
            cached.cache_clear()

    @property
    def logger(self) -> Logger:
        logger: Logger = self._module.logger
        return logger


def breaker_table(dynamodb: Any, name: str) -> None:
    """The table as template.yaml's OutageBreakerTable defines it (keys, billing, TTL)."""
    template = yaml_parse((ROOT / "template.yaml").read_text(encoding="utf-8"))
    properties = template["Resources"]["OutageBreakerTable"]["Properties"]
    dynamodb.create_table(
        TableName=name,
        BillingMode=properties["BillingMode"],
        AttributeDefinitions=properties["AttributeDefinitions"],
        KeySchema=properties["KeySchema"],
    )
    ttl = properties["TimeToLiveSpecification"]
    dynamodb.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
    )


def moto_function(name: str, environment: Mapping[str, str] | None = None) -> str:
    """A Lambda function in moto (which accepts Invoke without running code), with a role of
    its own: what a replay target or the stack's replay function needs to exist. Its ARN."""
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    role = boto3.client("iam", region_name=REGION).create_role(
        RoleName=f"{name}-role", AssumeRolePolicyDocument="{}"
    )["Role"]["Arn"]
    function = boto3.client("lambda", region_name=REGION).create_function(
        FunctionName=name,
        Runtime="python3.13",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": code.getvalue()},
        Environment={"Variables": dict(environment or {})},
    )
    return str(function["FunctionArn"])
