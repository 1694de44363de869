"""A move split over two processes (ops.processes), its pure parts: the two tallies and
leftovers seen as one run's, and which moves cannot be split."""

from __future__ import annotations

from dataclasses import replace

import pytest
from dlq_replay.ops.processes import merged, merged_leftover, why_not_split
from dlq_replay.ops.queues import QueueInfo
from dlq_replay.ops.redrive import Leftover, RedriveRequest, RedriveTally

SOURCE = QueueInfo(
    url="https://sqs.us-east-1.amazonaws.com/123456789012/orders-operator",
    arn="arn:aws:sqs:us-east-1:123456789012:orders-operator",
    fifo=False,
    visibility_timeout=30,
    redrive=None,
)


def test_two_tallies_that_add_up_make_one_that_adds_up() -> None:
    first = RedriveTally(seen=31, moved=20, failed=1, given_back=5, unsettled=5, failures={"x": 1})
    second = RedriveTally(seen=12, moved=9, skipped=3, skips={"filtered": 3}, hidden_until=50.0)
    assert first.adds_up
    assert second.adds_up
    both = merged(first, second)
    assert both.adds_up
    assert (both.seen, both.moved, both.failed, both.skipped, both.processes) == (43, 29, 1, 3, 2)
    assert (both.failures, both.skips, both.hidden_until) == ({"x": 1}, {"filtered": 3}, 50.0)


def test_two_leftovers_sum_and_keep_the_latest_times() -> None:
    first = Leftover(10, 100.0, 1, 2, receives=1, receiving_up_to=10, receiving_until=200.0)
    second = Leftover(4, 150.0, 0, 3, deleting=2, releasing=1)
    both = merged_leftover(first, second)
    assert (both.hidden, both.sent_not_deleted, both.unconfirmed) == (14, 1, 5)
    assert (both.hidden_until, both.receiving_until) == (150.0, 200.0)
    assert (both.at_most, both.deleting, both.releasing) == (24, 2, 1)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"rate": 5.0}, "--rate"),
        ({"limit": 100}, "--limit"),
        ({"keep": True, "dry_run": True}, "--keep, --dry-run"),
        ({"concurrency": 1}, "--concurrency 1"),
    ],
)
@pytest.mark.usefixtures("linux_one_thread")
def test_what_shares_one_count_is_not_split(change: dict[str, object], why: str) -> None:
    request = replace(RedriveRequest(source=SOURCE, destination=None), **change)  # type: ignore[arg-type]
    assert (why_not_split(request) or "").startswith(why)


@pytest.fixture
def linux_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the split needs of the process, whatever runs the tests (pytest-xdist's threads)."""
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setattr("threading.active_count", lambda: 1)


@pytest.mark.usefixtures("linux_one_thread")
def test_a_plain_move_can_be_split_on_linux_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert why_not_split(RedriveRequest(source=SOURCE, destination=None)) is None
    monkeypatch.setattr("sys.platform", "darwin")
    assert why_not_split(RedriveRequest(source=SOURCE, destination=None)) == (
        "a second process is forked on Linux only"
    )
