"""`dlq-replay plan`: every figure against the formulas of docs/design.md, 'Backoff and jitter'."""

from __future__ import annotations

import math
import random
import re
from typing import TYPE_CHECKING

import boto3
import pytest
from dlq_replay.cli.output import duration
from dlq_replay.cli.plan import plan_chart
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.ops.plan import (
    DEFAULT_MAIN_MAX_RECEIVE_COUNT,
    StepKind,
    backoff_plan,
    consumer_backoff_plan,
    quantile,
)

from .stack import ROOT, deploy
from .support import REGION, Queues, assert_one_line_error, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

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
    plan = backoff_plan(policy, attempts)

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
    for row in backoff_plan(policy, 5).attempts:
        draws = sorted(policy.draw(row.attempt, rng) for _ in range(4000))
        assert abs(draws[len(draws) // 2] - row.median) <= 0.05 * row.ceiling
        assert abs(draws[int(len(draws) * 0.95)] - row.p95) <= 0.03 * row.ceiling


def test_fifo_every_delay_waits_in_the_dlq() -> None:
    plan = backoff_plan(BackoffPolicy(1, 2.0, 4, Jitter.FULL), 3, fifo=True)
    # every delay but 0 waits in the DLQ: a FIFO queue takes no per-message delay
    assert [row.dlq_share for row in plan.attempts] == [1 / 2, 2 / 3, 4 / 5]


def test_quantile_edges() -> None:
    assert quantile(0, 0, 50) == 0
    assert quantile(0, 1, 50) == 0
    assert quantile(0, 99, 95) == 94  # 95 of 100 values are <= 94
    assert quantile(5, 5, 95) == 5
    with pytest.raises(ValueError, match="percent"):
        quantile(0, 10, 0)


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
    plan = backoff_plan(BackoffPolicy(60, 2.0, 900, Jitter.FULL), 3)
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


# --consumer-backoff: base 1, x2, cap 8; maxReceiveCount 3, MAX_ATTEMPTS 2.
SMALL = ["--base", "1", "--multiplier", "2", "--cap", "8", "--max-attempts", "2"]
R, D, P = StepKind.RECEIVE, StepKind.REPLAY, StepKind.PARK
# (replay count, kind, first, last, low, high, cumulative worst) with no jitter: each copy has
# receives 1, 2, 3 hidden for 1, 2, 4 s; replay n waits 1, 2 s; copy 2's failure parks.
SMALL_WORST = [
    (0, R, 1, 1, 1), (0, R, 2, 2, 3), (0, R, 3, 3, 7), (0, D, 1, 1, 8),
    (1, R, 1, 1, 9), (1, R, 2, 2, 11), (1, R, 3, 3, 15), (1, D, 2, 2, 17),
    (2, R, 1, 1, 18), (2, R, 2, 2, 20), (2, R, 3, 3, 24), (2, P, 2, 2, 24),
]  # fmt: skip
SMALL_CEILINGS = [1, 2, 4, 1, 1, 2, 4, 2, 1, 2, 4, 0]


def test_consumer_backoff_rows_without_jitter() -> None:
    plan = consumer_backoff_plan(BackoffPolicy(1, 2.0, 8, Jitter.NONE), 2, 3)

    rows = [(r.copy, r.kind, r.first, r.last, r.worst_total) for r in plan.rows]
    assert rows == SMALL_WORST
    assert [(r.low, r.high) for r in plan.rows] == [(c, c) for c in SMALL_CEILINGS]
    assert [r.best_total for r in plan.rows] == [r[-1] for r in SMALL_WORST]
    assert [r.typical_total for r in plan.rows] == [r[-1] for r in SMALL_WORST]
    assert (plan.best_total, plan.typical_total, plan.worst_total) == (24, 24.0, 24)
    assert plan.receives == 9


def test_consumer_backoff_rows_with_full_jitter() -> None:
    plan = consumer_backoff_plan(BackoffPolicy(1, 2.0, 8, Jitter.FULL), 2, 3)

    assert [(r.copy, r.kind, r.first, r.last, r.worst_total) for r in plan.rows] == SMALL_WORST
    assert [(r.low, r.high) for r in plan.rows] == [(0, c) for c in SMALL_CEILINGS]
    assert [r.best_total for r in plan.rows] == [0] * len(SMALL_WORST)
    assert [r.typical_total for r in plan.rows] == [r[-1] / 2 for r in SMALL_WORST]
    assert (plan.best_total, plan.typical_total, plan.worst_total) == (0, 12.0, 24)


def test_receives_at_the_cap_share_a_row() -> None:
    plan = consumer_backoff_plan(BackoffPolicy(1, 2.0, 4, Jitter.EQUAL), 1, 5)

    assert [(r.copy, r.kind, r.first, r.last, r.low, r.high) for r in plan.rows] == [
        (0, R, 1, 1, 1, 1), (0, R, 2, 2, 1, 2), (0, R, 3, 5, 2, 4), (0, D, 1, 1, 1, 1),
        (1, R, 1, 1, 1, 1), (1, R, 2, 2, 1, 2), (1, R, 3, 5, 2, 4), (1, P, 1, 1, 0, 0),
    ]  # fmt: skip
    assert plan.rows[2].steps == 3
    assert (plan.best_total, plan.worst_total) == (2 * (1 + 1 + 3 * 2) + 1, 2 * (1 + 2 + 12) + 1)


def test_consumer_backoff_totals_are_every_step_summed() -> None:
    """Step by step, as SQS and the replay would go, against the grouped rows' totals."""
    policy = BackoffPolicy(60, 2.0, 900, Jitter.EQUAL)
    plan = consumer_backoff_plan(policy, 100, 1000)
    best = worst = 0
    for replay in range(101):
        for receive in range(1, 1001):
            best += policy.bounds(receive)[0]
            worst += policy.bounds(receive)[1]
        if replay < 100:
            best += policy.bounds(replay + 1)[0]
            worst += policy.bounds(replay + 1)[1]
    assert (plan.best_total, plan.worst_total) == (best, worst)
    assert plan.typical_total == pytest.approx((best + worst) / 2)
    assert len(plan.rows) < 101 * 6 + 101  # the receives at the cap share a row
    assert plan.receives == 101_000


def test_consumer_backoff_refuses_a_receive_count_sqs_refuses() -> None:
    with pytest.raises(ValueError, match="main_max_receive_count"):
        consumer_backoff_plan(BackoffPolicy(), 3, 1001)


def test_the_fallback_is_the_template_default() -> None:
    text = (ROOT / "template.yaml").read_text()
    found = re.search(r"\n  MainQueueMaxReceiveCount:\n    Type: Number\n    Default: (\d+)", text)
    assert found, "MainQueueMaxReceiveCount not found in template.yaml"
    assert int(found.group(1)) == DEFAULT_MAIN_MAX_RECEIVE_COUNT


def test_without_the_flag_the_output_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    today = run_cli(capsys, "plan", *SMALL)
    combined = run_cli(
        capsys, "plan", *SMALL, "--consumer-backoff", "--main-max-receive-count", "3"
    )

    assert today.code == combined.code == 0, (today, combined)
    assert "before the DLQ" not in today.out
    assert combined.out.startswith(today.out)  # the combined schedule comes after it
    assert "before the DLQ" in combined.out[len(today.out) :]
    report = run_cli(capsys, "plan", "--json").json()
    assert set(report) == {"settings", "attempts", "until_parked_seconds"}


def test_consumer_backoff_table(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "plan", *SMALL, "--consumer-backoff", "--main-max-receive-count", "3")

    assert result.code == 0, result
    combined = result.out.split("before the DLQ", 1)[1]
    assert "maxReceiveCount 3 (--main-max-receive-count)" in combined
    assert combined.count("then SQS moves it to the DLQ") == 3
    assert "replay 1 sends a new copy" in combined
    assert "replay 2 sends a new copy" in combined
    assert "parked (replay count 2 = max attempts)" in combined
    assert (
        "parked after 3 deliveries x 3 receives (9 on the main queue) and 2 replays: "
        "typically 12s, at worst 24s, at best 0s" in combined
    )


def test_consumer_backoff_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*SMALL, "--jitter", "none", "--consumer-backoff", "--main-max-receive-count", "3"]
    report = run_cli(capsys, "plan", "--json", *argv).json()

    combined = report["consumer_backoff"]
    assert combined["main_max_receive_count"] == 3
    assert combined["from"] == "--main-max-receive-count"
    assert combined["receives"] == 9
    assert [row["worst_total"] for row in combined["rows"]] == [r[-1] for r in SMALL_WORST]
    assert [row["kind"] for row in combined["rows"]] == [r[1].value for r in SMALL_WORST]
    assert combined["until_parked_seconds"] == {"best": 24, "typical": 24.0, "worst": 24}
    assert report["until_parked_seconds"] == {"best": 3, "typical": 3.0, "worst": 3}


@pytest.mark.parametrize("value", ["0", "1001", "three"])
def test_bad_main_max_receive_count_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    result = run_cli(capsys, "plan", "--consumer-backoff", "--main-max-receive-count", value)
    assert_one_line_error(result, 2, "--main-max-receive-count", value)


def test_main_max_receive_count_needs_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "plan", "--main-max-receive-count", "3")
    assert_one_line_error(result, 2, "--main-max-receive-count needs --consumer-backoff")


