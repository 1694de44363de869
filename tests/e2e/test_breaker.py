"""End-to-end: the template's outage breaker on the deployed stack (its table, its probe rule,
the function's own event source mapping), through an outage of the main queue's consumer.

Lambda is stood in for by a loop that receives from the DLQ while the breaker receives and
hands the batches to the handler built from the function's deployed environment, as Lambda
would (partial-batch response: the records not named are deleted). The breaker's clock is
injected; the queues run in real time.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.breaker.breaker_state import Cause, Phase
from dlq_replay.breaker.function import DynamoBreakerStore, lambda_breaker, lazy_clients
from dlq_replay.breaker.rule import BreakerPolicy, QueueTiming
from dlq_replay.consumer import replay_attempt
from dlq_replay.core.settings import Settings
from dlq_replay.engine.replayer import Replayer
from dlq_replay.local.eventsource import lambda_event
from dlq_replay.sqs.depth import queue_depth

from .deployment import PARAMETERS, REGION, Deployment

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

MESSAGES = 25
LOG = logging.getLogger("test.e2e.breaker")
PROBE = {"source": "aws.events", "detail-type": "Scheduled Event", "resources": []}


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return max(self.now, time.time())


@pytest.fixture
def endpoint(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The function's clients (made by boto3 from the environment) reach the emulator."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", deployment.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "e2e")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "e2e")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    yield deployment.endpoint_url
    lam = boto3.client("lambda")  # the stand-in's mapping off again, as the fixture left it
    for mapping in lam.list_event_source_mappings(
        FunctionName=deployment.outputs["ReplayFunctionName"]
    )["EventSourceMappings"]:
        if mapping.get("State") != "Disabled":
            lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)


@pytest.mark.slow
def test_the_template_breaker_gives_back_what_an_outage_took_on_the_queues_timing(
    deployment: Deployment, endpoint: str
) -> None:
    sqs, outputs = deployment.sqs, deployment.outputs
    env = {
        **deployment.function.get("Environment", {}).get("Variables", {}),
        "AWS_LAMBDA_FUNCTION_NAME": outputs["ReplayFunctionName"],
        "AWS_ENDPOINT_URL_SQS": endpoint,
    }
    settings = Settings.from_env(env)
    clock = Clock()
    breaker = lambda_breaker(
        settings,
        env=env,
        sqs=sqs,
        clients=lazy_clients(boto3.Session()),
        logger=LOG,
        metrics=None,
        sns=None,
        clock=clock,
    )
    assert breaker is not None
    replay = LambdaReplay(Replayer(settings, sqs, logger=LOG), breaker)
    store = DynamoBreakerStore(lambda: boto3.client("dynamodb"), env["OUTAGE_BREAKER_TABLE"])
    main, dlq = outputs["MainQueueUrl"], outputs["DeadLetterQueueUrl"]
    consumer = _Consumer(sqs, main, settings.count_attribute)

    def invoke() -> int:
        """One batch from the DLQ to the handler, while the breaker receives."""
        if not store.load().receiving:
            return 0
        return _invoke(replay, sqs, dlq, outputs["DeadLetterQueueArn"])

    # The consumer is down: every message reaches the DLQ, is replayed (its first attempt),
    # fails and comes back with count 1; the breaker opens on those returns.
    _send(sqs, main)
    _until(lambda: consumer.poll(fail=True) or queue_depth(sqs, dlq).total == MESSAGES)
    deadline = time.monotonic() + 60
    while store.load().phase is Phase.CLOSED:
        invoke()
        consumer.poll(fail=True)
        assert time.monotonic() < deadline, "the breaker did not open"
        time.sleep(0.1)
    opened = store.load()
    assert opened.cause is Cause.OUTAGE
    assert opened.outages
    assert opened.outages[0][1] is None
    # Its timing is the main queue's: visibility x maxReceiveCount + the backoff cap + slack.
    timing = _timing(sqs, main)
    policy = BreakerPolicy().for_queue(timing, float(PARAMETERS["BackoffCapSeconds"]))
    assert policy.first_pause_seconds < BreakerPolicy().first_pause_seconds
    assert opened.next_probe == pytest.approx(opened.since + policy.first_pause_seconds)
    assert _mapping(outputs["ReplayFunctionName"]) == "Disabled"
    events = boto3.client("events")
    assert events.describe_rule(Name=env["OUTAGE_BREAKER_RULE"])["State"] == "ENABLED"

    # Still down: the copies replayed before it opened come back (count 2 of MaxAttempts 2:
    # each would be parked) and wait in the DLQ, received by no one.
    _until(lambda: consumer.poll(fail=True) or queue_depth(sqs, dlq).total == MESSAGES)
    assert invoke() == 0

    # The consumer is back; the probe's time comes: every return was sent inside the outage,
    # so each keeps the count it had and is replayed, none parked.
    clock.now = (opened.next_probe or 0.0) + 1
    replay(PROBE)
    assert store.load().phase is Phase.HALF_OPEN
    _until(lambda: (invoke(), consumer.poll(fail=False))[0] == 0 and consumer.done(MESSAGES))
    clock.now += policy.probe_wait_seconds
    replay(PROBE)
    closed = store.load()
    assert (closed.phase, closed.cause) == (Phase.CLOSED, Cause.RECOVERED)
    assert events.describe_rule(Name=env["OUTAGE_BREAKER_RULE"])["State"] == "DISABLED"

    assert sorted(consumer.processed) == sorted(f"m{i}" for i in range(MESSAGES))
    assert max(consumer.processed.values()) <= settings.max_attempts
    assert "Messages" not in sqs.receive_message(QueueUrl=outputs["OperatorQueueUrl"])
    for queue in (main, dlq, outputs["OperatorQueueUrl"]):
        assert queue_depth(sqs, queue).total == 0, queue


class _Consumer:
    """The main queue's consumer: fails every message while down (visible again at once, so
    the next receive dead-letters it), deletes it once back."""

    def __init__(self, sqs: SQSClient, queue_url: str, count_attribute: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.count_attribute = count_attribute
        self.processed: dict[str, int] = {}
        self.deliveries: Counter[str] = Counter()

    def poll(self, *, fail: bool) -> bool:
        """One receive; False (so callers go on) whatever it found."""
        for message in self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            MessageAttributeNames=["All"],
        ).get("Messages", []):
            body = json.loads(message["Body"])["id"]
            self.deliveries[body] += 1
            if fail:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=0,
                )
            else:
                assert body not in self.processed, f"{body} consumed twice"
                self.processed[body] = replay_attempt(message, self.count_attribute)
                self.sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
        return False

    def done(self, count: int) -> bool:
        return len(self.processed) == count


def _invoke(replay: LambdaReplay, sqs: SQSClient, dlq: str, dlq_arn: str) -> int:
    """What Lambda's poller does with one batch: the handler, then delete what succeeded."""
    messages = sqs.receive_message(
        QueueUrl=dlq,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", [])
    if not messages:
        return 0
    answer = replay(lambda_event(messages, dlq_arn, REGION))
    failed = {item["itemIdentifier"] for item in answer["batchItemFailures"]}
    for message in messages:
        if message["MessageId"] not in failed:
            sqs.delete_message(QueueUrl=dlq, ReceiptHandle=message["ReceiptHandle"])
    return len(messages)


def _send(sqs: SQSClient, queue_url: str) -> None:
    for start in range(0, MESSAGES, 10):
        entries: list[SendMessageBatchRequestEntryTypeDef] = [
            {"Id": str(i), "MessageBody": json.dumps({"id": f"m{i}"})}
            for i in range(start, min(start + 10, MESSAGES))
        ]
        assert not sqs.send_message_batch(QueueUrl=queue_url, Entries=entries).get("Failed")


def _until(done: Callable[[], Any], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _timing(sqs: SQSClient, queue_url: str) -> QueueTiming:
    found = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["VisibilityTimeout", "RedrivePolicy"]
    )["Attributes"]
    receives = json.loads(found["RedrivePolicy"])["maxReceiveCount"]
    return QueueTiming(float(found["VisibilityTimeout"]), int(receives))


def _mapping(function_name: str) -> str:
    (mapping,) = boto3.client("lambda").list_event_source_mappings(FunctionName=function_name)[
        "EventSourceMappings"
    ]
    return str(mapping["State"])
