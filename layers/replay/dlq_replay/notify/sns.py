"""Park notices: what one says (which message was parked and why, the body only where
LOG_MESSAGE_BODY allows it, so a pager is actionable without opening the operator queue), and
the notices out to SNS (PublishBatch), every failure reported back: the caller logs and counts
a failed one, and the record, parked already, stays done."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeAlias

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.decision import FALLBACK_GROUP_ID, Decision
from dlq_replay.core.messages import InboundMessage, sized_batches
from dlq_replay.core.queues import SNS_TOPIC_ARN_PATTERN, is_fifo_arn
from dlq_replay.core.text import clip, sqs_text, utf8_size

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sns.type_defs import PublishBatchRequestEntryTypeDef

    from dlq_replay.core.settings import Settings

# Well below SNS's 256 KiB per request, so several notices share one.
NOTICE_BODY_LIMIT = 65_536
_SUBJECT_LIMIT = 100  # SNS's limit on an e-mail subject


@dataclass(frozen=True, slots=True)
class ParkNotice:
    """One SNS message; the reason is also a message attribute, for filter policies."""

    record_id: str
    message: str
    subject: str
    reason: str
    group_id: str  # for FIFO topics; the record's group, else the fallback group
    deduplication_id: str

    @property
    def size_bytes(self) -> int:
        """What the notice counts against SNS's 256 KiB per request (an upper estimate)."""
        texts = (self.message, self.subject, "reason", "String", self.reason)
        return sum(len(text.encode()) for text in texts)


def park_notice_fields(
    message: InboundMessage, decision: Decision, *, include_body: bool
) -> dict[str, Any]:
    """The notice's fields, every text from the record escaped (SNS refuses a lone surrogate)."""
    fields: dict[str, Any] = {
        "event": "parked",
        "message_id": sqs_text(message.message_id),
        "reason": decision.reason.value if decision.reason is not None else None,
        "attempt": decision.attempt,
        "dlq_arn": sqs_text(message.queue_arn),
    }
    if message.dead_letter_source_arn:
        fields["dead_letter_source_arn"] = sqs_text(message.dead_letter_source_arn)
    if message.message_group_id:
        fields["message_group_id"] = sqs_text(message.message_group_id)
    if include_body:
        body = sqs_text(message.body)
        fields["body"] = clip(body, NOTICE_BODY_LIMIT, size=utf8_size)
        fields["body_truncated"] = len(fields["body"]) < len(body)
    return fields


def park_notice(message: InboundMessage, decision: Decision, *, include_body: bool) -> ParkNotice:
    fields = park_notice_fields(message, decision, include_body=include_body)
    reason = str(fields["reason"] or "unknown")
    subject = f"sqs-dlq-replay parked a message ({reason})"[:_SUBJECT_LIMIT]
    return ParkNotice(
        record_id=message.message_id,
        message=json.dumps(fields, ensure_ascii=False, sort_keys=True),
        subject=subject,
        reason=reason,
        group_id=message.message_group_id or FALLBACK_GROUP_ID,
        deduplication_id=f"{message.message_id}-park-notice",
    )


# PublishBatch limits: 10 entries and 256 KiB of payload per request.
MAX_PUBLISH_ENTRIES = 10
MAX_PUBLISH_BYTES = 262_144
# As the SQS client (sqs/client.py): one slow call must not eat the function's whole timeout.
SNS_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=15
)
# The SNS client's type, a name the layers above import at run time.
SnsClient: TypeAlias = "SNSClient"


@dataclass(frozen=True, slots=True)
class NoticeFailure:
    record_id: str
    code: str
    message: str


def notice_client(settings: Settings, *, session: boto3.Session | None = None) -> SnsClient | None:
    """The SNS client for park notices, in the topic's own region; None when notices are off."""
    topic = settings.park_notification_topic_arn
    if topic is None:
        return None
    match = SNS_TOPIC_ARN_PATTERN.fullmatch(topic)
    region = match["region"] if match else None
    make = session.client if session is not None else boto3.client
    return make("sns", region_name=region, config=SNS_CLIENT_CONFIG)


def publish_notices(
    sns: SnsClient, topic_arn: str, notices: Sequence[ParkNotice]
) -> list[NoticeFailure]:
    """Publish every notice; one failure per notice SNS did not take."""
    fifo = is_fifo_arn(topic_arn)
    failures: list[NoticeFailure] = []
    # A notice alone is always below SNS's limit.
    sized = sized_batches(notices, attrgetter("size_bytes"), MAX_PUBLISH_ENTRIES, MAX_PUBLISH_BYTES)
    for request, _ in sized:
        entries = [_entry(str(index), notice, fifo) for index, notice in enumerate(request)]
        try:
            response = sns.publish_batch(TopicArn=topic_arn, PublishBatchRequestEntries=entries)
        except (ClientError, BotoCoreError) as error:
            info = error.response.get("Error", {}) if isinstance(error, ClientError) else {}
            code = str(info.get("Code", type(error).__name__))
            text = str(info.get("Message", error))
            failures.extend(NoticeFailure(n.record_id, code, text) for n in request)
            continue
        for item in response.get("Failed", []):
            code, text = str(item.get("Code", "Unknown")), str(item.get("Message", ""))
            failures.append(NoticeFailure(request[int(item["Id"])].record_id, code, text))
    return failures


def _entry(entry_id: str, notice: ParkNotice, fifo: bool) -> PublishBatchRequestEntryTypeDef:
    entry: PublishBatchRequestEntryTypeDef = {
        "Id": entry_id,
        "Message": notice.message,
        "Subject": notice.subject,
        "MessageAttributes": {"reason": {"DataType": "String", "StringValue": notice.reason}},
    }
    if fifo:
        entry["MessageGroupId"] = notice.group_id
        entry["MessageDeduplicationId"] = notice.deduplication_id
    return entry


def publish_texts(
    sns: SnsClient, topic_arn: str, subject: str, texts: Sequence[tuple[str, str]]
) -> list[str]:
    """Publish texts keyed by an id (deduped by it on a FIFO topic); a line per one not taken."""
    fifo = is_fifo_arn(topic_arn)
    problems: list[str] = []
    for start in range(0, len(texts), MAX_PUBLISH_ENTRIES):
        request = texts[start : start + MAX_PUBLISH_ENTRIES]
        entries: list[PublishBatchRequestEntryTypeDef] = []
        for index, (key, text) in enumerate(request):
            entry: PublishBatchRequestEntryTypeDef = {
                "Id": str(index),
                "Message": text,
                "Subject": subject,
            }
            if fifo:
                entry["MessageGroupId"] = "dlq-replay-follow"
                entry["MessageDeduplicationId"] = key[:128]
            entries.append(entry)
        try:
            response = sns.publish_batch(TopicArn=topic_arn, PublishBatchRequestEntries=entries)
        except (ClientError, BotoCoreError) as error:
            problems.extend(f"{key}: {error}" for key, _ in request)
            continue
        for item in response.get("Failed", []):
            key = request[int(item["Id"])][0]
            problems.append(f"{key}: {item.get('Code', 'Unknown')} {item.get('Message', '')}")
    return problems
