"""An SQS record, a message SQS itself dead-lettered: never recognised, it is what no other
kind claims. It goes back as a copy with every attribute."""

from __future__ import annotations

from typing import ClassVar

from dlq_replay.core.decision import ParkReason, queue_delay_limit
from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.queues import Arn, is_fifo_url
from dlq_replay.core.settings import Settings
from dlq_replay.engine.kinds import Kind


class SqsKind(Kind):
    delivers_a_copy: ClassVar[bool] = True

    def destination(
        self, message: InboundMessage, recognised: Recognised, settings: Settings
    ) -> str | ParkReason:
        """Its allowed source queue, else the main queue; a FIFO queue only with a group id."""
        source = message.dead_letter_source_arn
        if source and source in settings.allowed_source_queue_arns:
            destination = Arn.queue(source).url(settings.endpoint_url_sqs)
        elif settings.main_queue_url is not None:
            destination = settings.main_queue_url
        else:
            return ParkReason.UNKNOWN_SOURCE
        if is_fifo_url(destination) and message.message_group_id is None:
            return ParkReason.MISSING_GROUP_ID
        return destination

    def delay_limit(self, destination: str) -> int:
        return queue_delay_limit(destination)


KIND = SqsKind(RecordKind.SQS, lambda message, replay_targets: None)
