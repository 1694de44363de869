"""The fault-injection harness (`tools/chaos.py`, `tools/soak.py`): its proxy in front of moto's
server, on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from moto.moto_server.threaded_moto_server import ThreadedMotoServer  # noqa: E402


@pytest.fixture
def moto_endpoint() -> Iterator[str]:
    """moto's server on a free port of this process, fresh for each test."""
    server = ThreadedMotoServer("127.0.0.1", 0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
