"""The replay's own CPU per record in the worker, without SQS's: what is ours to cut.

The worker's path for one batch (`LocalEventSource.poll_once`: the Lambda event built from the
receive, `LambdaReplay` over the `Replayer`, the outage breaker, the batch's log line, the
delete), with SQS answered by a plain object that returns at once (no botocore, no network), so
all that is measured is this package's work and Powertools'. Each tree runs in a process of its
own (PYTHONPATH), one after the other, several times.

    python bench/bench_record_cpu.py                                  # CPU µs per record
    python bench/bench_record_cpu.py --before /tmp/old/layers/replay  # and an older tree
    python bench/bench_record_cpu.py --instructions --before ...      # instructions per record,
        counted by valgrind (callgrind): the same on a busy machine as on an idle one
    python bench/bench_record_cpu.py --smoke                          # CI: a few batches
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench_end_to_end import ATTRIBUTES, BODY_PADDING
from trees import run_in_tree, shown, trees

ENDPOINT = "http://127.0.0.1:1"
ACCOUNT_URL = f"{ENDPOINT}/123456789012"
WARM_UP_BATCHES = 50


class InstantSqs:
    """The four calls the worker makes, answered at once: 10 messages per receive, as the
    end-to-end benchmark's (two attributes, a 200-character body), every write accepted."""

    def __init__(self) -> None:
        self._ids = itertools.count()

    def receive_message(self, **_: Any) -> dict[str, Any]:
        messages = []
        for n in (next(self._ids) for _ in range(10)):
            messages.append(
                {
                    "MessageId": f"{n:08d}-0000-4000-8000-000000000000",
                    "ReceiptHandle": f"handle-{n}",
                    "MD5OfBody": "0" * 32,
                    "Body": f"message {n:06d} {BODY_PADDING}",
                    "Attributes": {
                        "ApproximateReceiveCount": "1",
                        "SentTimestamp": "1700000000000",
                        "SenderId": "AIDAEXAMPLE",
                        "ApproximateFirstReceiveTimestamp": "1700000000100",
                    },
                    "MessageAttributes": {k: dict(v) for k, v in ATTRIBUTES.items()},
                }
            )
        return {"Messages": messages}

    def send_message_batch(self, **request: Any) -> dict[str, Any]:
        return {"Successful": [{"Id": e["Id"], "MessageId": e["Id"]} for e in request["Entries"]]}

    def delete_message_batch(self, **request: Any) -> dict[str, Any]:
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]]}

    change_message_visibility_batch = delete_message_batch


def measure(batches: int, repeats: int) -> list[float]:
    """CPU µs per record of `repeats` runs of `batches` batches, after a warm-up."""
    from aws_lambda_powertools import Logger
    from dlq_replay.aws_lambda.replay import LambdaReplay
    from dlq_replay.breaker.worker_side import worker_breaker
    from dlq_replay.engine.replayer import Replayer
    from dlq_replay.local.eventsource import LocalEventSource
    from dlq_replay.local.worker_loop import settings_from

    settings = settings_from(
        {
            "MAIN_QUEUE_URL": f"{ACCOUNT_URL}/main",
            "OPERATOR_QUEUE_URL": f"{ACCOUNT_URL}/operator",
            "AWS_ENDPOINT_URL_SQS": ENDPOINT,
        },
        {},
    )
    logger = Logger(service="bench", logger_handler=logging.FileHandler(os.devnull))
    sqs: Any = InstantSqs()
    breaker, gate = worker_breaker(
        logger=logger, count_attribute=settings.count_attribute, depth=lambda: 0
    )
    source = LocalEventSource(
        sqs,
        f"{ACCOUNT_URL}/dlq",
        LambdaReplay(Replayer(settings, sqs, logger=logger), breaker),
        logger=logger,
        queue_arn="arn:aws:sqs:us-east-1:123456789012:dlq",
        gate=gate,
    )
    stop = threading.Event()
    for _ in range(WARM_UP_BATCHES):
        source.poll_once(stop)
    results = []
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(batches):
            gate.wait_until_receiving(stop)
            source.poll_once(stop)
        records = batches * 10
        results.append((time.process_time() - started) / records * 1e6 if records else 0.0)
    return results


def cpu_per_record(tree: Path | None, batches: int, repeats: int) -> list[float]:
    measured = run_in_tree(__file__, tree, ["--measure", str(batches), str(repeats)])
    return [float(value) for value in measured.stdout.split()]


def instructions_per_record(tree: Path | None, batches: int) -> float:
    """callgrind's count at `batches` batches less that at none, per record."""
    wrapper = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    counts = []
    for measured in (0, batches):
        done = run_in_tree(__file__, tree, ["--measure", str(measured), "1"], wrapper)
        output = done.stdout + done.stderr
        found = re.search(r"Collected : (\d+)", output)
        if found is None:
            raise SystemExit(f"bench_record_cpu: no count from valgrind:\n{output[-2000:]}")
        counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / (batches * 10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="20 batches, once")
    parser.add_argument("--before", type=Path, help="also measure this tree's layers/replay")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with valgrind"
    )
    parser.add_argument("--measure", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(" ".join(f"{value:.2f}" for value in measure(*args.measure)))
        return 0
    measured_trees = trees(args.before)
    print(f"bench_record_cpu: the worker's own work per record ({shown(__file__, argv)})")
    if args.instructions:
        counts = {label: instructions_per_record(tree, 100) for label, tree in measured_trees}
        first = next(iter(counts.values()))
        for label, count in counts.items():
            print(f"{label:8} {count / 1000:8.0f}k instructions per record {count / first:6.2f}x")
        return 0
    batches, repeats = (20, 1) if args.smoke else (300, 5)
    runs: dict[str, list[float]] = {label: [] for label, _ in measured_trees}
    for _ in range(1 if args.smoke else 3):  # interleaved: a busy moment hits every tree
        for label, tree in measured_trees:
            runs[label] += cpu_per_record(tree, batches, repeats)
    first_median = statistics.median(next(iter(runs.values())))
    for label, values in runs.items():
        median = statistics.median(values)
        print(
            f"{label:8} {median:8.1f} µs per record (min {min(values):.1f}) "
            f"{median / first_median:6.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
