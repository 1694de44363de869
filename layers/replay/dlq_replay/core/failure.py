"""What a consumer does with a message it failed, before any DLQ: back off (a visibility timeout
drawn from the replay's own `BackoffPolicy`, so retries spread out), or park now an error it
knows is permanent (validation, a 4xx) instead of burning every receive."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from dlq_replay.core import attributes
from dlq_replay.core.attributes import PARK_ERROR_ATTRIBUTE, PARK_REASON_ATTRIBUTE
from dlq_replay.core.backoff import MAX_VISIBILITY_TIMEOUT_SECONDS, BackoffPolicy, RandomSource
from dlq_replay.core.decision import sqs_copy, with_room
from dlq_replay.core.messages import InboundMessage, OutboundMessage
from dlq_replay.core.queues import is_fifo_url
from dlq_replay.core.text import PARK_DETAIL_MAX_CHARS, error_text, last_true, one_line, sqs_text

# A park-now reason is written as `consumer:<reason>` in `dlq-replay-park-reason`, so the
# operator tools tell it from the replay's own reasons and can filter on it.
CONSUMER_REASON_PREFIX = "consumer:"
CONSUMER_REASON = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
# A run of this many characters of the body counts as the body: the default detail holds none.
BODY_RUN_CHARS = 32
# What stands in the default detail where the body (or a quoted input value) was.
REDACTED = "[redacted]"
# How pydantic quotes what it validated: `[type=missing, input_value={'sku': ...}, input_type=
# dict]`; the value is (a part of) the body, so the default detail leaves it out whatever its size.
_INPUT_VALUE = re.compile(r"input_value=.*?(?=, input_type=)")


class ParkMessage(Exception):  # noqa: N818 - an instruction to the processor, not an error
    """Raise from a record handler to park the record now: `reason` (1-64 of A-Z a-z 0-9 _ . -)
    is written as `consumer:<reason>`, `detail` (never the body) cut to PARK_DETAIL_MAX_CHARS."""

    def __init__(self, reason: str, detail: str = "") -> None:
        if not CONSUMER_REASON.fullmatch(reason):
            raise ValueError(f"park reason must be 1-64 of A-Z a-z 0-9 _ . -, got {reason!r}")
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


ParkRule = Callable[[BaseException], "ParkMessage | None"]
# Builds `dlq-replay-error` from the park and the message's body (see `body_free_detail`);
# whatever it returns is then put on one line, escaped for SQS and cut to PARK_DETAIL_MAX_CHARS.
ParkDetail = Callable[["ParkMessage", str], str]


def park_on(reason: str, *types: type[BaseException]) -> ParkRule:
    """A rule that parks a record whose handler raised one of `types`, as if it had raised
    `ParkMessage(reason, str(error)) from error`; others back off."""
    ParkMessage(reason)  # the reason is checked now, not at the first failure

    def rule(error: BaseException) -> ParkMessage | None:
        if not isinstance(error, types):
            return None
        park = ParkMessage(reason, str(error))
        park.__cause__ = error  # for a `ParkDetail` that reads the error itself
        return park

    return rule


def visibility_delay(
    policy: BackoffPolicy, receive_count: int, rng: RandomSource, held_seconds: int = 0
) -> int:
    """The policy's delay for attempt `receive_count`, cut to end within SQS's 12 hours from
    the receive (`held_seconds` have gone since)."""
    delay = policy.draw(max(1, receive_count), rng)
    return max(0, min(delay, MAX_VISIBILITY_TIMEOUT_SECONDS - held_seconds))


def body_free_detail(park: ParkMessage, body: str) -> str:
    """The default `dlq-replay-error`: the park's detail with pydantic's `input_value=...` and
    every run of the body redacted, so the body never reaches the attribute."""
    text = sqs_text(_INPUT_VALUE.sub(f"input_value={REDACTED}", one_line(park.detail)))
    return _redact_body(text, body, keep=PARK_DETAIL_MAX_CHARS)


def park_detail_text(park: ParkMessage, body: str, detail: ParkDetail | None = None) -> str:
    """`dlq-replay-error` of a park-now copy (empty: none), whatever `detail` returns."""
    return error_text(str((detail or body_free_detail)(park, body)))


def _redact_body(text: str, body: str, *, keep: int) -> str:
    """`text` with each run of BODY_RUN_CHARS or more characters of `body` replaced by REDACTED.
    Blocks of half a run are tested, a block found grown by binary search (a 1 MiB body costs a
    few dozen searches); the scan stops once the first `keep` characters are settled."""
    if len(body) < BODY_RUN_CHARS or len(text) < BODY_RUN_CHARS:
        return text
    flat = re.sub(r"\s+", " ", body)  # not stripped: a run may start with the body's space
    forms = [flat] if (escaped := sqs_text(flat)) == flat else [flat, escaped]

    def in_body(piece: str) -> bool:
        return any(piece in form for form in forms)

    step = BODY_RUN_CHARS // 2
    runs: list[tuple[int, int]] = []
    covered_to = redacted = 0
    end = len(text)
    for start in range(0, len(text) - step + 1, step):
        if start + step <= covered_to:
            continue
        if start - redacted > keep + 2 * BODY_RUN_CHARS:
            end = start  # the result's first `keep` characters are settled
            break
        if not in_body(text[start : start + step]):
            continue
        left, right = _run_through(text, start, start + step, in_body)
        if right - left >= BODY_RUN_CHARS:
            runs.append((left, right))
            redacted += right - max(left, covered_to)
            covered_to = max(covered_to, right)
    parts: list[str] = []
    position = 0
    for left, right in runs:
        if right <= position:
            continue
        if left >= position:
            parts.append(text[position:left])
        elif parts and parts[-1] == REDACTED:
            parts.pop()  # overlaps the run before: one marker for both
        parts.append(REDACTED)
        position = right
    parts.append(text[position:end])
    return "".join(parts)


def _run_through(
    text: str, start: int, stop: int, in_body: Callable[[str], bool]
) -> tuple[int, int]:
    """The longest run of the body through `text[start:stop]` (itself in the body)."""
    right = last_true(lambda end: in_body(text[start:end]), stop, len(text))
    left = -last_true(lambda negative: in_body(text[-negative:right]), -start, 0)
    return left, right


def park_now_copy(
    message: InboundMessage,
    park: ParkMessage,
    operator_queue_url: str,
    detail: ParkDetail | None = None,
) -> OutboundMessage:
    """The operator-queue copy of a parked message: the reason, then the detail, where room."""
    marks = (
        (PARK_REASON_ATTRIBUTE, f"{CONSUMER_REASON_PREFIX}{park.reason}"),
        (PARK_ERROR_ATTRIBUTE, park_detail_text(park, message.body, detail)),
    )
    optional = [(name, attributes.string(value)) for name, value in marks if value]
    carried = with_room(message.body, dict(message.attributes), optional)
    # On FIFO the deduplication id is deterministic, so SQS drops a park repeated after a crash
    # within its 5-minute window; a standard queue's copy carries no group.
    copy = sqs_copy(message, operator_queue_url, carried, "consumer-park")
    return copy if is_fifo_url(operator_queue_url) else replace(copy, message_group_id=None)
