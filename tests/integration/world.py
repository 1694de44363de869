"""A small AWS world on moto for the handler's property tests, and a recorder of everything the
replay asks of it.

The handler is built as `functions/replay/app.py` builds it (`LambdaReplay.from_env` over one
boto3 session), so the tests see the package only through that entry. Every request any client
of that session makes is recorded at botocore's boundary (`before-parameter-build`: the
parameters as the caller passed them; `after-call`: whether the service took them), so the
tests judge what was sent, not what the package says it sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from dlq_replay.aws_lambda.replay import LambdaReplay
from moto import mock_aws

from integration.harness import breaker_table, moto_function

REGION = "us-east-1"
ACCOUNT = "123456789012"
COUNT = "sqs-dlq-replay-nb"
NOT_BEFORE = "dlq-replay-not-before"
PARK_REASON = "dlq-replay-park-reason"
KIND = "dlq-replay-kind"
TARGET = "dlq-replay-target"
FIFO = ".fifo"
STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:props-gone"
BUS_ARN = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"

# docs/design.md, "What happens to one record": the only reasons an SQS record is parked for.
SQS_PARK_REASONS = frozenset(
    {
        "max-attempts",
        "invalid-count",
        "attribute-limit",
        "missing-group-id",
        "unknown-source",
        "rejected",
        "max-age",
    }
)
# The calls that deliver something somewhere (every other call reads, or keeps the ledger).
DELIVERIES = frozenset(
    {
        ("lambda", "Invoke"),
        ("lambda", "InvokeAsync"),
        ("lambda", "InvokeWithResponseStream"),
        ("sns", "Publish"),
        ("sns", "PublishBatch"),
        ("sfn", "StartExecution"),
        ("sfn", "StartSyncExecution"),
        ("eventbridge", "PutEvents"),
        ("sqs", "SendMessage"),
        ("sqs", "SendMessageBatch"),
    }
)


@dataclass(frozen=True, slots=True)
class Call:
    """One request: the service's id (botocore's endpoint prefix), operation, parameters as
    passed, and the HTTP status of its answer (None: no answer was recorded)."""

    service: str
    operation: str
    params: dict[str, Any]
    status: int | None
    parsed: Mapping[str, Any]

    @property
    def ok(self) -> bool:
        return self.status is not None and self.status < 300


class CallLog:
    """Every request of every client made from `session` after this is made."""

    def __init__(self, session: boto3.Session) -> None:
        self.calls: list[Call] = []
        session.events.register("before-parameter-build", self._params)
        session.events.register("after-call", self._answered)

    def _params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["props.params"] = json.loads(json.dumps(params, default=_bytes_json))

    def _answered(
        self, http_response: Any, parsed: Mapping[str, Any], model: Any, context: Any, **_: Any
    ) -> None:
        service = model.service_model.endpoint_prefix
        self.calls.append(
            Call(
                "sfn" if service == "states" else "eventbridge" if service == "events" else service,
                model.name,
                context.get("props.params", {}),
                getattr(http_response, "status_code", None),
                parsed,
            )
        )

    def clear(self) -> None:
        self.calls.clear()


def _bytes_json(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return {"bytes": value.hex()}
    raise TypeError(repr(value))


@dataclass(frozen=True, slots=True)
class Sent:
    """One SQS message the replay wrote, taken by SQS."""

    queue_url: str
    body: str
    attributes: dict[str, Any]


@dataclass
class Observed:
    """What one invocation did, read from its requests and its answer."""

    response: PartialItemFailureResponse | None
    raised: BaseException | None
    calls: list[Call]
    sent: list[Sent] = field(default_factory=list)  # SQS messages taken, every queue
    delivered: list[Call] = field(default_factory=list)  # non-SQS deliveries taken
    held: list[str] = field(default_factory=list)  # receipt handles hidden

    @property
    def failed(self) -> list[str]:
        assert self.response is not None
        return [str(item["itemIdentifier"]) for item in self.response["batchItemFailures"]]


def observe(
    response: PartialItemFailureResponse | None, error: BaseException | None, calls: Sequence[Call]
) -> Observed:
    seen = Observed(response, error, list(calls))
    for call in calls:
        if call.service == "sqs" and call.operation == "SendMessageBatch":
            taken = {entry["Id"] for entry in call.parsed.get("Successful", [])}
            seen.sent += [
                Sent(call.params["QueueUrl"], e["MessageBody"], e.get("MessageAttributes", {}))
                for e in call.params["Entries"]
                if call.ok and e["Id"] in taken
            ]
        elif call.service == "sqs" and call.operation == "SendMessage" and call.ok:
            p = call.params
            seen.sent.append(Sent(p["QueueUrl"], p["MessageBody"], p.get("MessageAttributes", {})))
        elif call.service == "sqs" and call.operation == "ChangeMessageVisibility":
            seen.held.append(call.params["ReceiptHandle"])
        elif call.service == "sqs" and call.operation == "ChangeMessageVisibilityBatch":
            seen.held += [entry["ReceiptHandle"] for entry in call.params["Entries"]]
        elif (call.service, call.operation) in DELIVERIES and call.ok:
            seen.delivered += [call] * _taken(call)
    return seen


def _taken(call: Call) -> int:
    """How many deliveries a call that succeeded made: one, or each entry a batch call's
    service took (PutEvents and PublishBatch may carry several records)."""
    if call.operation == "PutEvents":
        return len(call.params["Entries"]) - int(call.parsed.get("FailedEntryCount", 0))
    if call.operation == "PublishBatch":
        return len(call.parsed.get("Successful", []))
    return 1


@dataclass(frozen=True, slots=True)
class World:
    """The queues, and the targets a record may name (some exist, some are allowed)."""

    dlq_arn: str
    dlq_url: str
    main_url: str
    operator_url: str
    target_queue_arn: str
    target_queue_url: str
    function_arn: str
    topic_arn: str
    state_machine_arn: str
    bus_arn: str
    rule_arn: str
    table: str

    @property
    def allowed_targets(self) -> tuple[str, ...]:
        """REPLAY_TARGET_ARNS: the function (unqualified), the queue, the topic, the state
        machine (which does not exist: its deliveries are refused) and the default bus."""
        return (
            self.function_arn,
            self.target_queue_arn,
            self.topic_arn,
            self.state_machine_arn,
            self.bus_arn,
        )

    @property
    def own_queue_urls(self) -> frozenset[str]:
        """The stack's queues, standard and FIFO."""
        urls = (self.dlq_url, self.main_url, self.operator_url)
        return frozenset({*urls, *(f"{url}{FIFO}" for url in urls)})

    def environment(self, kind: str, *, fifo: bool = False) -> dict[str, str]:
        suffix = FIFO if fifo else ""
        env = {
            "MAIN_QUEUE_URL": self.main_url + suffix,
            "OPERATOR_QUEUE_URL": self.operator_url + suffix,
            "BACKOFF_BASE_SECONDS": "1",
            "BACKOFF_CAP_SECONDS": "2000",  # some delays take the long-delay path
            "BACKOFF_MULTIPLIER": "30",
            "DLQ_KIND": kind,
        }
        if kind != "sqs":
            env["REPLAY_TARGET_ARNS"] = ",".join(self.allowed_targets)
            env["INVOCATION_LEDGER_TABLE"] = self.table
        return env


