"""Backoff ceilings, cap-before-jitter and each jitter's range and empirical distribution."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

import pytest
from dlq_replay.core.backoff import BackoffPolicy, Jitter

from ._support import NoRandom

DRAWS = 20_000
# Chi-square critical value for 9 degrees of freedom at p = 0.001.
CHI2_9_DOF_P001 = 27.88


def draws(policy: BackoffPolicy, attempt: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [policy.draw(attempt, rng) for _ in range(DRAWS)]


def chi_square_uniform(values: Sequence[int], low: int, high: int, buckets: int = 10) -> float:
    """Chi-square statistic of integer draws against the discrete uniform over [low, high]."""
    span = high - low + 1
    observed = [0] * buckets
    expected = [0.0] * buckets
    for value in range(low, high + 1):
        expected[(value - low) * buckets // span] += len(values) / span
    for value in values:
        observed[(value - low) * buckets // span] += 1
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))


@pytest.mark.parametrize(
    ("base", "multiplier", "cap", "expected"),
    [
        (60, 2.0, 900, [60, 120, 240, 480, 900, 900, 900]),
        (1, 3.0, 43_200, [1, 3, 9, 27, 81, 243, 729, 2187, 6561, 19683, 43_200, 43_200]),
        (10, 1.5, 1000, [10, 15, 22, 33, 50, 75, 113, 170, 256, 384, 576, 864, 1000, 1000]),
        (5, 1.0, 900, [5, 5, 5, 5, 5]),
        (1000, 2.0, 900, [900, 900, 900]),  # a base above the cap is capped from the start
        (900, 2.0, 900, [900, 900]),
        (7, 1.0, 3, [3, 3]),
    ],
)
def test_ceiling_per_attempt(base: int, multiplier: float, cap: int, expected: list[int]) -> None:
    policy = BackoffPolicy(base, multiplier, cap, Jitter.NONE)
    assert [policy.ceiling(n) for n in range(1, len(expected) + 1)] == expected


@pytest.mark.parametrize(
    ("multiplier", "attempt"), [(10.0, 100), (1000.0, 100), (1e300, 2), (2.0, 10_000)]
)
def test_ceiling_does_not_overflow(multiplier: float, attempt: int) -> None:
    policy = BackoffPolicy(60, multiplier, 43_200, Jitter.FULL)
    assert policy.ceiling(attempt) == 43_200
    assert policy.bounds(attempt) == (0, 43_200)
    delay = policy.draw(attempt, random.Random(3))
    assert type(delay) is int
    assert 0 <= delay <= 43_200


def test_ceiling_rejects_attempt_zero() -> None:
    with pytest.raises(ValueError, match="attempt must be >= 1, got 0"):
        BackoffPolicy().ceiling(0)


@pytest.mark.parametrize(
    ("jitter", "attempt", "expected"),
    [
        (Jitter.FULL, 1, (0, 60)),
        (Jitter.FULL, 3, (0, 240)),
        (Jitter.FULL, 9, (0, 900)),
        (Jitter.EQUAL, 1, (30, 60)),
        (Jitter.EQUAL, 3, (120, 240)),
        (Jitter.EQUAL, 9, (450, 900)),
        (Jitter.DECORRELATED, 1, (30, 60)),
        (Jitter.DECORRELATED, 2, (60, 120)),
        (Jitter.DECORRELATED, 3, (60, 240)),
        (Jitter.DECORRELATED, 9, (60, 900)),
        (Jitter.NONE, 1, (60, 60)),
        (Jitter.NONE, 9, (900, 900)),
    ],
)
def test_bounds_per_jitter(jitter: Jitter, attempt: int, expected: tuple[int, int]) -> None:
    assert BackoffPolicy(60, 2.0, 900, jitter).bounds(attempt) == expected


def test_equal_jitter_rounds_its_floor_up() -> None:
    assert BackoffPolicy(1, 2.0, 900, Jitter.EQUAL).bounds(1) == (1, 1)
    assert BackoffPolicy(5, 1.0, 900, Jitter.EQUAL).bounds(4) == (3, 5)


@pytest.mark.parametrize(
    ("jitter", "low", "high", "mean"),
    [
        (Jitter.FULL, 0, 240, 120.0),
        (Jitter.EQUAL, 120, 240, 180.0),
        (Jitter.DECORRELATED, 60, 240, 150.0),
    ],
)
def test_jitter_distribution_is_uniform_over_its_range(
    jitter: Jitter, low: int, high: int, mean: float
) -> None:
    values = draws(BackoffPolicy(60, 2.0, 900, jitter), 3)
    assert all(type(v) is int for v in values)
    assert min(values) == low
    assert max(values) == high
    # Standard error of the mean over 20k uniform draws is below 0.5 s here.
    assert statistics.fmean(values) == pytest.approx(mean, abs=2.5)
    assert chi_square_uniform(values, low, high) < CHI2_9_DOF_P001


def test_full_jitter_at_a_capped_attempt_spreads_over_zero_to_cap() -> None:
    # Uncapped, attempt 12 would have a ceiling of 60 * 2^11 = 122880 s; capping *after* the
    # jitter would then pile ~99% of the draws onto 900.
    values = draws(BackoffPolicy(60, 2.0, 900, Jitter.FULL), 12, seed=7)
    assert min(values) == 0
    assert max(values) == 900
    assert values.count(900) / DRAWS < 0.005  # uniform: 1/901 of the draws
    assert sum(v < 450 for v in values) / DRAWS == pytest.approx(0.5, abs=0.02)
    assert statistics.fmean(values) == pytest.approx(450.0, abs=8)
    assert chi_square_uniform(values, 0, 900) < CHI2_9_DOF_P001


def test_equal_jitter_at_a_capped_attempt_spreads_over_half_cap_to_cap() -> None:
    values = draws(BackoffPolicy(60, 2.0, 43_200, Jitter.EQUAL), 20, seed=11)
    assert min(values) >= 21_600
    assert max(values) <= 43_200
    assert values.count(43_200) / DRAWS < 0.005
    assert statistics.fmean(values) == pytest.approx(32_400.0, abs=200)
    assert chi_square_uniform(values, 21_600, 43_200) < CHI2_9_DOF_P001


def test_draw_is_reproducible_with_a_seed() -> None:
    policy = BackoffPolicy(60, 2.0, 900, Jitter.FULL)
    first = [policy.draw(n, random.Random(42)) for n in range(1, 8)]
    again = [policy.draw(n, random.Random(42)) for n in range(1, 8)]
    assert first == again
    assert first == [random.Random(42).randint(0, policy.ceiling(n)) for n in range(1, 8)]


@pytest.mark.parametrize(
    ("base", "multiplier", "cap", "expected"),
    [
        (60, 2.0, 900, [60, 120, 240, 480, 900, 900]),
        (10, 1.5, 43_200, [10, 15, 22, 33, 50, 75]),
    ],
)
def test_no_jitter_is_exactly_the_ceiling_and_draws_nothing(
    base: int, multiplier: float, cap: int, expected: list[int]
) -> None:
    policy = BackoffPolicy(base, multiplier, cap, Jitter.NONE)
    delays = [policy.draw(n, NoRandom()) for n in range(1, len(expected) + 1)]
    assert delays == expected
    assert all(type(d) is int for d in delays)


def test_jitter_values_are_the_documented_names() -> None:
    assert [j.value for j in Jitter] == ["full", "equal", "decorrelated", "none"]
    assert BackoffPolicy() == BackoffPolicy(60, 2.0, 900, Jitter.FULL)


@pytest.mark.parametrize(
    ("base", "multiplier", "cap"),
    [(60, 2.0, 900), (1, 1.1, 43_200), (7, 1.37, 5000), (100, 3.0, 900), (1000, 1.2, 1440)],
)
def test_ceilings_never_decrease_and_reach_the_cap(base: int, multiplier: float, cap: int) -> None:
    policy = BackoffPolicy(base, multiplier, cap, Jitter.FULL)
    ceilings = [policy.ceiling(n) for n in range(1, 201)]
    assert ceilings == sorted(ceilings)
    assert ceilings[0] == min(base, cap)
    assert ceilings[-1] == cap
    assert all(type(c) is int and 1 <= c <= cap for c in ceilings)
