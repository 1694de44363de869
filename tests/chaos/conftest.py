"""The fault-injection harness (`tools/chaos.py`, `tools/soak.py`): its proxy in front of moto's
server, on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dlq_replay.demo.emulator import emulator

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def moto_endpoint() -> Iterator[str]:
    """moto's server on a free port of this process, fresh for each test."""
    with emulator() as endpoint:
        yield endpoint
