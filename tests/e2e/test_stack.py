"""End-to-end test of template.yaml (issue 4): the deployed stack, with messages flowing through.

The wiring checks read the stack as moto deployed it; the flow test then runs the worker on the
stack's DLQ with the function's deployed environment and its event source settings, while a
consumer on the stack's main queue fails some messages once and others always. Together they
prove that what the template wires (redrive, environment, event source mapping) is what the
code expects.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.consumer import replay_attempt
from dlq_replay.core.attributes import PARK_REASON_ATTRIBUTE
from dlq_replay.local.worker_loop import WorkerOptions, run_worker, settings_from
from dlq_replay.ops.receiving import drain
from dlq_replay.sqs.depth import queue_depth

from .deployment import PARAMETERS, REGION, Deployment

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef, SendMessageBatchRequestEntryTypeDef

MAX_ATTEMPTS = int(PARAMETERS["MaxAttempts"])
COUNT_ATTRIBUTE = PARAMETERS["ReplayCountAttribute"]
FLOW_TIMEOUT_SECONDS = 30.0
# What each message does at the consumer: ok never fails, transient fails its first delivery
# only, poison fails every delivery.
KINDS = {
    **{f"ok-{i}": "ok" for i in range(4)},
    **{f"transient-{i}": "transient" for i in range(3)},
    **{f"poison-{i}": "poison" for i in range(3)},
}
OUTPUT_KEYS = {
    "MainQueueUrl",
    "MainQueueArn",
    "DeadLetterQueueUrl",
    "DeadLetterQueueArn",
    "OperatorQueueUrl",
    "OperatorQueueArn",
    "ReplayFunctionName",
    "ReplayFunctionArn",
    "ReplayLogGroupName",
    "OutageBreakerTableName",
    "AuditTableName",
    # ReplayLayerArn is dropped by tools/moto_stack: moto's Ref of a layer version is no ARN.
}


# -- the wiring ------------------------------------------------------------------------------


def test_outputs_name_the_created_queues_and_function(deployment: Deployment) -> None:
    outputs = deployment.outputs
    assert set(outputs) == OUTPUT_KEYS
    queues = ("MainQueue", "DeadLetterQueue", "OperatorQueue")
    for queue in queues:
        arn = _attributes(deployment.sqs, outputs[f"{queue}Url"])["QueueArn"]
        assert arn == outputs[f"{queue}Arn"], queue
    assert len({outputs[f"{queue}Arn"] for queue in queues}) == len(queues)
    assert deployment.function["FunctionArn"] == outputs["ReplayFunctionArn"]
    assert deployment.function["FunctionName"] == outputs["ReplayFunctionName"]


def test_the_outage_breaker_is_deployed_idle(deployment: Deployment) -> None:
    """OutageBreaker=on (the default): its table exists and the function is told its name and
    its probe rule's, which exists disabled (it costs nothing until the breaker opens)."""
    session = boto3.Session(aws_access_key_id="e2e", aws_secret_access_key="e2e")
    endpoint = deployment.endpoint_url
    table = deployment.outputs["OutageBreakerTableName"]
    environment = deployment.function.get("Environment", {}).get("Variables", {})
    assert environment["OUTAGE_BREAKER"] == "on"
    assert environment["OUTAGE_BREAKER_TABLE"] == table
    dynamodb = session.client("dynamodb", endpoint_url=endpoint, region_name=REGION)
    described = dynamodb.describe_table(TableName=table)["Table"]
    assert described["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    events = session.client("events", endpoint_url=endpoint, region_name=REGION)
    rule = events.describe_rule(Name=environment["OUTAGE_BREAKER_RULE"])
    assert rule["State"] == "DISABLED"
    assert rule["ScheduleExpression"] == "rate(1 minute)"


def test_function_environment_carries_the_parameters(deployment: Deployment) -> None:
    outputs = deployment.outputs
    environment = deployment.function.get("Environment", {}).get("Variables", {})
    expected = {
        "MAIN_QUEUE_URL": outputs["MainQueueUrl"],
        "OPERATOR_QUEUE_URL": outputs["OperatorQueueUrl"],
        "MAX_ATTEMPTS": PARAMETERS["MaxAttempts"],
        "BACKOFF_BASE_SECONDS": PARAMETERS["BackoffBaseSeconds"],
        "BACKOFF_MULTIPLIER": PARAMETERS["BackoffMultiplier"],
        "BACKOFF_CAP_SECONDS": PARAMETERS["BackoffCapSeconds"],
        "JITTER": PARAMETERS["Jitter"],
        "REPLAY_COUNT_ATTRIBUTE": PARAMETERS["ReplayCountAttribute"],
        "ALLOWED_SOURCE_QUEUE_ARNS": "",
        "LOG_MESSAGE_BODY": "false",
    }
    assert {name: environment.get(name) for name in expected} == expected
    # Lambda hands the function strings; so must the deployment (moto_stack adaptation 1).
    assert all(isinstance(value, str) for value in environment.values()), environment
    assert deployment.function.get("Handler") == "app.handler"
    assert deployment.function.get("Runtime") == "python3.13"
    assert deployment.function.get("Timeout") == int(PARAMETERS["FunctionTimeout"])


def test_event_source_mapping_polls_the_dlq_with_partial_batch_responses(
    deployment: Deployment,
) -> None:
    assert len(deployment.mappings) == 1
    (mapping,) = deployment.mappings
    assert mapping.get("EventSourceArn") == deployment.outputs["DeadLetterQueueArn"]
    assert mapping.get("FunctionArn") == deployment.outputs["ReplayFunctionArn"]
    assert mapping.get("State") == "Enabled"
    assert mapping.get("BatchSize") == int(PARAMETERS["BatchSize"])
    assert mapping.get("MaximumBatchingWindowInSeconds") == int(
        PARAMETERS["MaximumBatchingWindowInSeconds"]
    )
    assert mapping.get("ScalingConfig", {}).get("MaximumConcurrency") == int(
        PARAMETERS["MaximumConcurrency"]
    )
    assert "ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", [])


