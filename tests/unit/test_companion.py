"""The second process of a redrive, its pure parts: which moves it fits, when the command
starts one by default, and two tallies and leftovers read as one."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import pytest
from dlq_replay.cli import prestart
from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.companion import (
    WORTH_IT_FROM,
    Companion,
    CompanionSetup,
    companion_fits,
    processes_for,
)
from dlq_replay.ops.movestate import combined
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.receiving import Sighting
from dlq_replay.ops.redrive import Leftover, RedriveRequest, RedriveTally
from dlq_replay.ops.select import Selector
from hypothesis import given
from hypothesis import strategies as st

SOURCE = QueueInfo(
    url="https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq",
    arn="arn:aws:sqs:us-east-1:123456789012:orders-dlq",
    fifo=False,
    visibility_timeout=30,
    redrive=None,
)
DESTINATION = replace(
    SOURCE,
    url="https://sqs.us-east-1.amazonaws.com/123456789012/orders",
    arn="arn:aws:sqs:us-east-1:123456789012:orders",
)
PLAIN = RedriveRequest(source=SOURCE, destination=DESTINATION)
UNFIT = {
    "limit": replace(PLAIN, limit=10),
    "rate": replace(PLAIN, rate=5.0),
    "keep": replace(PLAIN, keep=True),
    "dry run": replace(PLAIN, dry_run=True),
    "selection": replace(PLAIN, selector=Selector(reasons=frozenset({"max-attempts"}))),
    "targets": replace(PLAIN, target_arns=frozenset({"arn:aws:lambda:us-east-1:1:function:f"})),
}


def test_a_plain_move_fits_and_every_shared_constraint_does_not() -> None:
    assert companion_fits(PLAIN)
    assert companion_fits(replace(PLAIN, reset_count=True, destination=None))
    assert [name for name, request in UNFIT.items() if companion_fits(request)] == []


def test_a_move_it_does_not_fit_is_refused_before_it_starts() -> None:
    companion = Companion(CompanionSetup(None, "us-east-1", None))
    with pytest.raises(ValueError, match="second process"):
        ClientMove(None, UNFIT["limit"], companion=companion)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("asked", "approximate", "cores", "processes"),
    [
        (None, WORTH_IT_FROM, 2, 2),
        (None, WORTH_IT_FROM - 1, 2, 1),  # the child's start-up would not pay
        (None, 50_000, 1, 1),  # one core: a second process only takes turns with the first
        (2, 10, 1, 2),  # asked for
        (1, 50_000, 8, 1),
    ],
)
def test_a_second_process_moves_when_asked_or_worth_it(
    asked: int | None, approximate: int, cores: int, processes: int
) -> None:
    assert processes_for(asked, PLAIN, approximate, cores) == (processes, None)


def test_a_move_it_does_not_fit_runs_in_one_process_said_only_when_asked() -> None:
    assert processes_for(None, UNFIT["rate"], 50_000, 8) == (1, None)
    processes, why = processes_for(2, UNFIT["rate"], 50_000, 8)
    assert processes == 1
    assert why is not None
    assert why.startswith("--processes 2 applies to a move of everything")


counts = st.integers(min_value=0, max_value=1_000)
codes = st.dictionaries(st.sampled_from(["Throttled", "AccessDenied", "send-failed"]), counts)


@st.composite
def tallies(draw: st.DrawFn) -> RedriveTally:
    """A tally that adds up, as each process's does."""
    failures, skips = draw(codes), draw(codes)
    moved, sent_not_deleted, given_back, unsettled = (draw(counts) for _ in range(4))
    seen = moved + sent_not_deleted + sum(failures.values()) + sum(skips.values())
    return RedriveTally(
        seen=seen + given_back + unsettled,
        moved=moved,
        sent_not_deleted=sent_not_deleted,
        failed=sum(failures.values()),
        skipped=sum(skips.values()),
        given_back=given_back,
        unsettled=unsettled,
        failures=failures,
        skips=skips,
        interrupted=draw(st.booleans()),
        hidden_until=draw(st.none() | st.floats(0, 2e9)),
    )


@given(tallies(), tallies())
def test_two_tallies_that_add_up_make_one_that_adds_up(
    one: RedriveTally, other: RedriveTally
) -> None:
    both = combined(one, other)

    assert both.adds_up
    assert both.seen == one.seen + other.seen
    assert both.failed == sum(both.failures.values())
    assert both.skipped == sum(both.skips.values())
    assert both.interrupted == (one.interrupted or other.interrupted)
    ends = [t for t in (one.hidden_until, other.hidden_until) if t is not None]
    assert both.hidden_until == (max(ends) if ends else None)


def test_two_leftovers_make_one_that_holds_both() -> None:
    one = Leftover(hidden=3, hidden_until=100.0, sent_not_deleted=1, unconfirmed=2, receives=1)
    other = Leftover(hidden=5, hidden_until=None, sent_not_deleted=0, unconfirmed=1, deleting=2)

    both = combined(one, other)

    assert (both.hidden, both.hidden_until, both.at_most) == (8, 100.0, 8)
    assert (both.sent_not_deleted, both.unconfirmed, both.receives, both.deleting) == (1, 3, 1, 2)


def test_a_sighting_takes_what_the_other_process_saw() -> None:
    mine = Sighting(near={"a": 3}, counts={1: "x"}, removed={"r1"})
    mine.add(Sighting(near={"a": 4, "b": 2}, counts={1: "y", 2: "z"}, removed={"r2"}))

    assert mine.near == {"a": 4, "b": 2}
    assert mine.counts == {1: "x", 2: "z"}
    assert mine.removed == {"r1", "r2"}


@pytest.mark.parametrize(
    ("arguments", "started"),
    [
        (["redrive", "--client-side"], True),
        (["redrive", "--from", "dlq", "--reset-count"], True),
        (["redrive"], False),  # native or client-side: the queues decide, after the pre-flight
        (["peek", "--client-side"], False),
        (["redrive", "--client-side", "--processes", "2"], False),  # started once parsed
        (["redrive", "--client-side", "--processes=1"], False),
    ],
)
def test_the_command_line_alone_starts_a_second_process_early(
    arguments: list[str], started: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
    monkeypatch.setattr(prestart, "CHILD", waiting)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})

    prestart.prestart(arguments)
    child = prestart.take()

    assert (child is not None) is started
    assert prestart.take() is None  # taken once
    if child is not None:
        assert child.stdin is not None
        child.stdin.close()  # let go: it ends at the end of its input
        assert child.wait(timeout=10) == 0


def test_one_core_starts_no_second_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    prestart.prestart(["redrive", "--client-side"])
    assert prestart.take() is None


def test_without_the_affinity_call_the_machine_s_cores_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS has no sched_getaffinity: a Mac's cores still count (one core was assumed)."""
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert prestart.usable_cores() == 8
