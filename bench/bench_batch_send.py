"""Big batches: one Lambda invocation replaying 10 to 10,000 records, SQS at 20 ms a call.

SQS is faked at the boto3 boundary by a client that sleeps `--latency-ms` per call (and
serialises the request as botocore would), so the figures are the replay's orchestration,
not an emulator's. In the same run: the baseline, a per-record `SendMessage` loop (what the
well-known sample does), and the replay through its Lambda adapter with SEND_CONCURRENCY 1
(one request after another, as before), 8 (the default) and 32. For 10,000 records the
baseline would take 200 s; ours is compared with the least possible time there,
ceil(ceil(N/10) / concurrency) x latency.

    python bench/bench_batch_send.py            # the figures (about a minute)
    python bench/bench_batch_send.py --smoke    # CI: 10 and 100 records
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import math
import random
import sys
import threading
import time
from dataclasses import replace
from typing import Any

from bench_replay import SETTINGS, make_event
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.engine.replayer import Replayer


class LatentSqs:
    """Every call takes `latency` seconds and succeeds; counts the calls."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0
        self.lock = threading.Lock()

    def _call(self, request: dict[str, Any]) -> None:
        json.dumps(request, default=lambda b: base64.b64encode(b).decode())
        with self.lock:
            self.calls += 1
        time.sleep(self.latency)

    def send_message(self, **request: Any) -> dict[str, Any]:
        self._call(request)
        return {"MessageId": "m"}

    def send_message_batch(self, **request: Any) -> dict[str, Any]:
        self._call(request)
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]], "Failed": []}


def per_record_loop(event: dict[str, Any], sqs: LatentSqs) -> None:
    """The baseline: one SendMessage per record, body and attributes, one after another."""
    for record in event["Records"]:
        attributes = {
            name: {"DataType": value["dataType"], "StringValue": value["stringValue"]}
            for name, value in record["messageAttributes"].items()
            if "stringValue" in value
        }
        sqs.send_message(
            QueueUrl=SETTINGS.main_queue_url,
            MessageBody=record["body"],
            MessageAttributes=attributes,
        )


def ours(event: dict[str, Any], sqs: LatentSqs, concurrency: int) -> None:
    quiet = logging.getLogger("bench")
    quiet.disabled = True
    settings = replace(SETTINGS, send_concurrency=concurrency)
    replayer = Replayer(settings, sqs, logger=quiet, rng=random.Random(1))  # type: ignore[arg-type]
    if LambdaReplay(replayer)(event)["batchItemFailures"]:
        raise SystemExit("benchmark batch had failures")


def timed(run: Any, *args: Any) -> tuple[float, int]:
    sqs = args[1]
    started = time.perf_counter()
    run(*args)
    return time.perf_counter() - started, sqs.calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="10 and 100 records, for CI")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    latency = args.latency_ms / 1000
    sizes = [10, 100] if args.smoke else [10, 1_000, 10_000]
    baseline_up_to = 100 if args.smoke else 1_000
    command = "python bench/bench_batch_send.py" + (" --smoke" if args.smoke else "")
    print(f"bench_batch_send: one invocation, {args.latency_ms:g} ms per SQS call ({command})")
    print(f"{'records':>8} {'case':34} {'seconds':>8} {'calls':>6} {'vs loop':>8} {'bound':>7}")
    for size in sizes:
        event = make_event(size, 1024, 4, 0)
        loop_seconds = None
        if size <= baseline_up_to:
            loop_seconds, calls = timed(per_record_loop, event, LatentSqs(latency))
            print(f"{size:8} {'per-record SendMessage loop':34} {loop_seconds:8.2f} {calls:6}")
        for concurrency in (1, 8, 32):
            seconds, calls = timed(ours, event, LatentSqs(latency), concurrency)
            bound = math.ceil(math.ceil(size / 10) / concurrency) * latency
            name = f"ours, SEND_CONCURRENCY {concurrency}" + (
                " (default)" if concurrency == 8 else ""
            )
            ratio = f"{loop_seconds / seconds:7.1f}x" if loop_seconds else f"{'-':>8}"
            print(f"{size:8} {name:34} {seconds:8.2f} {calls:6} {ratio} {seconds / bound:6.2f}x")
    print("vs loop: the loop's time over ours; bound: ours over the least possible time,")
    print("ceil(ceil(N/10) / concurrency) x latency (the requests in waves of `concurrency`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