def _receive_count_default(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    result = run_cli(capsys, "plan", "--consumer-backoff", "--json", *argv)
    assert result.code == 0, result
    combined = result.json()["consumer_backoff"]
    return combined["main_max_receive_count"], combined["from"]


def test_receive_count_from_the_main_queue(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, queues: Queues
) -> None:
    monkeypatch.setenv("MAIN_QUEUE_URL", queues.main)  # wired with maxReceiveCount 3
    assert _receive_count_default(capsys) == (3, "RedrivePolicy of orders-main")
    assert _receive_count_default(capsys, "--main-max-receive-count", "7") == (
        7,
        "--main-max-receive-count",
    )


def test_receive_count_falls_back_to_the_template_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, sqs: SQSClient
) -> None:
    assert _receive_count_default(capsys) == (5, "template default 5: no main queue known")
    plain = sqs.create_queue(QueueName="plain")["QueueUrl"]
    monkeypatch.setenv("MAIN_QUEUE_URL", plain)
    assert _receive_count_default(capsys) == (5, "template default 5: plain has no RedrivePolicy")
    monkeypatch.setenv("MAIN_QUEUE_URL", plain.replace("plain", "gone"))
    count, origin = _receive_count_default(capsys)
    assert count == 5
    assert origin.startswith("template default 5: gone not read: queue not found")


def test_receive_count_from_the_stack(capsys: pytest.CaptureFixture[str], aws: None) -> None:
    deploy(boto3.client("cloudformation", region_name=REGION), "orders-replay")
    count, origin = _receive_count_default(capsys, "--stack", "orders-replay")
    assert count == 5  # the stand-in stack's main queue
    assert origin.startswith("RedrivePolicy of orders-replay-MainQueue")


def test_a_stack_without_a_main_queue(capsys: pytest.CaptureFixture[str], aws: None) -> None:
    deploy(boto3.client("cloudformation", region_name=REGION), "shared-dlq", create_main=False)
    count, origin = _receive_count_default(capsys, "--stack", "shared-dlq")
    assert (count, origin) == (5, "template default 5: no main queue known")
