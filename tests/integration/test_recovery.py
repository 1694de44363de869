"""The replay's recovery by attempt, end to end on the emulator: a consumer whose failures per
attempt are scripted, SQS's own redrive into the DLQ, the replay (LambdaReplay with its
follow-up, as `app.py` builds it) and the counts the stack's table holds afterwards. And a
move's tagged copy that comes back twice: one return, one notice on the alarm topic."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from aws_lambda_powertools import Logger
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.settings import Settings
from dlq_replay.engine.replayer import Replayer
from dlq_replay.follow.replay_side import ReplayFollow, table_store, threshold_of
from dlq_replay.follow.tables import DynamoFollowStore
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE, follow_value
from dlq_replay.local.eventsource import lambda_event

from integration.harness import (
    COUNT,
    REGION,
    LowestRandom,
    Outgoing,
    RecordingLog,
    ReplayQueues,
    Sqs,
    breaker_table,
    number,
    string,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.moto_only(reason="DynamoDB and SNS of the in-process moto")

TABLE = "stack-table"
MAX_ATTEMPTS = 3
NEVER = 99  # a message the consumer never takes: parked after the last attempt
# body -> the attempt the consumer first takes it on (0: the first delivery, no DLQ at all).
SCRIPT = {
    **{f"first-{i}": 0 for i in range(3)},
    **{f"one-{i}": 1 for i in range(5)},
    **{f"two-{i}": 2 for i in range(3)},
    **{f"three-{i}": 3 for i in range(2)},
    **{f"never-{i}": NEVER for i in range(2)},
}


def expected(script: dict[str, int]) -> dict[str, Any]:
    """What the script says the table must hold: a message taken on attempt k failed every
    attempt before it; each failure of attempt n < max came back and was sent again."""
    failing = [k for k in script.values() if k >= 1]
    sent = {n: sum(1 for k in failing if k >= n) for n in range(1, MAX_ATTEMPTS + 1)}
    returned = {n: sum(1 for k in failing if k > n) for n in range(1, MAX_ATTEMPTS + 1)}
    return {
        "failed_first": len(failing),
        "sent": {n: c for n, c in sent.items() if c},
        "returned": {n: c for n, c in returned.items() if c},
        "parked": {MAX_ATTEMPTS: sum(1 for k in failing if k > MAX_ATTEMPTS)},
    }


def consume(client: SQSClient, queues: ReplayQueues) -> int:
    """The scripted consumer: receives what is visible on the main queue, deletes a message
    whose count has reached its script's attempt, leaves the rest to SQS's redrive (receive
    count 1 past maxReceiveCount 1). How many it received."""
    received = 0
    for _ in range(20):
        batch = client.receive_message(
            QueueUrl=queues.main.url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            return received
        received += len(batch)
        for message in batch:
            carried = message.get("MessageAttributes", {}).get(COUNT)
            count = int(carried.get("StringValue", "0")) if carried else 0
            if count >= SCRIPT[message["Body"]]:
                client.delete_message(
                    QueueUrl=queues.main.url, ReceiptHandle=message["ReceiptHandle"]
                )
    return received


def dlq_event(client: SQSClient, queues: ReplayQueues) -> dict[str, Any]:
    messages = client.receive_message(
        QueueUrl=queues.dlq.url,
        MaxNumberOfMessages=10,
        VisibilityTimeout=30,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", [])
    return lambda_event(messages, queues.dlq.arn, REGION)


def settings_of(queues: ReplayQueues, **extra: str) -> Settings:
    return Settings.from_env(
        {
            "MAIN_QUEUE_URL": queues.main.url,
            "OPERATOR_QUEUE_URL": queues.operator.url,
            "MAX_ATTEMPTS": str(MAX_ATTEMPTS),
            "BACKOFF_BASE_SECONDS": "1",
            "JITTER": "none",
            **extra,
        }
    )


def test_the_tables_counts_are_the_scripted_consumers(
    sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    breaker_table(dynamodb, TABLE)
    settings = settings_of(queues)
    log = RecordingLog()
    follow = ReplayFollow(
        table_store(lambda: dynamodb, TABLE, threshold_of(settings)),
        count_attribute=COUNT,
        logger=log,
    )
    writes: list[str] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.UpdateItem", lambda **_: writes.append("UpdateItem")
    )
    replayer = Replayer(settings, replay_client, logger=log, rng=LowestRandom())
    replay = LambdaReplay(replayer, None, follow)
    for body in SCRIPT:
        sqs.send(queues.main, Outgoing(body))

    invocations = 0
    started = time.monotonic()
    while time.monotonic() - started < 60:
        consume(sqs.client, queues)
        event = dlq_event(sqs.client, queues)
        if event["Records"]:
            response = replay(event)
            invocations += 1
            done = {r["messageId"] for r in event["Records"]} - {
                f["itemIdentifier"] for f in response["batchItemFailures"]
            }
            for record in event["Records"]:  # the event source deletes what is done
                if record["messageId"] in done:
                    sqs.client.delete_message(
                        QueueUrl=queues.dlq.url, ReceiptHandle=record["receiptHandle"]
                    )
            continue
        if sqs.total(queues.main) == 0 and sqs.total(queues.dlq) == 0:
            break
        time.sleep(0.3)  # the replays' 1 s delays
    assert sqs.total(queues.main) == 0
    assert sqs.total(queues.dlq) == 0

    now = time.time()
    summary = DynamoFollowStore(dynamodb, TABLE).window(queues.dlq.name, now - 3600, now)
    want = expected(SCRIPT)
    assert summary.failed_first == want["failed_first"] == 12
    assert summary.sent == want["sent"] == {1: 12, 2: 7, 3: 4}
    assert summary.returned == want["returned"] == {1: 7, 2: 4, 3: 2}
    assert summary.parked == want["parked"] == {3: 2}
    assert len(sqs.drain(queues.operator)) == 2
    assert len(writes) <= invocations  # one write an invocation at most, never one a record
    assert not [line for line in log.lines if line.message.startswith("follow:")]


def test_a_tagged_copy_delivered_twice_is_one_return_and_one_notice(
    sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    breaker_table(dynamodb, TABLE)
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    inbox = sqs.create_queue("alarm-inbox")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox.arn)
    action = "c" * 32
    moves = DynamoFollowStore(dynamodb, TABLE)
    moves.started(action, 3600, time.time(), command="redrive")
    moves.sent(action, 5, 0)
    moves.finished(action, time.time())
    tagged = [
        Outgoing(f"moved-{i}", {FOLLOW_ATTRIBUTE: string(follow_value(action, f"key-{i}"))})
        for i in range(5)
    ]
    event = sqs.dead_letter_event(queues, tagged)
    env = {
        "MAIN_QUEUE_URL": queues.main.url,
        "OPERATOR_QUEUE_URL": queues.operator.url,
        "BACKOFF_BASE_SECONDS": "1",
        "FOLLOW_TABLE": TABLE,
        "FOLLOW_NOTICE_TOPIC_ARN": topic,
        "AWS_DEFAULT_REGION": REGION,
    }
    replay = LambdaReplay.from_env(
        env, sqs=replay_client, logger=Logger(service="test"), session=boto3.Session()
    )
    assert replay.follow is not None

    assert replay(event) == {"batchItemFailures": []}
    assert replay(event) == {"batchItemFailures": []}  # SQS delivers the batch again

    followed = moves.follow(action)
    assert followed is not None
    assert followed.returned == 5
    notices = sqs.drain(inbox)
    assert len(notices) == 1
    text = json.loads(notices[0]["Body"])["Message"]
    assert text.startswith("the fix did not hold: 5 of 5 redriven at ")
    # The replayed copies keep the tag, so a second return would be counted too.
    sqs.end_delays(queues.main)
    replayed = sqs.drain(queues.main)
    assert {m["MessageAttributes"][FOLLOW_ATTRIBUTE]["StringValue"] for m in replayed} == {
        follow_value(action, f"key-{i}") for i in range(5)
    }


def test_without_a_follow_table_nothing_is_counted_and_nothing_fails(
    sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    event = sqs.dead_letter_event(queues, [Outgoing("plain", {COUNT: number(1)})])
    env = {"MAIN_QUEUE_URL": queues.main.url, "OPERATOR_QUEUE_URL": queues.operator.url}
    replay = LambdaReplay.from_env(env, sqs=replay_client, logger=Logger(service="test"))
    assert replay.follow is None
    assert replay(event) == {"batchItemFailures": []}
    sqs.end_delays(queues.main)
    assert len(sqs.drain(queues.main)) == 1
