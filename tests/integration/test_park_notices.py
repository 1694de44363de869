"""Park notices (PARK_NOTIFICATION_TOPIC_ARN) through `app.handler`, on SNS and SQS in moto: one
notice per park with its exact fields and no body; a failed publish leaves the park done."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from integration.harness import (
    ACCOUNT_ID,
    COUNT,
    PARK_REASON,
    REGION,
    AppHandle,
    Outgoing,
    ReplayQueues,
    Sqs,
    attributes_of,
    number,
)

if TYPE_CHECKING:
    from integration.harness import Queue

# SNS lives in moto only here; LocalStack's run selects the `emulator` tests, not these.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

SECRET_BODY = "card=4111-1111-1111-1111 secret-7f3a"


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, queues: ReplayQueues) -> pytest.MonkeyPatch:
    monkeypatch.setenv("MAIN_QUEUE_URL", queues.main.url)
    monkeypatch.setenv("OPERATOR_QUEUE_URL", queues.operator.url)
    monkeypatch.setenv("MAX_ATTEMPTS", "2")
    return monkeypatch


def subscribed_topic(sqs: Sqs, name: str) -> tuple[str, Queue]:
    """An SNS topic with an SQS queue subscribed (raw delivery, so the queue holds the notice)."""
    sns = boto3.client("sns", region_name=REGION)
    topic_arn = sns.create_topic(Name=name)["TopicArn"]
    inbox = sqs.create_queue(f"{name}-inbox")
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=inbox.arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    return topic_arn, inbox


def json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("log_body", [False, True])
def test_each_park_sends_one_notice_with_its_fields(
    app: AppHandle,
    app_env: pytest.MonkeyPatch,
    sqs: Sqs,
    queues: ReplayQueues,
    log_body: bool,
) -> None:
    topic_arn, inbox = subscribed_topic(sqs, "parked")
    app_env.setenv("PARK_NOTIFICATION_TOPIC_ARN", topic_arn)
    app_env.setenv("LOG_MESSAGE_BODY", str(log_body).lower())
    event = sqs.dead_letter_event(
        queues,
        [
            Outgoing(SECRET_BODY, {COUNT: number(2)}),  # at MAX_ATTEMPTS: parked
            Outgoing("replayed, no notice", {COUNT: number(1)}),
            Outgoing("bad count", {COUNT: number("-1")}),  # parked invalid-count
        ],
    )
    parked_id, _, invalid_id = [r["messageId"] for r in event["Records"]]

    assert app.handler(event) == {"batchItemFailures": []}

    assert len(sqs.drain(queues.operator)) == 2
    notices = {n["message_id"]: n for n in (json.loads(m["Body"]) for m in sqs.drain(inbox))}
    expected_parked: dict[str, Any] = {
        "event": "parked",
        "message_id": parked_id,
        "reason": "max-attempts",
        "attempt": 2,
        "dlq_arn": queues.dlq.arn,
    }
    if log_body:
        expected_parked.update(body=SECRET_BODY, body_truncated=False)
    assert notices[parked_id] == expected_parked
    assert notices[invalid_id]["reason"] == "invalid-count"
    assert notices[invalid_id]["attempt"] is None
    assert set(notices) == {parked_id, invalid_id}
    if not log_body:
        assert not any("body" in notice for notice in notices.values())
        assert "4111" not in json.dumps(notices)


def test_notices_carry_reason_and_subject_for_subscribers(
    app: AppHandle, app_env: pytest.MonkeyPatch, sqs: Sqs, queues: ReplayQueues
) -> None:
    """Without raw delivery, SNS's envelope shows the subject and the `reason` attribute a
    subscription filter policy can match."""
    sns = boto3.client("sns", region_name=REGION)
    topic_arn = sns.create_topic(Name="parked-envelope")["TopicArn"]
    inbox = sqs.create_queue("parked-envelope-inbox")
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=inbox.arn)
    app_env.setenv("PARK_NOTIFICATION_TOPIC_ARN", topic_arn)
    event = sqs.dead_letter_event(queues, [Outgoing("given up", {COUNT: number(2)})])

    assert app.handler(event) == {"batchItemFailures": []}

    (delivered,) = sqs.drain(inbox)
    envelope = json.loads(delivered["Body"])
    assert envelope["Subject"] == "sqs-dlq-replay parked a message (max-attempts)"
    assert envelope["MessageAttributes"]["reason"] == {
        "Type": "String",
        "Value": "max-attempts",
    }
    assert json.loads(envelope["Message"])["message_id"] == event["Records"][0]["messageId"]


def test_more_than_ten_parks_go_out_in_several_requests(
    app: AppHandle, app_env: pytest.MonkeyPatch, sqs: Sqs, queues: ReplayQueues
) -> None:
    topic_arn, inbox = subscribed_topic(sqs, "parked-many")
    app_env.setenv("PARK_NOTIFICATION_TOPIC_ARN", topic_arn)
    events = [
        sqs.dead_letter_event(queues, [Outgoing(f"m{i}", {COUNT: number(2)}) for i in range(6)])
        for _ in range(2)
    ]
    # Both polls' records in one event of 12: two PublishBatch requests.
    event = {"Records": [r for e in events for r in e["Records"]]}

    assert app.handler(event) == {"batchItemFailures": []}

    delivered = [json.loads(m["Body"])["message_id"] for m in sqs.drain(inbox)]
    assert sorted(delivered) == sorted(r["messageId"] for r in event["Records"])


def test_a_failed_publish_is_logged_and_counted_and_the_park_stands(
    app: AppHandle,
    app_env: pytest.MonkeyPatch,
    sqs: Sqs,
    queues: ReplayQueues,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app_env.setattr(app.logger.registered_handler, "stream", sys.stdout)
    missing_topic = f"arn:aws:sns:{REGION}:{ACCOUNT_ID}:no-such-topic"
    app_env.setenv("PARK_NOTIFICATION_TOPIC_ARN", missing_topic)
    event = sqs.dead_letter_event(queues, [Outgoing(SECRET_BODY, {COUNT: number(2)})])
    (message_id,) = [r["messageId"] for r in event["Records"]]

    assert app.handler(event) == {"batchItemFailures": []}

    (parked,) = sqs.drain(queues.operator)
    assert attributes_of(parked)[PARK_REASON]["StringValue"] == "max-attempts"
    lines = json_lines(capsys.readouterr().out)
    (warning,) = [line for line in lines if line.get("level") == "WARNING"]
    assert warning["message"] == "park notice not published; the message is parked all the same"
    assert warning["message_id"] == message_id
    assert warning["topic_arn"] == missing_topic
    assert warning["code"] == "NotFound"
    (record_line,) = [line for line in lines if line.get("message") == "record parked"]
    assert record_line["message_id"] == message_id
    (metrics,) = [line for line in lines if "_aws" in line and "ParkNoticeFailures" in line]
    assert metrics["ParkNoticeFailures"] in (1, [1])
    assert {"Name": "ParkNoticeFailures", "Unit": "Count"} in (
        metrics["_aws"]["CloudWatchMetrics"][0]["Metrics"]
    )
    assert "4111" not in json.dumps(lines)
