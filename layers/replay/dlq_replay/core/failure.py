"""What a consumer does with a message it failed, before any DLQ: back off, or park now.

Backoff: the message's visibility timeout becomes a delay drawn from the replay's own
`BackoffPolicy`, with attempt = its receive count, so retries spread out instead of coming
back after a fixed timeout. Park now: an error the consumer knows is permanent (validation, a
4xx) sends the message straight to the operator queue with the reason and a short detail,
instead of burning every receive. Pure: no boto3, no clock, the random source passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from dlq_replay.core import attributes
from dlq_replay.core.attributes import PARK_ERROR_ATTRIBUTE, PARK_REASON_ATTRIBUTE, Attribute
from dlq_replay.core.backoff import MAX_VISIBILITY_TIMEOUT_SECONDS, BackoffPolicy, RandomSource
from dlq_replay.core.decision import FALLBACK_GROUP_ID
from dlq_replay.core.messages import InboundMessage, OutboundMessage, fits_limits
from dlq_replay.core.queues import is_fifo_url

# A park-now reason is written as `consumer:<reason>` in `dlq-replay-park-reason`, so the
# operator tools tell it from the replay's own reasons and can filter on it.
CONSUMER_REASON_PREFIX = "consumer:"
CONSUMER_REASON = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
# The error detail a park-now copy carries (never the body): at most this many characters.
PARK_DETAIL_MAX_CHARS = 256


class ParkMessage(Exception):  # noqa: N818 - an instruction to the processor, not an error
    """Raise from a record handler to send the record to the operator queue now.

    `reason` (1-64 of A-Z a-z 0-9 _ . -) is written as `consumer:<reason>`; `detail` (say,
    the validation error) is truncated to `PARK_DETAIL_MAX_CHARS`. Never put the body in it.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        if not CONSUMER_REASON.fullmatch(reason):
            raise ValueError(f"park reason must be 1-64 of A-Z a-z 0-9 _ . -, got {reason!r}")
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


ParkRule = Callable[[BaseException], "ParkMessage | None"]


def park_on(reason: str, *types: type[BaseException]) -> ParkRule:
    """A rule that parks a record whose handler raised one of `types` (say, a validation
    error), as if it had raised `ParkMessage(reason, str(error))`; others back off."""
    ParkMessage(reason)  # the reason is checked now, not at the first failure

    def rule(error: BaseException) -> ParkMessage | None:
        return ParkMessage(reason, str(error)) if isinstance(error, types) else None

    return rule


def visibility_delay(
    policy: BackoffPolicy, receive_count: int, rng: RandomSource, held_seconds: int = 0
) -> int:
    """The visibility timeout for a failed message: the policy's delay for attempt =
    `receive_count` (its ApproximateReceiveCount; 1 on the first receive), cut so that it
    ends within SQS's 12 hours from the receive (`held_seconds` have gone since)."""
    delay = policy.draw(max(1, receive_count), rng)
    return max(0, min(delay, MAX_VISIBILITY_TIMEOUT_SECONDS - held_seconds))


def park_now_copy(
    message: InboundMessage, park: ParkMessage, operator_queue_url: str
) -> OutboundMessage:
    """The operator-queue copy of a message its consumer parked: its body and attributes, the
    reason, and the detail where an attribute slot and the 1 MiB limit allow (reason first)."""
    carried: dict[str, Attribute] = dict(message.attributes)
    detail = " ".join(park.detail.split())[:PARK_DETAIL_MAX_CHARS]
    for name, value in (
        (PARK_REASON_ATTRIBUTE, f"{CONSUMER_REASON_PREFIX}{park.reason}"),
        (PARK_ERROR_ATTRIBUTE, detail),
    ):
        if value:
            carried = _with(message.body, carried, name, attributes.string(value))
    fifo = is_fifo_url(operator_queue_url)
    return OutboundMessage(
        record_id=message.message_id,
        queue_url=operator_queue_url,
        body=message.body,
        attributes=carried,
        message_group_id=(message.message_group_id or FALLBACK_GROUP_ID) if fifo else None,
        # Deterministic, so SQS drops a park repeated after a crash within its 5-minute window.
        deduplication_id=f"{message.message_id}-consumer-park" if fifo else None,
        trace_header=message.trace_header,
    )


def _with(
    body: str, values: Mapping[str, Attribute], name: str, value: Attribute
) -> dict[str, Attribute]:
    """`values` plus one attribute, when the copy still fits SQS's limits; else unchanged."""
    added = {**values, name: value}
    return added if fits_limits(body, added) else dict(values)
