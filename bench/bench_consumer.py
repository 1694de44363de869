"""Benchmark of the consumer toolkit's backoff: SQS calls and CPU per failed record.

`BackoffBatchProcessor` against a baseline that does what teams hand-roll (one
ChangeMessageVisibility per failed record), on the same events in the same process run. SQS
is replaced at the boto3 boundary by a client that accepts every request and counts them.
Run on demand with `make bench`; CI runs `make bench-smoke` (few iterations, same code).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from dlq_replay.consumer import BackoffBatchProcessor, ConsumerSettings
from dlq_replay.core.backoff import BackoffPolicy, Jitter

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:orders"
SETTINGS = ConsumerSettings(BackoffPolicy(60, 2, 900, Jitter.FULL))


class CountingSqs:
    """Stands in for the SQS client: every request succeeds and is counted."""

    def __init__(self) -> None:
        self.calls = 0
        self.meta = SimpleNamespace(endpoint_url="https://sqs.us-east-1.amazonaws.com")

    def change_message_visibility_batch(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]], "Failed": []}

    def change_message_visibility(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        return {}


def make_event(records: int, failing: int) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m-{n}",
                "receiptHandle": f"r-{n}",
                "body": "fail" if n < failing else "ok",
                "attributes": {"ApproximateReceiveCount": str(1 + n % 3)},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": QUEUE_ARN,
                "awsRegion": "us-east-1",
            }
            for n in range(records)
        ]
    }


def record_handler(record: SQSRecord) -> str:
    if record.body == "fail":
        raise RuntimeError("downstream unavailable")
    return record.body


def toolkit(sqs: CountingSqs, event: dict[str, Any]) -> None:
    client = cast("SQSClient", sqs)
    processor = BackoffBatchProcessor(
        client, SETTINGS, rng=random.Random(1), raise_on_entire_batch_failure=False
    )
    process_partial_response(event=event, record_handler=record_handler, processor=processor)


def hand_rolled(sqs: CountingSqs, event: dict[str, Any]) -> None:
    """The baseline: Powertools' processor, then one visibility change per failed record."""
    rng = random.Random(1)
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor
    )
    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    for record in event["Records"]:
        if record["messageId"] in failed:
            count = int(record["attributes"]["ApproximateReceiveCount"])
            delay = rng.randint(0, min(900, 60 * 2 ** (count - 1)))
            sqs.change_message_visibility(
                QueueUrl="q", ReceiptHandle=record["receiptHandle"], VisibilityTimeout=delay
            )


def measure(run: Any, event: dict[str, Any], iterations: int) -> tuple[float, float]:
    """(SQS calls per failed record, median µs per failed record)."""
    failing = sum(1 for r in event["Records"] if r["body"] == "fail")
    timings = []
    sqs = CountingSqs()
    for _ in range(iterations):
        started = time.perf_counter()
        run(sqs, event)
        timings.append((time.perf_counter() - started) / failing * 1e6)
    return sqs.calls / (failing * iterations), statistics.median(timings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few iterations, for CI")
    args = parser.parse_args(argv)
    iterations = 20 if args.smoke else 2000
    print(f"Python {sys.version.split()[0]}, {iterations} batches each")
    print(f"{'case':<34} {'calls/failed':>12} {'µs/failed':>10}")
    for records, failing in ((10, 10), (10, 3)):
        event = make_event(records, failing)
        base_calls, base_us = measure(hand_rolled, event, iterations)
        calls, us = measure(toolkit, event, iterations)
        case = f"{failing} of {records} fail"
        print(f"{case + ', hand-rolled (baseline)':<34} {base_calls:>12.2f} {base_us:>10.1f}")
        print(f"{case + ', BackoffBatchProcessor':<34} {calls:>12.2f} {us:>10.1f}")
        print(
            f"{'  ratio baseline/toolkit':<34} {base_calls / calls:>11.1f}x {base_us / us:>9.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
