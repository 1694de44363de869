"""What a park notice says: which message was parked and why (the body only where
LOG_MESSAGE_BODY allows it), so a pager is actionable without opening the operator queue."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dlq_replay.core.decision import FALLBACK_GROUP_ID, Decision
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.text import clip, sqs_text, utf8_size

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
