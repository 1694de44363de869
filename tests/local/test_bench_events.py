"""The benchmarks' in-memory EventBridge (bench/events_http.py) answers boto3's
`ListTargetsByRule` with the targets it was given, counts the reads, and refuses the rest."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.exceptions import ClientError

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from events_http import FakeEvents  # noqa: E402

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient

TARGET = {"Id": "q", "Arn": "arn:aws:sqs:us-east-1:123456789012:bench-target", "Input": "{}"}


@pytest.fixture
def server() -> Iterator[FakeEvents]:
    fake = FakeEvents(latency=0, rules={"bench-rule": [TARGET]})
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def client(server: FakeEvents) -> EventBridgeClient:
    return boto3.client(
        "events",
        endpoint_url=server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )


def test_a_rules_targets_are_listed_and_the_read_counted(server: FakeEvents) -> None:
    answer = client(server).list_targets_by_rule(Rule="bench-rule", EventBusName="bench-bus")

    assert answer["Targets"] == [TARGET]
    assert server.reads == {"bench-rule": 1}


def test_an_unknown_rule_is_refused(server: FakeEvents) -> None:
    with pytest.raises(ClientError) as refused:
        client(server).list_targets_by_rule(Rule="gone")

    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert server.reads == {}
