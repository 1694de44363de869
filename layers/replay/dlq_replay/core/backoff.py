"""Exponential backoff with jitter, stateless between attempts. The cap bounds the ceiling
*before* a delay is drawn, so a jittered delay never collapses onto the cap (the well-known
sample capped after the jitter put every late retry on the same second)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

# SQS limits, in seconds: per-message DelaySeconds and the visibility timeout.
MAX_SQS_DELAY_SECONDS = 900
MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200


class Jitter(StrEnum):
    """How a delay is drawn below its ceiling."""

    FULL = "full"  # uniform over [0, ceiling]
    EQUAL = "equal"  # uniform over [ceiling / 2, ceiling]
    DECORRELATED = "decorrelated"  # uniform over [min(base, ceiling / 2), ceiling]
    NONE = "none"  # exactly the ceiling


class RandomSource(Protocol):
    """The part of `random.Random` the backoff uses; tests pass a seeded one."""

    def randint(self, a: int, b: int) -> int: ...


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    base_seconds: int = 60
    multiplier: float = 2.0
    cap_seconds: int = 900
    jitter: Jitter = Jitter.FULL

    def __post_init__(self) -> None:
        """Refuse, at construction, a policy built in code that `Settings` would refuse."""
        for name in ("base_seconds", "cap_seconds"):
            value = getattr(self, name)
            if not 1 <= value <= MAX_VISIBILITY_TIMEOUT_SECONDS:
                raise ValueError(
                    f"{name} must be from 1 to {MAX_VISIBILITY_TIMEOUT_SECONDS}, got {value}"
                )
        if not self.multiplier >= 1 or math.isinf(self.multiplier):
            raise ValueError(f"multiplier must be a number >= 1, got {self.multiplier}")
        Jitter(self.jitter)

    def ceiling(self, attempt: int) -> int:
        """min(cap, base x multiplier^(attempt-1)), compared in log space (no float overflow)."""
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        exponent = attempt - 1
        if self.multiplier > 1 and exponent * math.log(self.multiplier) >= math.log(
            self.cap_seconds / self.base_seconds
        ):
            return self.cap_seconds
        return min(self.cap_seconds, math.floor(self.base_seconds * self.multiplier**exponent))

    def bounds(self, attempt: int) -> tuple[int, int]:
        high = self.ceiling(attempt)
        match self.jitter:
            case Jitter.FULL:
                low = 0
            case Jitter.EQUAL:
                low = math.ceil(high / 2)
            case Jitter.DECORRELATED:
                # Brooker's decorrelated jitter, stateless: the capped ceiling stands in for
                # 3 x the previous sleep, and the floor never passes half of it.
                low = min(self.base_seconds, math.ceil(high / 2))
            case Jitter.NONE:
                low = high
        return low, high

    def draw(self, attempt: int, rng: RandomSource) -> int:
        low, high = self.bounds(attempt)
        return low if low == high else rng.randint(low, high)


class KeyedRandom:
    """`randint` from a 64-bit hash of a key, the same in every process: a record decided again
    draws the same delay (on FIFO, the same deduplication id). A seeded `random.Random` cost a
    tenth of the replay's CPU per record."""

    __slots__ = ("_value",)

    def __init__(self, key: str) -> None:
        digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
        self._value = int.from_bytes(digest, "big")

    def randint(self, a: int, b: int) -> int:
        if b < a:
            raise ValueError(f"empty range for randint({a}, {b})")
        return a + self._value % (b - a + 1)