def test_queues_are_wired_main_to_dlq_to_operator(deployment: Deployment) -> None:
    outputs = deployment.outputs
    main = _attributes(deployment.sqs, outputs["MainQueueUrl"])
    dlq = _attributes(deployment.sqs, outputs["DeadLetterQueueUrl"])
    operator = _attributes(deployment.sqs, outputs["OperatorQueueUrl"])
    assert json.loads(main.get("RedrivePolicy", "{}")) == {
        "deadLetterTargetArn": outputs["DeadLetterQueueArn"],
        "maxReceiveCount": int(PARAMETERS["MainQueueMaxReceiveCount"]),
    }
    assert json.loads(dlq.get("RedrivePolicy", "{}")) == {
        "deadLetterTargetArn": outputs["OperatorQueueArn"],
        "maxReceiveCount": int(PARAMETERS["DeadLetterQueueMaxReceiveCount"]),
    }
    assert "RedrivePolicy" not in operator
    # AWS's rule for a Lambda event source: visibility >= 6 x the function timeout, plus the
    # batching window (the template adds the largest, 300 s, when a window is set).
    assert int(PARAMETERS["MaximumBatchingWindowInSeconds"]) > 0
    assert int(dlq["VisibilityTimeout"]) == 6 * deployment.function.get("Timeout", 0) + 300


# -- messages through the stack --------------------------------------------------------------


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_messages_are_replayed_and_parked_as_configured(deployment: Deployment) -> None:
    sqs, outputs = deployment.sqs, deployment.outputs
    (mapping,) = deployment.mappings
    environment = dict(deployment.function.get("Environment", {}).get("Variables", {}))
    # The worker is configured only from the deployment: the function's environment (plus
    # the emulator's endpoint for URLs built from ARNs) and the event source's settings.
    settings = settings_from(environment, {"AWS_ENDPOINT_URL_SQS": deployment.endpoint_url})
    options = WorkerOptions(
        dlq_url=outputs["DeadLetterQueueUrl"],
        pollers=mapping.get("ScalingConfig", {}).get("MaximumConcurrency", 1),
        batch_size=mapping.get("BatchSize", 10),
        wait_seconds=1,
    )
    log = _RecordingLog()
    consumer = _Consumer(sqs, outputs["MainQueueUrl"], environment["REPLAY_COUNT_ATTRIBUTE"])
    stop = threading.Event()
    worker_exit: list[int] = []
    worker = threading.Thread(
        target=lambda: worker_exit.append(
            run_worker(sqs, settings, options, logger=log, stop=stop)
        ),
        name="e2e-worker",
    )
    consuming = threading.Thread(target=consumer.run, args=(stop,), name="e2e-consumer")
    worker.start()
    consuming.start()
    try:
        _send(sqs, outputs["MainQueueUrl"])
        _wait_until_settled(deployment, consumer)
    finally:
        stop.set()
        worker.join(timeout=15)
        consuming.join(timeout=15)
    assert not worker.is_alive()
    assert not consuming.is_alive()
    assert worker_exit == [0]
    assert consumer.errors == []

    parked = _drain(sqs, outputs["OperatorQueueUrl"])
    by_kind = {kind: {i for i, k in KINDS.items() if k == kind} for kind in set(KINDS.values())}

    # Every delivery the consumer saw, by the replay count it read: the transient messages came
    # back once (count 1), the poison ones once per allowed attempt.
    expected_deliveries = {
        **{message_id: [0] for message_id in by_kind["ok"]},
        **{message_id: [0, 1] for message_id in by_kind["transient"]},
        **{message_id: list(range(MAX_ATTEMPTS + 1)) for message_id in by_kind["poison"]},
    }
    assert consumer.deliveries == expected_deliveries
    assert consumer.processed == {
        **dict.fromkeys(by_kind["ok"], 0),
        **dict.fromkeys(by_kind["transient"], 1),
    }

    # Parked: exactly the poison messages, once each, untouched, with reason and count.
    assert sorted(message.id for message in parked) == sorted(by_kind["poison"])
    for message in parked:
        assert message.body == json.dumps({"id": message.id, "kind": "poison"})
        assert message.reason == "max-attempts"
        assert message.count == str(MAX_ATTEMPTS)

    # Nothing lost, nothing counted twice, nothing left behind.
    processed, parked_ids = set(consumer.processed), {m.id for m in parked}
    assert processed | parked_ids == set(KINDS)
    assert not processed & parked_ids
    for queue in ("MainQueueUrl", "DeadLetterQueueUrl", "OperatorQueueUrl"):
        assert queue_depth(sqs, outputs[queue]).total == 0, queue

    # The replay's own account: a replay per failed delivery below the limit, delayed by the
    # configured backoff (jitter none: base x multiplier^(attempt-1), capped), then a park.
    base = int(PARAMETERS["BackoffBaseSeconds"])
    cap = int(PARAMETERS["BackoffCapSeconds"])
    multiplier = int(PARAMETERS["BackoffMultiplier"])
    expected_outcomes: Counter[tuple[str, Any, Any, Any]] = Counter()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        replays = len(by_kind["poison"]) + (len(by_kind["transient"]) if attempt == 1 else 0)
        delay = min(cap, base * multiplier ** (attempt - 1))
        expected_outcomes[("replay", attempt, delay, outputs["MainQueueUrl"])] = replays
    expected_outcomes[("park", MAX_ATTEMPTS, 0, None)] = len(by_kind["poison"])
    assert log.outcomes() == expected_outcomes


