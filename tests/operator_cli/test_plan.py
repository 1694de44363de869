"""`dlq-replay plan`: every figure against the formulas of DESIGN.md §3."""

from __future__ import annotations

import math
import random

import pytest
from dlq_replay import ops
from dlq_replay.cli.output import duration
from dlq_replay.cli.plan import plan_chart
from dlq_replay.core.backoff import BackoffPolicy, Jitter

from .support import assert_one_line_error, run_cli

POLICIES = [
    BackoffPolicy(60, 2.0, 900, Jitter.FULL),  # the defaults
    BackoffPolicy(45, 1.5, 1000, Jitter.FULL),  # odd ceilings, a cap not on the curve
    BackoffPolicy(1, 3.0, 43_200, Jitter.EQUAL),
    BackoffPolicy(120, 2.0, 600, Jitter.DECORRELATED),
    BackoffPolicy(30, 1.0, 900, Jitter.NONE),
    BackoffPolicy(7, 10.0, 5000, Jitter.FULL),
]


def smallest_at_least(low: int, high: int, share: float) -> int:
    """The quantile by enumeration: the smallest v with P(X <= v) >= share."""
    values = range(low, high + 1)
    return next(v for v in values if (v - low + 1) / len(values) >= share)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: f"{p.jitter}-{p.base_seconds}")
def test_figures_follow_design_section_3(policy: BackoffPolicy) -> None:
    attempts = 12
    plan = ops.backoff_plan(policy, attempts)

    typical = 0.0
    worst = 0
    for n, row in enumerate(plan.attempts, start=1):
        ceiling = min(
            policy.cap_seconds, math.floor(policy.base_seconds * policy.multiplier ** (n - 1))
        )
        assert row.ceiling == ceiling == row.high
        low = {
            Jitter.FULL: 0,
            Jitter.EQUAL: math.ceil(ceiling / 2),
            Jitter.DECORRELATED: min(policy.base_seconds, math.ceil(ceiling / 2)),
            Jitter.NONE: ceiling,
        }[policy.jitter]
        assert row.low == low
        assert row.median == smallest_at_least(low, ceiling, 0.5)
        assert row.p95 == smallest_at_least(low, ceiling, 0.95)
        if policy.jitter is Jitter.FULL:
            assert row.median == ceiling // 2  # full jitter: half the ceiling
            assert row.p95 == math.ceil(0.95 * (ceiling + 1)) - 1
        if policy.jitter is Jitter.NONE:
            assert row.median == row.p95 == ceiling
        typical += (low + ceiling) / 2
        worst += ceiling
        assert row.typical_total == pytest.approx(typical)
        assert row.worst_total == worst
        over = [d for d in range(low, ceiling + 1) if d > 900]  # the long-delay path (§4)
        assert row.dlq_share == pytest.approx(len(over) / (ceiling - low + 1))
    assert plan.typical_total == pytest.approx(typical)
    assert plan.worst_total == worst
    assert plan.best_total == sum(row.low for row in plan.attempts)


def test_the_figures_match_what_the_replay_draws() -> None:
    """The plan describes BackoffPolicy.draw itself: its sampled quantiles agree."""
    policy = BackoffPolicy(60, 2.0, 900, Jitter.FULL)
    rng = random.Random(7)
    for row in ops.backoff_plan(policy, 5).attempts:
        draws = sorted(policy.draw(row.attempt, rng) for _ in range(4000))
        assert abs(draws[len(draws) // 2] - row.median) <= 0.05 * row.ceiling
        assert abs(draws[int(len(draws) * 0.95)] - row.p95) <= 0.03 * row.ceiling


def test_fifo_every_delay_waits_in_the_dlq() -> None:
    plan = ops.backoff_plan(BackoffPolicy(1, 2.0, 4, Jitter.FULL), 3, fifo=True)
    # every delay but 0 waits in the DLQ: a FIFO queue takes no per-message delay
    assert [row.dlq_share for row in plan.attempts] == [1 / 2, 2 / 3, 4 / 5]


def test_quantile_edges() -> None:
    assert ops.quantile(0, 0, 50) == 0
    assert ops.quantile(0, 1, 50) == 0
    assert ops.quantile(0, 99, 95) == 94  # 95 of 100 values are <= 94
    assert ops.quantile(5, 5, 95) == 5
    with pytest.raises(ValueError, match="percent"):
        ops.quantile(0, 10, 0)


def test_plan_defaults_come_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKOFF_BASE_SECONDS", "10")
    monkeypatch.setenv("MAX_ATTEMPTS", "4")

    result = run_cli(capsys, "plan", "--json", "--multiplier", "3")

    assert result.code == 0, result
    report = result.json()
    assert report["settings"] | {"from": None} == {
        "base_seconds": 10,
        "multiplier": 3.0,
        "cap_seconds": 900,
        "jitter": "full",
        "max_attempts": 4,
        "fifo": False,
        "from": None,
    }
    assert [a["ceiling"] for a in report["attempts"]] == [10, 30, 90, 270]
    assert report["until_parked_seconds"] == {"best": 0, "typical": 200.0, "worst": 400}
    assert report["settings"]["from"] == "environment, overridden by options: BACKOFF_MULTIPLIER=3"


def test_plan_with_nothing_set_says_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "plan", "--json").json()["settings"]["from"] == "defaults"
    assert "(environment)" not in run_cli(capsys, "plan").out


def test_plan_prints_a_table_and_a_chart(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "plan")

    assert result.code == 0, result
    assert "total median" in result.out
    assert "parked after 3 replays: typically 3m 30s of backoff, at worst 7m" in result.out
    chart = [line for line in result.out.splitlines() if line.startswith(("1 |", "2 |", "3 |"))]
    assert len(chart) == 3


def test_chart_is_to_scale() -> None:
    plan = ops.backoff_plan(BackoffPolicy(60, 2.0, 900, Jitter.FULL), 3)
    lines = plan_chart(plan, width=40)
    bars = [line.split("|")[1] for line in lines[1:]]
    assert bars[2].rstrip() == "#" * 20 + "=" * 18 + "-" * 2  # 120 / 228 / 240 s of 240
    assert bars[0].rstrip() == "#" * 5 + "=" * 5  # 30 / 57 / 60 s


def test_durations() -> None:
    assert [duration(s) for s in (0, 59, 60, 90, 3600, 3660, 86_400, 90_000)] == [
        "0s",
        "59s",
        "1m",
        "1m 30s",
        "1h",
        "1h 1m",
        "1d",
        "1d 1h",
    ]


def test_bad_settings_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(
        run_cli(capsys, "plan", "--jitter", "wild"), 2, "--jitter", "'wild'", "[JITTER]"
    )
    assert_one_line_error(run_cli(capsys, "plan", "--max-attempts", "0"), 2, "MAX_ATTEMPTS")
    assert_one_line_error(run_cli(capsys, "plan", "--cap", "50000"), 2, "BACKOFF_CAP_SECONDS")
