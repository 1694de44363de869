"""Benchmarks of the replay path: CPU per record and peak memory per batch.

Run on demand with `make bench` (full) — CI runs `make bench-smoke` (few iterations, same code)
so the benchmark itself cannot rot. SQS is replaced at the boto3 boundary by a client that
accepts every SendMessageBatch, so the figures are the function's own cost, not an emulator's
(moto's send cost grows with queue depth and would swamp it).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from io import BytesIO
from typing import Any, cast

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.settings import Settings
from dlq_replay.engine.replayer import Replayer
from dlq_replay.sqs.client import sqs_client
from urllib3 import HTTPResponse

DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:bench-dlq"
SETTINGS = Settings(
    main_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/bench-main",
    operator_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/bench-operator",
)


class AcceptingSqs:
    """Stands in for the SQS client at the boundary: every entry of every batch succeeds."""

    def __init__(self) -> None:
        self.calls = 0

    def send_message_batch(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        # Serialise like botocore would, so big payloads cost what they cost for real.
        json.dumps(request, default=lambda b: base64.b64encode(b).decode())
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]], "Failed": []}

    def change_message_visibility_batch(self, **request: Any) -> dict[str, Any]:
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]], "Failed": []}


def make_event(records: int, body_bytes: int, attributes: int, count: int) -> dict[str, Any]:
    """A Lambda SQS event with `records` records of the given size and attribute load."""
    body = "x" * body_bytes
    message_attributes: dict[str, Any] = {
        f"a{i}": {"stringValue": f"value-{i}", "dataType": "String"} for i in range(attributes)
    }
    message_attributes["blob"] = {
        "binaryValue": base64.b64encode(bytes(range(256))).decode(),
        "dataType": "Binary.raw",
    }
    if count:
        message_attributes["sqs-dlq-replay-nb"] = {"stringValue": str(count), "dataType": "Number"}
    return {
        "Records": [
            {
                "messageId": f"00000000-0000-0000-0000-{index:012d}",
                "receiptHandle": f"rh-{index}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1", "AWSTraceHeader": "Root=1-a-b"},
                "messageAttributes": message_attributes,
                "eventSource": "aws:sqs",
                "eventSourceARN": DLQ_ARN,
                "awsRegion": "us-east-1",
            }
            for index in range(records)
        ]
    }


def handler() -> tuple[LambdaReplay, AcceptingSqs]:
    sqs = AcceptingSqs()
    quiet = logging.getLogger("bench")
    quiet.disabled = True
    replayer = Replayer(SETTINGS, sqs, logger=quiet, rng=random.Random(1))  # type: ignore[arg-type]
    return LambdaReplay(replayer), sqs


def time_per_record(event: dict[str, Any], iterations: int) -> tuple[float, float]:
    """Median and best microseconds per record over `iterations` runs of one event."""
    replay, _ = handler()
    records = len(event["Records"])
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        response = replay(event)
        samples.append((time.perf_counter() - started) / records * 1e6)
        if response["batchItemFailures"]:
            raise SystemExit("benchmark batch had failures")
    return statistics.median(samples), min(samples)


def peak_memory(event: dict[str, Any], replay: LambdaReplay | None = None) -> int:
    """Peak bytes allocated while handling one event (the event itself excluded), by default
    with SQS accepted at the boto3 boundary."""
    replay = replay or handler()[0]
    replay(event)  # warm imports and caches
    tracemalloc.start()
    replay(event)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def _sqs_answers(request: Any, **kwargs: Any) -> AWSResponse:
    """Every entry of a SendMessageBatch succeeds, answered where botocore would send it."""
    del kwargs
    ids = [entry["Id"] for entry in json.loads(request.body)["Entries"]]
    body = {"Successful": [{"Id": i, "MessageId": i, "MD5OfMessageBody": ""} for i in ids]}
    answer = json.dumps({**body, "Failed": []}).encode()
    return AWSResponse(
        request.url, 200, HTTPHeaders(), HTTPResponse(BytesIO(answer), preload_content=False)
    )


def peak_memory_through_botocore(event: dict[str, Any]) -> int:
    """Peak bytes allocated while handling one event with the production SQS client (its
    serialisation and signing included, every thread traced), SQS answering at botocore's HTTP
    boundary; the event itself excluded."""
    sqs = sqs_client(region_name="us-east-1")
    sqs.meta.events.register(
        "before-send.sqs.SendMessageBatch", cast("Callable[..., None]", _sqs_answers)
    )
    quiet = logging.getLogger("bench")
    quiet.disabled = True
    return peak_memory(
        event, LambdaReplay(Replayer(SETTINGS, sqs, logger=quiet, rng=random.Random(1)))
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="few iterations, for CI")
    args = parser.parse_args(argv)
    iterations = 5 if args.smoke else 300
    command = "python bench/bench_replay.py" + (" --smoke" if args.smoke else "")
    cases: dict[str, Callable[[], dict[str, Any]]] = {
        "10 x 1 KiB, 4 attributes": lambda: make_event(10, 1024, 4, 0),
        "10 x 1 KiB, at the limit (parks)": lambda: make_event(10, 1024, 4, 3),
        "10 x 100 KiB, 8 attributes": lambda: make_event(10, 100 * 1024, 8, 1),
        "1 x ~1 MiB": lambda: make_event(1, 1_000_000, 2, 0),
    }
    print(f"{'case':40} {'us/record (median)':>20} {'best':>10} {'peak MiB':>10}")
    for name, build in cases.items():
        event = build()
        median, best = time_per_record(event, iterations)
        peak = peak_memory(event) / 2**20
        print(f"{name:40} {median:20.1f} {best:10.1f} {peak:10.2f}")
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(variable, "bench")
    print("\none 6 MB event (Lambda's payload limit), the production client, SQS answering at")
    print(f"botocore's HTTP boundary (target: peak <= 1x the event) ({command})")
    print(f"{'event':40} {'event MiB':>10} {'peak MiB':>10} {'peak/event':>11}")
    for name, build in {
        "6 x ~1 MB": lambda: make_event(6, 1_000_000, 2, 0),
        "3,000 x 1 KB, 4 attributes (big batch)": lambda: make_event(3000, 1000, 4, 0),
    }.items():
        event = build()
        size = len(json.dumps(event))
        peak = peak_memory_through_botocore(event)
        print(f"{name:40} {size / 2**20:10.2f} {peak / 2**20:10.2f} {peak / size:10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
