"""The park notice's content: exactly the fields an on-call needs, never the body unless allowed."""

from __future__ import annotations

import json

from dlq_replay.core.decision import FALLBACK_GROUP_ID, Action, Decision, ParkReason
from dlq_replay.notify.sns import NOTICE_BODY_LIMIT, park_notice, park_notice_fields

from ._support import DLQ_ARN, DLQ_FIFO_ARN, SOURCE_ARN, message

MAX_ATTEMPTS_PARK = Decision(Action.PARK, attempt=3, reason=ParkReason.MAX_ATTEMPTS)


def test_fields_of_a_park_without_source_or_group() -> None:
    msg = message(message_id="m-1", body="secret")

    assert park_notice_fields(msg, MAX_ATTEMPTS_PARK, include_body=False) == {
        "event": "parked",
        "message_id": "m-1",
        "reason": "max-attempts",
        "attempt": 3,
        "dlq_arn": DLQ_ARN,
    }


def test_fields_name_the_source_queue_and_the_group_when_the_record_has_them() -> None:
    msg = message(
        message_id="m-2",
        queue_arn=DLQ_FIFO_ARN,
        system={"DeadLetterQueueSourceArn": SOURCE_ARN, "MessageGroupId": "customer-7"},
    )
    decision = Decision(Action.PARK, attempt=0, reason=ParkReason.MISSING_GROUP_ID)

    assert park_notice_fields(msg, decision, include_body=False) == {
        "event": "parked",
        "message_id": "m-2",
        "reason": "missing-group-id",
        "attempt": 0,
        "dlq_arn": DLQ_FIFO_ARN,
        "dead_letter_source_arn": SOURCE_ARN,
        "message_group_id": "customer-7",
    }


def test_an_invalid_count_park_has_no_attempt() -> None:
    decision = Decision(Action.PARK, reason=ParkReason.INVALID_COUNT)

    fields = park_notice_fields(message(), decision, include_body=False)

    assert fields["attempt"] is None
    assert fields["reason"] == "invalid-count"


def test_the_body_only_when_allowed() -> None:
    msg = message(body='{"card": "4111"}')

    without = park_notice(msg, MAX_ATTEMPTS_PARK, include_body=False)
    with_body = park_notice_fields(msg, MAX_ATTEMPTS_PARK, include_body=True)

    assert "4111" not in without.message
    assert "body" not in json.loads(without.message)
    assert with_body["body"] == '{"card": "4111"}'
    assert with_body["body_truncated"] is False


def test_a_long_body_is_cut_on_a_character_boundary() -> None:
    body = "é" * NOTICE_BODY_LIMIT  # two bytes each: twice the limit

    fields = park_notice_fields(message(body=body), MAX_ATTEMPTS_PARK, include_body=True)

    assert fields["body"] == "é" * (NOTICE_BODY_LIMIT // 2)
    assert fields["body_truncated"] is True


def test_the_notice_as_published() -> None:
    msg = message(message_id="m-3", system={"MessageGroupId": "g"})
    decision = Decision(Action.PARK, attempt=2, reason=ParkReason.MAX_AGE)

    notice = park_notice(msg, decision, include_body=False)

    assert json.loads(notice.message) == park_notice_fields(msg, decision, include_body=False)
    assert notice.record_id == "m-3"
    assert notice.subject == "sqs-dlq-replay parked a message (max-age)"
    assert notice.reason == "max-age"
    assert notice.group_id == "g"
    assert notice.deduplication_id == "m-3-park-notice"
    assert park_notice(message(), decision, include_body=False).group_id == FALLBACK_GROUP_ID
