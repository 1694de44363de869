"""The demo's closing line about the outage breaker tells an opening in a staged outage from
one with no outage at all, which it must not pass off as the breaker's normal work."""

from __future__ import annotations

from dlq_replay.demo.scenario import DemoResult
from dlq_replay.demo.view import breaker_line, summary


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