@contextmanager
def moto_world() -> Iterator[World]:
    """Queues, a function moto accepts invocations of (it runs no code), a topic, a rule with
    a queue target, and the ledger's table, on an in-process moto."""
    with mock_aws(config={"lambda": {"use_docker": False}}):
        sqs = boto3.client("sqs", region_name=REGION)

        def queue(name: str) -> tuple[str, str]:
            url = sqs.create_queue(QueueName=name)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
            return url, arn["Attributes"]["QueueArn"]

        for name in ("props-dlq", "props-main", "props-operator"):  # and the FIFO stack
            sqs.create_queue(QueueName=f"{name}{FIFO}", Attributes={"FifoQueue": "true"})
        dlq_url, dlq_arn = queue("props-dlq")
        main_url, _ = queue("props-main")
        operator_url, _ = queue("props-operator")
        target_url, target_arn = queue("props-target")
        function_arn = moto_function("props-fn")
        role = f"arn:aws:iam::{ACCOUNT}:role/props-fn-role"  # moto_function made it
        topic_arn = boto3.client("sns", region_name=REGION).create_topic(Name="props-topic")[
            "TopicArn"
        ]
        events = boto3.client("events", region_name=REGION)
        rule_arn = events.put_rule(Name="props-rule", EventPattern='{"source":["props"]}')[
            "RuleArn"
        ]
        events.put_targets(
            Rule="props-rule",
            Targets=[
                {"Id": "queue", "Arn": target_arn},
                {"Id": "fn", "Arn": function_arn},
                {"Id": "topic", "Arn": topic_arn},
                {"Id": "machine", "Arn": STATE_MACHINE_ARN, "RoleArn": role},
                {"Id": "bus", "Arn": BUS_ARN, "RoleArn": role},
                # In the rule, not in REPLAY_TARGET_ARNS.
                {"Id": "other", "Arn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:someone-elses"},
            ],
        )
        breaker_table(boto3.client("dynamodb", region_name=REGION), "props-ledger")
        yield World(
            dlq_arn=dlq_arn,
            dlq_url=dlq_url,
            main_url=main_url,
            operator_url=operator_url,
            target_queue_arn=target_arn,
            target_queue_url=target_url,
            function_arn=function_arn,
            topic_arn=topic_arn,
            state_machine_arn=STATE_MACHINE_ARN,
            bus_arn=BUS_ARN,
            rule_arn=rule_arn,
            table="props-ledger",
        )


class Handler:
    """The replay as the Lambda function builds it for `DLQ_KIND=kind`, and its call log."""

    def __init__(self, world: World, kind: str, *, fifo: bool = False) -> None:
        """`fifo`: the FIFO stack (props-dlq.fifo -> props-main.fifo, props-operator.fifo)."""
        self.world = world
        session = boto3.Session(region_name=REGION)
        self.log = CallLog(session)
        self._sqs = session.client("sqs")
        logger = logging.getLogger("props.replay")
        logger.setLevel(logging.CRITICAL)  # the lines are not what these tests read
        self.replay = LambdaReplay.from_env(
            world.environment(kind, fifo=fifo), sqs=self._sqs, session=session, logger=logger
        )

    def __call__(self, event: Mapping[str, Any]) -> Observed:
        """One invocation. (What it sends stays in moto's queues: the tests read the requests,
        and one test's few hundred messages cost moto nothing.)"""
        self.log.clear()
        response: PartialItemFailureResponse | None = None
        error: BaseException | None = None
        try:
            response = self.replay(event)
        except Exception as raised:  # the property: nothing is ever raised
            error = raised
        return observe(response, error, self.log.calls)
