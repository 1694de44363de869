"""Fixtures for the unit tests of the pure core."""

from __future__ import annotations

import random

import pytest
from dlq_replay.core.settings import Settings

from ._support import make_settings


@pytest.fixture
def rng() -> random.Random:
    """A seeded random source: every test run draws the same delays."""
    return random.Random(20_240_601)


@pytest.fixture
def settings() -> Settings:
    """The function's defaults with a standard main queue and operator queue."""
    return make_settings()
