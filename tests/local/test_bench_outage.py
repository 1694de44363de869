"""The outage benchmark's own parts (bench/bench_outage.py): its consumer fails what the
scenario says and nothing else, and its account finds every message, lost ones included."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE  # noqa: E402
from outage_consumer import Behaviour, Consumer, body_of  # noqa: E402
from outage_scenario import Case, Result, account  # noqa: E402

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def test_account_finds_lost_and_duplicated_ids() -> None:
    result = Result(Case("unit"))
    account(
        result,
        Counter({"a": 1, "b": 2}),  # b consumed twice
        ["a", "b", "c", "d", "e"],
        [body_of("c")],  # parked
        [body_of("d"), body_of("a")],  # left in a queue; a also consumed
    )
    assert (result.consumed, result.parked, result.left) == (2, 1, 2)
    assert result.lost == 1  # e: found nowhere
    assert result.duplicates == 2  # a and b


def test_consumer_fails_everything_in_the_outage_then_all_but_poison(
    setup_client: SQSClient,
) -> None:
    # Visible again at once: each poll sees every message not deleted.
    queue = setup_client.create_queue(QueueName="bench-main", Attributes={"VisibilityTimeout": "0"})
    url = queue["QueueUrl"]
    for message_id in ("m0", "m1", "m3"):
        setup_client.send_message(QueueUrl=url, MessageBody=body_of(message_id))
    setup_client.send_message(  # a copy the replay sent back twice
        QueueUrl=url,
        MessageBody=body_of("m2"),
        MessageAttributes={DEFAULT_COUNT_ATTRIBUTE: {"DataType": "Number", "StringValue": "2"}},
    )
    now = [0.0]
    consumer = Consumer(
        setup_client, url, Behaviour(recovery=10.0, poison=frozenset({"m3"})), clock=lambda: now[0]
    )
    consumer.poll_once()
    assert consumer.received == 4
    assert not consumer.deliveries  # the outage: everything left to its visibility timeout

    now[0] = 10.0
    for _ in range(5):
        consumer.poll_once()
    assert consumer.deliveries == Counter({"m0": 1, "m1": 1, "m2": 1})  # m3 is poison
    assert consumer.last_consumed == 10.0
    assert consumer.replays == Counter({0: 2, 2: 1})  # by the count each copy carried


def test_consumer_fails_its_failure_rate(setup_client: SQSClient) -> None:
    url = setup_client.create_queue(QueueName="bench-main")["QueueUrl"]
    setup_client.send_message(QueueUrl=url, MessageBody=body_of("m0"))
    consumer = Consumer(setup_client, url, Behaviour(recovery=0.0, failure_rate=1.0))
    consumer.poll_once()
    assert consumer.received == 1
    assert not consumer.deliveries
