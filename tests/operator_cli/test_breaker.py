"""The outage breaker in Lambda, against moto: its state in DynamoDB, its switch the replay
function's own event source mapping on the DLQ (as `pause`/`resume` flip it), its probe rule;
the interaction with an operator's pause and resume, the retention bound, and `status`."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.breaker.breaker_state import Cause, Phase
from dlq_replay.breaker.controller import Breaker
from dlq_replay.breaker.function import DynamoBreakerStore, lambda_breaker, lazy_clients
from dlq_replay.breaker.rule import Counts
from dlq_replay.core.settings import Settings
from dlq_replay.engine.replayer import Replayer
from dlq_replay.engine.report import Outcome
from dlq_replay.local.eventsource import lambda_event
from dlq_replay.ops.stack import function_environment
from dlq_replay.ops.status import event_source_status
from integration.harness import breaker_table

from .stack import deploy
from .support import REGION, run_cli

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import (
        MessageAttributeValueTypeDef,
        SendMessageBatchRequestEntryTypeDef,
    )

pytestmark = pytest.mark.moto_only(reason="Lambda event source mappings and DynamoDB in moto")

TABLE = "shop-breaker"
RULE = "dlq-replay-probe-shop"
LOG = logging.getLogger("test.breaker")
DAY = 86_400


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC).timestamp()

    def __call__(self) -> float:
        return self.now


class Deployed:
    """The tests' small stack with the breaker's table and rule, as template.yaml adds them."""

    def __init__(self, outputs: dict[str, str], env: dict[str, str]) -> None:
        self.outputs = outputs
        self.env = env
        self.lam: LambdaClient = boto3.client("lambda")
        self.sqs: SQSClient = boto3.client("sqs")
        self.events: Any = boto3.client("events")
        self.dynamodb: Any = boto3.client("dynamodb")
        self.store = DynamoBreakerStore(lambda: self.dynamodb, TABLE)

    @property
    def dlq(self) -> str:
        return self.outputs["DeadLetterQueueUrl"]

    def mapping(self) -> str:
        status = event_source_status(
            self.lam, self.outputs["ReplayFunctionName"], self.outputs["DeadLetterQueueArn"]
        )
        return str(status.state)

    def rule(self) -> str:
        return str(self.events.describe_rule(Name=RULE)["State"])

    def breaker(self, clock: Clock) -> Breaker:
        settings = Settings.from_env(self.env)
        made = lambda_breaker(
            settings,
            env=self.env,
            sqs=self.sqs,
            clients=lazy_clients(None),
            logger=LOG,
            metrics=None,
            sns=None,
            clock=clock,
        )
        assert made is not None
        return made

    def fill_dlq(self, count: int) -> None:
        for start in range(0, count, 10):
            entries: list[SendMessageBatchRequestEntryTypeDef] = [
                {"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(10)
            ]
            self.sqs.send_message_batch(QueueUrl=self.dlq, Entries=entries[: count - start])

    def take_from_dlq(self, count: int) -> None:
        """What a probe into a healthy consumer does to the DLQ: these do not come back."""
        taken = 0
        while taken < count:
            messages = self.sqs.receive_message(
                QueueUrl=self.dlq, MaxNumberOfMessages=min(10, count - taken)
            ).get("Messages", [])
            for message in messages:
                self.sqs.delete_message(QueueUrl=self.dlq, ReceiptHandle=message["ReceiptHandle"])
            taken += len(messages)


@pytest.fixture
def deployed(aws: None) -> Deployed:
    cfn: CloudFormationClient = boto3.client("cloudformation")
    outputs = deploy(cfn, "shop")
    breaker_table(boto3.client("dynamodb"), TABLE)  # template.yaml's OutageBreakerTable
    events = boto3.client("events")
    events.put_rule(Name=RULE, ScheduleExpression="rate(1 minute)", State="DISABLED")
    lam = boto3.client("lambda")
    function = outputs["ReplayFunctionName"]
    env = dict(function_environment(lam, function))
    env.update(OUTAGE_BREAKER="on", OUTAGE_BREAKER_TABLE=TABLE, OUTAGE_BREAKER_RULE=RULE)
    lam.update_function_configuration(FunctionName=function, Environment={"Variables": env})
    return Deployed(outputs, {**env, "AWS_LAMBDA_FUNCTION_NAME": function})


def outage(at: float, n: int = 22, back: int = 20) -> list[tuple[float, Counts]]:
    return [(at, Counts(replays=n)), (at, Counts(returns=back))]


def test_it_opens_probes_reopens_and_closes_through_the_event_source_mapping(
    deployed: Deployed,
) -> None:
    clock = Clock()
    breaker = deployed.breaker(clock)
    deployed.fill_dlq(50)
    assert deployed.mapping() == "Enabled"

    opened = breaker.record(outage(clock.now))
    assert opened.phase is Phase.OPEN
    assert deployed.mapping() == "Disabled"  # nothing is received while open
    assert deployed.rule() == "ENABLED"  # the probe ticks
    assert deployed.store.load() == opened  # every invocation, and status, read this

    clock.now += 119
    assert breaker.tick() == opened
    assert deployed.mapping() == "Disabled"
    clock.now += 1
    probing = breaker.tick()
    assert probing is not None
    assert (probing.phase, probing.baseline) == (Phase.HALF_OPEN, 50)
    assert deployed.mapping() == "Enabled"

    # The probe's 40 replays are sent: receiving stops until they show.
    holding = breaker.record([(clock.now, Counts(replays=40, sent=40))])
    assert holding.holding
    assert deployed.mapping() == "Disabled"
    clock.now += 60
    reopened = breaker.tick()  # the DLQ is as full as before: they came back
    assert reopened is not None
    assert (reopened.phase, reopened.openings) == (Phase.OPEN, 2)
    assert reopened.next_probe == clock.now + 240

    clock.now += 240
    assert breaker.tick() is not None
    assert deployed.mapping() == "Enabled"
    breaker.record([(clock.now, Counts(replays=40, sent=40))])
    deployed.take_from_dlq(40)  # the consumer is back: the copies stay away
    clock.now += 299
    assert deployed.mapping() == "Disabled"
    assert breaker.tick() is not None
    clock.now += 1
    closed = breaker.tick()
    assert closed is not None
    assert (closed.phase, closed.cause, closed.openings) == (Phase.CLOSED, Cause.RECOVERED, 0)
    assert deployed.mapping() == "Enabled"
    assert deployed.rule() == "DISABLED"  # costs nothing again


def test_poison_in_a_busy_replay_does_not_open_it(deployed: Deployed) -> None:
    clock = Clock()
    breaker = deployed.breaker(clock)
    state = breaker.record([(clock.now, Counts(300, 0))])
    for second in range(1, 10):
        state = breaker.record([(clock.now + second, Counts(returns=5))])
    assert state.phase is Phase.CLOSED  # 45 returns of 300 replays
    assert deployed.mapping() == "Enabled"
    assert deployed.rule() == "DISABLED"


def test_an_operators_pause_closes_the_breaker_which_then_never_resumes_it(
    capsys: pytest.CaptureFixture[str], deployed: Deployed
) -> None:
    clock = Clock()
    breaker = deployed.breaker(clock)
    breaker.record(outage(clock.now))

    paused = run_cli(capsys, "pause", "--stack", "shop")

    assert paused.code == 0, paused
    assert "outage breaker closed: it will not resume this pause" in paused.out
    state = deployed.store.load()
    assert (state.phase, state.cause) == (Phase.CLOSED, Cause.OPERATOR_PAUSE)
    clock.now += 3600
    breaker.tick()
    assert deployed.mapping() == "Disabled"  # the operator's pause stands
    assert deployed.rule() == "DISABLED"


def test_an_operators_resume_closes_the_breaker(
    capsys: pytest.CaptureFixture[str], deployed: Deployed
) -> None:
    clock = Clock()
    breaker = deployed.breaker(clock)
    breaker.record(outage(clock.now))

    resumed = run_cli(capsys, "resume", "--stack", "shop", "--json")

    assert resumed.code == 0, resumed
    assert resumed.json()["breaker"] == "outage breaker closed: the replay runs as usual"
    assert deployed.mapping() == "Enabled"
    state = deployed.store.load()
    assert (state.phase, state.cause) == (Phase.CLOSED, Cause.OPERATOR_RESUME)
    # Resuming when the breaker is closed says nothing about it.
    again = run_cli(capsys, "resume", "--stack", "shop", "--json")
    assert "breaker" not in again.json()


def test_a_mapping_turned_on_by_someone_else_closes_the_breaker(deployed: Deployed) -> None:
    clock = Clock()
    breaker = deployed.breaker(clock)
    breaker.record(outage(clock.now))
    uuid = event_source_status(deployed.lam, deployed.outputs["ReplayFunctionName"], None).uuid
    deployed.lam.update_event_source_mapping(UUID=str(uuid), Enabled=True)  # console, stack

    state = breaker.tick()

    assert state is not None
    assert (state.phase, state.cause) == (Phase.CLOSED, Cause.TAKEN_OVER)
    assert deployed.mapping() == "Enabled"


def dlq_age(deployed: Deployed, age_seconds: float) -> None:
    """What CloudWatch says of the DLQ's oldest message (SQS's own metric)."""
    name = deployed.outputs["DeadLetterQueueArn"].rsplit(":", 1)[1]
    boto3.client("cloudwatch").put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Dimensions": [{"Name": "QueueName", "Value": name}],
                "Value": age_seconds,
                "Timestamp": datetime.now(UTC) - timedelta(minutes=1),
            }
        ],
    )


def retention(deployed: Deployed) -> int:
    attributes = deployed.sqs.get_queue_attributes(
        QueueUrl=deployed.dlq, AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    return int(attributes["MessageRetentionPeriod"])


def test_with_under_a_day_left_for_the_oldest_message_it_closes_and_does_not_open(
    deployed: Deployed,
) -> None:
    clock = Clock()
    breaker = deployed.breaker(clock)
    assert breaker.record(outage(clock.now)).phase is Phase.OPEN
    dlq_age(deployed, retention(deployed) - DAY + 60)  # 23h59m left

    closed = breaker.tick()

    assert closed is not None
    assert (closed.phase, closed.cause) == (Phase.CLOSED, Cause.RETENTION)
    assert deployed.mapping() == "Enabled"  # the replay parks as usual
    assert deployed.rule() == "DISABLED"
    clock.now += 30
    again = breaker.record(outage(clock.now))
    assert again.phase is Phase.CLOSED  # the signal is there, but the messages would expire
    assert deployed.mapping() == "Enabled"


def test_a_day_or_more_left_keeps_it_open(deployed: Deployed) -> None:
    clock = Clock()
    breaker = deployed.breaker(clock)
    breaker.record(outage(clock.now))
    dlq_age(deployed, retention(deployed) - DAY - 60)
    state = breaker.tick()
    assert state is not None
    assert state.phase is Phase.OPEN


def test_status_shows_the_state_the_next_probe_and_what_waits(
    capsys: pytest.CaptureFixture[str], deployed: Deployed
) -> None:
    closed = run_cli(capsys, "status", "--stack", "shop")
    assert "outage breaker: closed" in closed.out
    clock = Clock()
    deployed.fill_dlq(12)
    deployed.breaker(clock).record(outage(clock.now))

    text = run_cli(capsys, "status", "--stack", "shop")
    report = run_cli(capsys, "status", "--stack", "shop", "--json").json()

    assert text.code == 0, text
    line = next(line for line in text.out.splitlines() if "outage breaker" in line)
    assert "OPEN since" in line
    assert "next probe in 1m" in line
    assert "12 messages wait in the DLQ" in line
    breaker = report["breaker"]
    assert breaker["state"] == "open"
    assert breaker["table"] == TABLE
    assert breaker["openings"] == 1
    assert breaker["waiting"] == 12
    assert 0 < breaker["next_probe_in_seconds"] <= 120
    assert breaker["since"] == pytest.approx(clock.now)


def test_the_handler_counts_each_batch_and_answers_the_probe(deployed: Deployed) -> None:
    clock = Clock()
    settings = Settings.from_env(deployed.env)
    outcomes: list[Outcome] = []
    replayer = Replayer(settings, deployed.sqs, logger=LOG, on_outcome=outcomes.append)
    replay = LambdaReplay(replayer, deployed.breaker(clock))
    state = None
    # 30 first replays (first arrivals in the DLQ), then 30 copies sent now back with count 1:
    # all of the first replays came back.
    for count in (None, "1"):
        for _ in range(3):
            entries: list[SendMessageBatchRequestEntryTypeDef] = [
                {"Id": str(i), "MessageBody": "{}"} for i in range(10)
            ]
            for entry in entries if count else []:
                entry["MessageAttributes"] = {
                    "orders-replays": {"DataType": "Number", "StringValue": count or ""}
                }
            sent = deployed.sqs.send_message_batch(QueueUrl=deployed.dlq, Entries=entries)
            assert len(sent["Successful"]) == 10
            messages = deployed.sqs.receive_message(
                QueueUrl=deployed.dlq,
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            )["Messages"]
            event = lambda_event(messages, deployed.outputs["DeadLetterQueueArn"], REGION)
            assert replay(event) == {"batchItemFailures": []}
            state = deployed.store.load()
            assert state.phase is Phase.CLOSED or count
    assert state is not None
    assert state.phase is Phase.OPEN
    assert deployed.mapping() == "Disabled"

    # A batch still on its way: a copy sent inside the outage on its last attempt (4 of 4) is
    # given that attempt back and replayed, not parked.
    attempt: dict[str, MessageAttributeValueTypeDef] = {
        "orders-replays": {"DataType": "Number", "StringValue": "4"}
    }
    deployed.sqs.send_message(QueueUrl=deployed.dlq, MessageBody="last", MessageAttributes=attempt)
    messages = deployed.sqs.receive_message(
        QueueUrl=deployed.dlq, MessageAttributeNames=["All"], MessageSystemAttributeNames=["All"]
    )["Messages"]
    assert replay(lambda_event(messages, deployed.outputs["DeadLetterQueueArn"], REGION)) == {
        "batchItemFailures": []
    }
    last = outcomes[-1]
    assert (last.message.body, last.decision.action, last.decision.attempt) == ("last", "replay", 4)
    assert last.failure is None

    clock.now += 120
    probe = {"source": "aws.events", "detail-type": "Scheduled Event", "resources": [RULE]}
    assert replay(probe) == {"batchItemFailures": []}
    assert deployed.store.load().phase is Phase.HALF_OPEN
    assert deployed.mapping() == "Enabled"


def test_opening_and_closing_say_so_in_metrics_and_notices(deployed: Deployed) -> None:
    from aws_lambda_powertools import Metrics

    sns = boto3.client("sns")
    topic = sns.create_topic(Name="parked")["TopicArn"]
    inbox = deployed.sqs.create_queue(QueueName="pager")["QueueUrl"]
    inbox_arn = deployed.sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=inbox_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    env = {**deployed.env, "PARK_NOTIFICATION_TOPIC_ARN": topic}
    metrics = Metrics(namespace="SqsDlqReplay", service="sqs-dlq-replay")
    clock = Clock()
    breaker = lambda_breaker(
        Settings.from_env(env),
        env=env,
        sqs=deployed.sqs,
        clients=lazy_clients(None),
        logger=LOG,
        metrics=metrics,
        sns=sns,
        clock=clock,
    )
    assert breaker is not None

    breaker.record(outage(clock.now))
    clock.now += 120
    breaker.tick()  # half-open: a probe, no notice
    clock.now += 300
    breaker.tick()  # a window without the signal: closed

    assert set(metrics.metric_set) >= {"BreakerOpened", "BreakerClosed", "BreakerOpen"}
    notices = [
        json.loads(m["Body"])
        for m in deployed.sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10)["Messages"]
    ]
    assert [(n["event"], n["cause"]) for n in notices] == [
        ("breaker-open", "outage"),
        ("breaker-closed", "recovered"),
    ]
    assert notices[0]["openings"] == 1
    assert notices[0]["next_probe"] == pytest.approx(notices[0]["since"] + 120)
    metrics.clear_metrics()
