"""`dlq-replay peek`: looking without consuming, and the receive-count rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from dlq_replay.ops.receiving import ReceiveBudget, drain

from .support import (
    COUNT,
    Queues,
    assert_one_line_error,
    binary,
    depth,
    make_queues,
    park,
    run_cli,
    string,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


NO_WAIT = ("--wait-seconds", "0")


def test_peek_shows_the_messages_and_leaves_them_visible(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    ids = park(
        sqs,
        queues.operator,
        ['{"order": 1}', '{"order": 2}'],
        extra={"tenant": string("acme"), "blob": binary(b"\x00\x01", "Binary.raw")},
        group="tenant-acme",
    )
    park(sqs, queues.operator, ['{"order": 3}'], reason="invalid-count", count="-1")

    result = run_cli(capsys, "peek", "operator", *queues.options(), *NO_WAIT, "--json")

    assert result.code == 0, result
    shown = {m["message_id"]: m for m in result.json()["messages"]}
    assert len(shown) == 3
    first = shown[ids[0]]
    assert first["replay_count"] == 3
    assert first["park_reason"] == "max-attempts"
    assert first["group_id"] == "tenant-acme"
    assert first["attribute_names"] == ["blob", "dlq-replay-park-reason", COUNT, "tenant"]
    assert first["receive_count"] == 1
    assert first["receives_left"] is None  # the operator queue has no RedrivePolicy
    assert 0 <= first["age_seconds"] < 60
    assert "body" not in first  # bodies only with --body
    invalid = next(m for m in shown.values() if m["park_reason"] == "invalid-count")
    assert invalid["replay_count"] is None
    assert invalid["raw_count"] == "-1"
    # Still there, and visible at once: nothing in flight, and a consumer gets all three.
    assert depth(sqs, queues.operator) == (3, 0)
    again = drain(sqs, queues.operator)
    assert {m["MessageId"] for m in again} == set(shown)
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in again} == {"2"}


def test_peek_body_only_with_the_option(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ['{"secret": "card"}'])

    without = run_cli(capsys, "peek", "operator", *queues.options(), *NO_WAIT)
    with_body = run_cli(capsys, "peek", "operator", *queues.options(), *NO_WAIT, "--body")
    as_json = run_cli(capsys, "peek", "operator", *queues.options(), *NO_WAIT, "--body", "--json")

    assert without.code == with_body.code == 0
    assert "card" not in without.out
    assert '{"secret": "card"}' in with_body.out
    assert as_json.json()["messages"][0]["body"] == '{"secret": "card"}'


def test_peek_of_more_than_one_batch_sees_each_message_once(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(25)])

    result = run_cli(
        capsys, "peek", queues.operator, *NO_WAIT, "--limit", "15", "--json"
    )  # a queue URL works as well as a role

    messages = result.json()["messages"]
    assert len(messages) == 15
    assert len({m["message_id"] for m in messages}) == 15
    assert {m["receive_count"] for m in messages} == {1}
    assert depth(sqs, queues.operator) == (25, 0)


def test_peek_with_a_selection_shows_only_the_selected_and_gives_every_message_back(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ['{"status": "failed"}'] * 4, extra={"tenant": string("acme")})
    park(sqs, queues.operator, ['{"status": "ok"}'] * 9, extra={"tenant": string("acme")})
    park(sqs, queues.operator, ['{"status": "failed"}'] * 3, extra={"tenant": string("globex")})

    result = run_cli(
        capsys,
        "peek",
        "operator",
        *queues.options(),
        *NO_WAIT,
        "--limit",
        "20",
        "--where",
        "tenant=acme",
        "--match",
        "status == 'failed'",
        "--json",
    )

    assert result.code == 0, result
    peeked = result.json()
    assert len(peeked["messages"]) == 4
    assert peeked["examined"] == 16
    assert "4 of 16 messages looked at selected" in result.err
    assert depth(sqs, queues.operator) == (16, 0)  # every message visible again at once


def test_peek_selects_by_park_reason(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a1", "a2"], reason="max-attempts")
    park(sqs, queues.operator, ["r1"], reason="rejected")
    park(sqs, queues.operator, ["c1"], reason="consumer:bad-vat")
    park(sqs, queues.operator, ["n1"], reason=None)
    argv = ("peek", "operator", *queues.options(), *NO_WAIT, "--body", "--json")

    def bodies(*reasons: str) -> list[str]:
        options = [f"--filter-reason={reason}" for reason in reasons]
        result = run_cli(capsys, *argv, *options)
        assert result.code == 0, result
        return sorted(m["body"] for m in result.json()["messages"])

    assert bodies("rejected", "none") == ["n1", "r1"]
    assert bodies("consumer:bad-vat") == ["c1"]
    assert bodies("max-attempts") == ["a1", "a2"]
    assert depth(sqs, queues.operator) == (5, 0)
    assert_one_line_error(run_cli(capsys, *argv, "--filter-reason", "typo"), 2, "typo")


def test_peek_an_empty_queue(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    result = run_cli(capsys, "peek", "operator", *queues.options(), *NO_WAIT)
    assert result.code == 0
    assert "no visible messages" in result.out


def test_peek_fifo_shows_the_group(capsys: pytest.CaptureFixture[str], sqs: SQSClient) -> None:
    fifo = make_queues(sqs, "pay", fifo=True)
    park(sqs, fifo.operator, ["a"], group="customer-7")

    result = run_cli(capsys, "peek", "operator", *fifo.options(), *NO_WAIT, "--json")

    (message,) = result.json()["messages"]
    assert message["group_id"] == "customer-7"
    assert depth(sqs, fifo.operator) == (1, 0)


# -- the receive-count rule ------------------------------------------------------------------


def _receive_times(sqs: SQSClient, url: str, times: int) -> None:
    """What failed deliveries do to receive counts: receive everything, give it back."""
    for _ in range(times):
        for message in drain_without_delete(sqs, url):
            sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )


def drain_without_delete(sqs: SQSClient, url: str) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    seen: set[str] = set()
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)
        fresh = [m for m in batch.get("Messages", []) if m["MessageId"] not in seen]
        if not fresh:
            return found
        for m in fresh:
            seen.add(m["MessageId"])
            found.append({"MessageId": m["MessageId"], "ReceiptHandle": m["ReceiptHandle"]})


def test_peek_on_the_dlq_says_so_and_shows_receives_left(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.dlq, ["a", "b"], reason=None, count="1")

    result = run_cli(capsys, "peek", "dlq", *queues.options(), *NO_WAIT, "--json")

    assert result.code == 0, result
    assert "RedrivePolicy (maxReceiveCount 10)" in result.err
    assert "raises the receive count" in result.err
    report = result.json()
    assert report["max_receive_count"] == 10
    assert [m["receives_left"] for m in report["messages"]] == [9, 9]


def test_peek_refuses_before_receiving_when_no_receive_is_to_spare(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    """The main queue moves a message to the DLQ on its 2nd receive: a peek would take the
    consumer's only delivery, so peek refuses and receives nothing."""
    wired = make_queues(sqs, "tight", main_max_receive_count=1)
    sqs.send_message(QueueUrl=wired.main, MessageBody="fresh")

    result = run_cli(capsys, "peek", "main", *wired.options(), *NO_WAIT)

    assert_one_line_error(result, 1, "tight-main", "maxReceiveCount 1", "no receive to spare")
    (message,) = sqs.receive_message(
        QueueUrl=wired.main, MessageSystemAttributeNames=["ApproximateReceiveCount"]
    )["Messages"]
    assert message["Attributes"]["ApproximateReceiveCount"] == "1"  # the peek never received


