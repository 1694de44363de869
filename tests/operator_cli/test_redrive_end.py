"""When a client-side redrive ends: once the source is empty, and not before. A receive that
brings nothing is not the end while the source's counters show messages delayed or in flight
with another consumer: those are moved when they come back. Messages the run holds itself
(skipped by a selection) do not keep it waiting."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pytest
from dlq_replay.ops.receiving import drain

from .support import COUNT, PARK_REASON, Queues, depth, park, run_cli, string

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

# Short polls and the default, as a user runs it: both must wait for what comes back.
WAITS = [("--wait-seconds", "0"), ("--wait-seconds", "1")]


def send_delayed(sqs: SQSClient, url: str, bodies: list[str], seconds: int) -> None:
    for body in bodies:
        sqs.send_message(
            QueueUrl=url,
            MessageBody=body,
            DelaySeconds=seconds,
            MessageAttributes={
                PARK_REASON: string("max-attempts"),
                COUNT: string("3", "Number"),
            },
        )


@pytest.mark.parametrize("wait", WAITS, ids=["short-polls", "long-polls"])
def test_a_redrive_waits_for_delayed_messages_and_moves_them(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    wait: tuple[str, str],
) -> None:
    park(sqs, queues.operator, [f"now-{i}" for i in range(3)])
    send_delayed(sqs, queues.operator, ["later-0", "later-1"], seconds=3)

    result = run_cli(capsys, "redrive", *queues.options(), *wait, "--client-side", "--json")

    assert result.code == 0, result
    tally = result.json()
    assert (tally["seen"], tally["moved"]) == (5, 5)
    moved = Counter(str(m["Body"]) for m in drain(sqs, queues.main))
    assert moved == Counter(["now-0", "now-1", "now-2", "later-0", "later-1"])
    assert depth(sqs, queues.operator) == (0, 0)


@pytest.mark.usefixtures("atomic_receive")
@pytest.mark.parametrize("wait", WAITS, ids=["short-polls", "long-polls"])
def test_a_redrive_waits_for_messages_another_consumer_holds_and_moves_them(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    wait: tuple[str, str],
) -> None:
    park(sqs, queues.operator, [f"order-{i}" for i in range(4)])
    # Someone else looks at two of them (a peek, a consumer) and lets them go after 3 s.
    held = sqs.receive_message(
        QueueUrl=queues.operator, MaxNumberOfMessages=2, VisibilityTimeout=3
    )["Messages"]
    assert len(held) == 2

    result = run_cli(capsys, "redrive", *queues.options(), *wait, "--client-side", "--json")

    assert result.code == 0, result
    assert result.json()["moved"] == 4
    moved = Counter(str(m["Body"]) for m in drain(sqs, queues.main))
    assert moved == Counter(f"order-{i}" for i in range(4))
    assert depth(sqs, queues.operator) == (0, 0)


def test_messages_the_run_skips_itself_do_not_keep_it_waiting(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a", "b"], reason="max-attempts")
    park(sqs, queues.operator, ["c"], reason="consumer:bad-input")

    result = run_cli(
        capsys,
        "redrive",
        *queues.options(),
        "--filter-reason",
        "max-attempts",
        "--hide-seconds",
        "600",
        "--json",
    )

    assert result.code == 0, result
    tally = result.json()
    assert (tally["moved"], tally["skipped"]) == (2, 1)
    # The skipped one was held (in flight) until the end, then let go at once.
    assert depth(sqs, queues.operator) == (1, 0)
