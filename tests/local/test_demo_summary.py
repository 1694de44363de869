"""The demo's closing line about the outage breaker tells an opening in a staged outage from
one with no outage at all, which it must not pass off as the breaker's normal work; and while
the breaker is open or probing, the progress (plain and live) says so, until when, and how
many wait."""

from __future__ import annotations

import io
import re
import time

from dlq_replay.breaker.breaker_state import BreakerState, Phase
from dlq_replay.breaker.worker_side import BreakerStats
from dlq_replay.demo.run import progress_line
from dlq_replay.demo.scenario import DemoResult, Tally
from dlq_replay.demo.view import breaker_line, breaker_progress, render, summary
from dlq_replay.sqs.depth import QueueDepth
from rich.console import Console


def result(openings: int, outage_seconds: float) -> DemoResult:
    return DemoResult(
        sent=1000,
        processed=900,
        parked=100,
        not_yet_done=0,
        lost=0,
        parked_by_reason={"max-attempts": 100},
        deliveries_by_attempt={0: 1000},
        replays=500,
        consumer_backoffs=0,
        seconds=50.0,
        completed=True,
        breaker=True,
        breaker_openings=openings,
        breaker_open_seconds=40.0 if openings else 0.0,
        outage_seconds=outage_seconds,
    )


def test_an_opening_without_an_outage_is_called_a_false_alarm() -> None:
    line = breaker_line(result(3, 0))
    assert line.startswith("outage breaker: opened 3 times, open 40 s in all")
    assert "no outage staged" in line
    assert "false alarm" in line
    assert "no outage staged" in summary(result(3, 0))


def test_an_opening_in_a_staged_outage_says_so() -> None:
    line = breaker_line(result(1, 60))
    assert line == "outage breaker: opened once, open 40 s in all, for the staged 60 s outage"


def test_never_opened_needs_no_comment() -> None:
    assert breaker_line(result(0, 0)) == "outage breaker: never opened"


def test_an_open_breaker_says_since_when_when_it_probes_and_how_many_wait() -> None:
    # The demo is 30 s in at wall-clock 1004: it opened at 1000 (26 s in), probes at 1010.
    opened = BreakerState(Phase.OPEN, since=1000.0, next_probe=1010.0, openings=2)
    assert breaker_progress(opened, elapsed=30.0, now=1004.0, waiting=300) == (
        "outage breaker open since 26 s, probing at 36 s (in 6 s), 300 waiting in the DLQ"
    )
    holding = BreakerState(Phase.HALF_OPEN, since=1010.0, holding=True, probe_size=40)
    assert breaker_progress(holding, elapsed=40.0, now=1014.0, waiting=260) == (
        "outage breaker probing since 36 s: 40 copies sent, watching the DLQ for them, "
        "260 waiting in the DLQ"
    )
    probing = BreakerState(Phase.HALF_OPEN, since=1010.0)
    assert breaker_progress(probing, elapsed=40.0, now=1014.0, waiting=None) == (
        "outage breaker probing since 36 s"
    )
    closed = BreakerState(Phase.CLOSED, since=1020.0)
    assert breaker_progress(closed, elapsed=50.0, now=1024.0, waiting=0) == ""
    assert breaker_progress(None, elapsed=50.0, now=1024.0, waiting=0) == ""


OPEN_LINE = re.compile(
    r"outage breaker open since \d+ s, probing at \d+ s \(in \d+ s\), 300 waiting in the DLQ"
)


def tally_with_breaker(state: BreakerState) -> Tally:
    stats = BreakerStats()
    stats.follow(state)
    tally = Tally(expected={f"m{i}" for i in range(300)}, breaker=stats)
    tally.depths.update(dlq=QueueDepth(300, 0, 0), main=QueueDepth(0, 0, 0))
    return tally


def test_the_progress_shows_the_open_breaker_in_plain_and_live_mode() -> None:
    now = time.time()
    tally = tally_with_breaker(BreakerState(Phase.OPEN, since=now - 3, next_probe=now + 7))
    line = progress_line(tally, 10.0)
    assert line.startswith("demo: 10 s: 0 processed, 0 parked of 300; in the queues: dlq 300")
    assert OPEN_LINE.search(line), line
    console = Console(record=True, width=120, file=io.StringIO())
    console.print(render(tally, time.monotonic() - 10.0))
    assert OPEN_LINE.search(console.export_text()), console.export_text()


def test_a_closed_breaker_adds_nothing_to_the_progress() -> None:
    tally = tally_with_breaker(BreakerState(Phase.CLOSED, since=time.time()))
    assert "breaker" not in progress_line(tally, 10.0)
    console = Console(record=True, width=120, file=io.StringIO())
    console.print(render(tally, time.monotonic() - 10.0))
    assert "breaker" not in console.export_text()