def test_peek_refuses_when_messages_arrive_with_too_many_receives(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    """A DLQ whose maxReceiveCount barely exceeds its source queue's (the safety net)."""
    wired = make_queues(sqs, "thin", main_max_receive_count=4, dlq_max_receive_count=5)

    result = run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT, "--reserve", "1")

    assert_one_line_error(result, 1, "arrives with 4 receives")


def test_peek_stops_before_pushing_messages_over_their_max_receive_count(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    """DLQ maxReceiveCount 5, messages already received 3 times: the first (single-message)
    receive leaves one receive; peek stops there, and no message leaves the DLQ."""
    wired = make_queues(sqs, "edge", main_max_receive_count=1, dlq_max_receive_count=5)
    park(sqs, wired.dlq, [f"m{i}" for i in range(6)], reason=None, count="1")
    _receive_times(sqs, wired.dlq, 3)

    result = run_cli(capsys, "peek", "dlq", *wired.options(), *NO_WAIT, "--json")

    assert result.code == 0, result
    assert "stopped" in result.err
    (shown,) = result.json()["messages"]
    assert shown["receive_count"] == 4
    assert shown["receives_left"] == 1
    assert depth(sqs, wired.dlq) == (6, 0)
    assert depth(sqs, wired.operator) == (0, 0)


def test_receive_budget_rule() -> None:
    budget = ReceiveBudget(max_receive_count=10, arrival_count=5, reserve=2)
    assert budget.fresh_left == 4
    assert not budget.exhausted
    assert budget.left(8) == 2
    assert budget.stop_after(8)
    assert not budget.stop_after(7)
    assert ReceiveBudget(max_receive_count=3, arrival_count=1, reserve=2).exhausted


def test_peek_missing_queue_is_one_line(capsys: pytest.CaptureFixture[str], sqs: SQSClient) -> None:
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue"

    result = run_cli(capsys, "peek", url, *NO_WAIT)

    assert_one_line_error(result, 1, "queue not found")


def test_peek_unknown_role_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    assert_one_line_error(run_cli(capsys, "peek", "operator"), 2, "--operator-queue-url")
    assert_one_line_error(run_cli(capsys, "peek", "elsewhere"), 2, "neither main, dlq")
    assert run_cli(capsys, "peek", "operator", "--limit", "0").code == 2
