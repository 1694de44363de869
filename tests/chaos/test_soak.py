"""The short seeded soak of `make test`: messages through the whole failure path with the proxy
injecting every fault kind, the worker SIGKILLed and restarted, and then every id accounted
for. `make soak N=10000` is the long one."""

from __future__ import annotations

import pytest

from tools.soak import SoakOptions, soak


@pytest.mark.parametrize(
    "options",
    [
        SoakOptions(messages=300, seed=11, path="worker", kills=2, max_seconds=150),
        SoakOptions(messages=200, seed=12, path="lambda", kills=1, max_seconds=150),
    ],
    ids=["worker-with-kills", "lambda-handler"],
)
def test_nothing_is_lost(options: SoakOptions) -> None:
    result = soak(options)
    # Every assertion says the whole result: a failure under load must tell what happened.
    told = f"{result.line()}; {result.seconds:.0f} s; parked {result.parked_by_reason}"

    assert result.lost == 0, told
    assert result.consumed + result.parked + result.in_dlq + result.in_main == options.messages, (
        told
    )
    assert sum(result.faults.values()) > 0, told  # the proxy did inject faults
    # "(safety net)": SQS's own redrive moved a record the replay failed DLQ_MAX_RECEIVES times
    # (a replay slowed past the DLQ's visibility timeout): parked, so not lost.
    known = {"invalid-count", "attribute-limit", "max-attempts", "(no reason)", "(safety net)"}
    assert set(result.parked_by_reason) <= known, told
