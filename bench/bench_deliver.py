"""Delivering DLQ records to a Lambda target: `Invoke` (`Event`) per record, several at once.

Lambda is the benchmarks' in-memory endpoint (bench/lambda_http.py, `AWS_ENDPOINT_URL_LAMBDA`)
that answers every Invoke with 202 and a request id after `--latency-ms`, so the figures are the
delivery's own (botocore's signing and parsing, the connection pool, the thread pool), not an
emulator's. In the same run: the baseline, one `Invoke` after another (concurrency 1), then 8
(the default) and 32; `bound` is the time over the least possible, ceil(N / concurrency) x latency.

    python bench/bench_deliver.py            # the figures: 1,000 records (about a minute)
    python bench/bench_deliver.py --smoke    # CI: 50 records
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import boto3
from dlq_replay.targets.deliverer import Deliverer, TargetClients
from dlq_replay.targets.delivery import Delivered, Delivery
from lambda_http import FakeLambda

FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:orders"


def timed(concurrency: int, records: int) -> float:
    clients = TargetClients(boto3.Session(region_name="us-east-1"))
    deliverer = Deliverer(clients, concurrency=concurrency)
    deliverer.deliver([Delivery("warm-up", FUNCTION, "{}")])  # the client, made once
    deliveries = [Delivery(f"r-{i}", FUNCTION, f'{{"order": {i}}}') for i in range(records)]
    started = time.perf_counter()
    outcomes = deliverer.deliver(deliveries)
    seconds = time.perf_counter() - started
    accepted = [o for o in outcomes.values() if isinstance(o, Delivered) and o.request_id]
    if len(accepted) != records:
        raise SystemExit(f"{records - len(accepted)} deliveries not accepted")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="50 records, for CI")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    latency = args.latency_ms / 1000
    records = 50 if args.smoke else 1_000
    server = FakeLambda(latency)
    server.start()
    os.environ["AWS_ENDPOINT_URL_LAMBDA"] = server.endpoint_url
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "bench")
    command = "python bench/bench_deliver.py" + (" --smoke" if args.smoke else "")
    print(f"bench_deliver: {records} Invokes, {args.latency_ms:g} ms each ({command})")
    print(f"{'concurrency':>11} {'seconds':>8} {'records/s':>9} {'vs 1':>6} {'bound':>6}")
    baseline = None
    try:
        for concurrency in (1, 8, 32):
            seconds = timed(concurrency, records)
            baseline = baseline or seconds
            bound = math.ceil(records / concurrency) * latency
            print(
                f"{concurrency:11} {seconds:8.2f} {records / seconds:9.0f} "
                f"{baseline / seconds:5.1f}x {seconds / bound:5.2f}x"
            )
    finally:
        server.stop()
    print("vs 1: concurrency 1's time over this one's; bound: the time over ceil(N / c) x latency")
    return 0


if __name__ == "__main__":
    sys.exit(main())