# -- helpers ---------------------------------------------------------------------------------


@dataclass
class _Consumer:
    """A main-queue consumer that fails by kind, given back at once on failure."""

    sqs: SQSClient
    queue_url: str
    count_attribute: str
    deliveries: dict[str, list[int]] = field(default_factory=dict)
    processed: dict[str, int] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                self._poll()
        except Exception as error:
            self.errors.append(error)

    def _poll(self) -> None:
        messages = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=1,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        ).get("Messages", [])
        for message in messages:
            message_id = json.loads(message["Body"])["id"]
            attempt = replay_attempt(message, self.count_attribute)
            self.deliveries.setdefault(message_id, []).append(attempt)
            kind = KINDS[message_id]
            if kind == "poison" or (kind == "transient" and attempt == 0):
                # Visible again at once: the next receive passes maxReceiveCount → the DLQ.
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=0,
                )
            else:
                self.sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
                self.processed[message_id] = attempt


class _RecordingLog:
    """The replayer's Log: keeps the per-record outcome lines (several pollers write)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: list[dict[str, Any]] = []

    def _keep(self, kwargs: dict[str, Any]) -> None:
        with self._lock:
            self._lines.append(dict(kwargs.get("extra") or {}))

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._keep(kwargs)  # a routine record's own line

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._keep(kwargs)

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._keep(kwargs)

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._keep(kwargs)

    def outcomes(self) -> Counter[tuple[str, Any, Any, Any]]:
        with self._lock:
            return Counter(
                (
                    line["outcome"],
                    line.get("attempt"),
                    line.get("delay_seconds"),
                    line.get("destination"),
                )
                for line in self._lines
                if "outcome" in line
            )


def _send(sqs: SQSClient, queue_url: str) -> None:
    entries: list[SendMessageBatchRequestEntryTypeDef] = [
        {"Id": str(index), "MessageBody": json.dumps({"id": message_id, "kind": kind})}
        for index, (message_id, kind) in enumerate(KINDS.items())
    ]
    response = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
    assert not response.get("Failed"), response.get("Failed")


def _wait_until_settled(deployment: Deployment, consumer: _Consumer) -> None:
    """Until the consumer is done with every message it can process, the poison messages
    are in the operator queue and main and DLQ are empty; or the timeout (the assertions
    that follow then say what is missing)."""
    sqs, outputs = deployment.sqs, deployment.outputs
    poison = sum(1 for kind in KINDS.values() if kind == "poison")
    deadline = time.monotonic() + FLOW_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if (
            len(consumer.processed) == len(KINDS) - poison
            and queue_depth(sqs, outputs["OperatorQueueUrl"]).total == poison
            and queue_depth(sqs, outputs["MainQueueUrl"]).total == 0
            and queue_depth(sqs, outputs["DeadLetterQueueUrl"]).total == 0
        ):
            return
        time.sleep(0.25)


def _attributes(sqs: SQSClient, queue_url: str) -> dict[str, str]:
    response = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])
    return {str(name): value for name, value in response["Attributes"].items()}


@dataclass(frozen=True)
class _Parked:
    id: str
    body: str
    reason: str | None
    count: str | None


def _drain(sqs: SQSClient, queue_url: str) -> list[_Parked]:
    """Receive and delete everything in a queue: id, body, park reason and replay count."""
    return [_parked(message) for message in drain(sqs, queue_url)]


def _parked(message: MessageTypeDef) -> _Parked:
    attributes = message.get("MessageAttributes", {})

    def text(name: str) -> str | None:
        value = attributes.get(name)
        return value.get("StringValue") if value is not None else None

    return _Parked(
        id=str(json.loads(message["Body"])["id"]),
        body=message["Body"],
        reason=text(PARK_REASON_ATTRIBUTE),
        count=text(COUNT_ATTRIBUTE),
    )
