"""`status`: the time until a queue's oldest message expires, and when that is a warning."""

from __future__ import annotations

from dataclasses import replace

import pytest
from dlq_replay.ops.queueinfo import DEFAULT_RETENTION_SECONDS, QueueInfo
from dlq_replay.ops.status import (
    EXPIRY_WARNING_SECONDS,
    QueueStatus,
    Status,
    expiry_warning,
)
from dlq_replay.sqs.depth import QueueDepth, seconds_until_expiry

DAY = 86_400


def test_the_warning_threshold_is_a_day() -> None:
    assert EXPIRY_WARNING_SECONDS == DAY


@pytest.mark.parametrize(
    ("retention", "age", "expected"),
    [
        (14 * DAY, 10 * DAY, 4 * DAY),
        (14 * DAY, 0.0, 14 * DAY),
        (60, 59.5, 0.5),
        (4 * DAY, 4 * DAY, 0.0),
        (4 * DAY, 5 * DAY, 0.0),  # a late metric past the retention: floored at 0
        (4 * DAY, None, None),  # no age reported: unknown
    ],
)
def test_seconds_until_expiry_is_retention_minus_age(
    retention: int, age: float | None, expected: float | None
) -> None:
    assert seconds_until_expiry(retention, age) == expected


@pytest.mark.parametrize(
    ("expires_in", "expected"),
    [(None, False), (0.0, True), (DAY - 0.5, True), (DAY, False), (DAY + 1, False)],
)
def test_expiry_warning_under_a_day_only(expires_in: float | None, expected: bool) -> None:
    assert expiry_warning(expires_in) is expected


def _info(name: str) -> QueueInfo:
    return QueueInfo(
        url=f"https://sqs.example/123456789012/{name}",
        arn=f"arn:aws:sqs:us-east-1:123456789012:{name}",
        fifo=False,
        visibility_timeout=30,
        redrive=None,
    )


def _queue(name: str, age: float | None, retention: int = DEFAULT_RETENTION_SECONDS) -> QueueStatus:
    info = replace(_info(name), retention_seconds=retention)
    return QueueStatus(name, info, QueueDepth(visible=1, in_flight=0, delayed=0), age)


def test_retention_defaults_to_sqs_four_days() -> None:
    assert _info("main").retention_seconds == DEFAULT_RETENTION_SECONDS == 4 * DAY


def test_queue_status_expiry_and_the_expiring_queues() -> None:
    fine = _queue("main", 3 * DAY, retention=14 * DAY)
    default = _queue("dlq", 3 * DAY + 100)  # SQS's default retention: 4 days
    unknown = _queue("operator", None)

    status = Status((fine, default, unknown), event_source=None)

    assert (fine.expires_in_seconds, fine.expiry_warning) == (11 * DAY, False)
    assert (default.expires_in_seconds, default.expiry_warning) == (DAY - 100, True)
    assert (unknown.expires_in_seconds, unknown.expiry_warning) == (None, False)
    assert status.expiring == (default,)
