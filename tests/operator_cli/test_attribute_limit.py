"""Messages parked for `attribute-limit` carry no park reason (there is no slot for it), yet
`peek` shows the reason and `redrive --filter-reason attribute-limit` selects them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from dlq_replay.ops.receiving import drain

from .support import Queues, depth, park, run_cli, string

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

NO_WAIT = ("--wait-seconds", "0")
# Nine attributes plus the count: the replay had no slot for its count, so it parked the
# message as it came, without a reason.
NINE = {f"attr-{i}": string(f"value-{i}") for i in range(9)}


def test_peek_shows_attribute_limit_for_a_full_message_without_a_reason(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    (full,) = park(sqs, queues.operator, ["full"], reason=None, count="1", extra=NINE)
    (net,) = park(sqs, queues.operator, ["net"], reason=None, count="2")  # SQS's safety net

    result = run_cli(capsys, "peek", "operator", *queues.options(), *NO_WAIT, "--json")

    assert result.code == 0, result
    shown = {m["message_id"]: m for m in result.json()["messages"]}
    assert shown[full]["park_reason"] == "attribute-limit"
    assert len(shown[full]["attribute_names"]) == 10
    assert shown[net]["park_reason"] is None
    assert depth(sqs, queues.operator) == (2, 0)


def test_filter_reason_attribute_limit_selects_them(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["full-1", "full-2"], reason=None, count="1", extra=NINE)
    park(sqs, queues.operator, ["max"], reason="max-attempts")
    park(sqs, queues.operator, ["net"], reason=None, count="2")

    result = run_cli(
        capsys,
        "redrive",
        *queues.options(),
        *NO_WAIT,
        "--json",
        "--filter-reason",
        "attribute-limit",
    )

    assert result.code == 0, result
    tally = result.json()
    assert (tally["seen"], tally["moved"], tally["skipped"]) == (4, 2, 2)
    moved = drain(sqs, queues.main)
    assert sorted(m["Body"] for m in moved) == ["full-1", "full-2"]
    assert all(len(m["MessageAttributes"]) == 10 for m in moved)  # byte for byte, all ten
    assert depth(sqs, queues.operator) == (2, 0)
    none = run_cli(
        capsys, "redrive", *queues.options(), *NO_WAIT, "--json", "--filter-reason", "none"
    )
    assert none.json()["moved"] == 1
    assert [m["Body"] for m in drain(sqs, queues.main)] == ["net"]
