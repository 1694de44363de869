"""PublishBatch requests of park notices, on botocore's Stubber: ≤ 10 entries a request, FIFO
keys on FIFO topics, and every refused entry mapped back to its record."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber
from dlq_replay.core.decision import Action, Decision, ParkReason
from dlq_replay.notify.sns import NoticeFailure, ParkNotice, park_notice, publish_notices

from ._support import message

TOPIC = "arn:aws:sns:us-east-1:123456789012:parked"
PARK = Decision(Action.PARK, attempt=3, reason=ParkReason.MAX_ATTEMPTS)


def notices(count: int) -> list[ParkNotice]:
    return [
        park_notice(message(message_id=f"m-{i}"), PARK, include_body=False) for i in range(count)
    ]


def test_eleven_notices_take_two_requests_and_a_refused_entry_is_reported() -> None:
    sns = boto3.client("sns", region_name="us-east-1")
    eleven = notices(11)
    with Stubber(sns) as stub:
        stub.add_response(
            "publish_batch",
            {
                "Successful": [],
                "Failed": [{"Id": "3", "Code": "InternalError", "SenderFault": False}],
            },
        )
        stub.add_response("publish_batch", {"Successful": [], "Failed": []})

        failures = publish_notices(sns, TOPIC, eleven)

        stub.assert_no_pending_responses()
    assert failures == [NoticeFailure("m-3", "InternalError", "")]


def test_a_fifo_topic_gets_group_and_deduplication_ids() -> None:
    sns = boto3.client("sns", region_name="us-east-1")
    (notice,) = notices(1)
    expected_entry = {
        "Id": "0",
        "Message": notice.message,
        "Subject": notice.subject,
        "MessageAttributes": {"reason": {"DataType": "String", "StringValue": "max-attempts"}},
        "MessageGroupId": notice.group_id,
        "MessageDeduplicationId": "m-0-park-notice",
    }
    with Stubber(sns) as stub:
        stub.add_response(
            "publish_batch",
            {"Successful": [], "Failed": []},
            {"TopicArn": f"{TOPIC}.fifo", "PublishBatchRequestEntries": [expected_entry]},
        )

        assert publish_notices(sns, f"{TOPIC}.fifo", [notice]) == []


def test_a_request_refused_as_a_whole_fails_each_of_its_notices() -> None:
    sns = boto3.client("sns", region_name="us-east-1")
    with Stubber(sns) as stub:
        stub.add_client_error("publish_batch", "AuthorizationError", "not allowed")

        failures = publish_notices(sns, TOPIC, notices(2))

    assert failures == [
        NoticeFailure("m-0", "AuthorizationError", "not allowed"),
        NoticeFailure("m-1", "AuthorizationError", "not allowed"),
    ]
