"""`make demo` in CI's short mode: every message ends processed or parked, none lost."""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any, cast

import pytest
from dlq_replay.cli.main import main
from dlq_replay.demo.run import demo
from dlq_replay.demo.scenario import DemoOptions, send_messages

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class Outbox:
    """Takes the demo's SendMessageBatch calls without a queue: what the demo will send."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:  # noqa: N803
        assert len(Entries) <= 10
        self.bodies.extend(json.loads(entry["MessageBody"]) for entry in Entries)
        return {"Successful": [], "Failed": []}


def planned_kinds(options: DemoOptions) -> dict[str, int]:
    """How many messages of each kind the demo sends with these options (its seeded draw)."""
    outbox = Outbox()
    send_messages(cast("SQSClient", outbox), "outbox", options, random.Random(options.seed))
    kinds: dict[str, int] = {}
    for body in outbox.bodies:
        kinds[body["kind"]] = kinds.get(body["kind"], 0) + 1
    return kinds


@pytest.mark.usefixtures("fresh_backends")
def test_short_demo_accounts_for_every_message() -> None:
    options = DemoOptions(messages=40, seed=7, poison_rate=0.1, live=False, timeout_seconds=60)
    kinds = planned_kinds(options)
    assert kinds.get("poison", 0) > 0, kinds
    assert kinds.get("transient", 0) > 0, kinds

    result = demo(options)

    assert result.completed, result
    assert result.lost == 0, result
    assert result.sent == 40
    assert result.processed + result.parked == result.sent
    # Exactly the always-failing messages are parked, all for the attempt limit.
    assert result.parked == kinds["poison"]
    assert result.parked_by_reason == {"max-attempts": kinds["poison"]}
    # Replays reached the consumer, the poison ones up to the attempt limit. (Not an exact count
    # per attempt: moto's receive is not thread-safe, and a receive that fails after marking
    # its messages received sends them on to the DLQ without a delivery, as SQS would for a
    # response lost on the way.)
    assert any(attempt > 0 for attempt in result.deliveries_by_attempt)
    assert max(result.deliveries_by_attempt) == options.max_attempts


@pytest.mark.usefixtures("fresh_backends")
def test_demo_command_in_plain_mode_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--plain", "--messages", "30", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "demo complete" in out
    assert "sent 30" in out
    assert "lost 0" in out
