"""Benchmark of the client-side redrive: messages per second through an endpoint with latency.

SQS is replaced at the boto3 boundary by an in-memory queue that sleeps a fixed latency on
every call (20 ms by default, as through a real endpoint; the sleep releases the GIL as a
socket wait does). Each case moves the same number of parked messages from one queue to
another, in the same process run:

- baseline: a plain sequential loop, receive 10 / SendMessageBatch / DeleteMessageBatch, what
  a hand-written script does;
- `ops.clientmove.redrive` with --concurrency 1 (today's sequential move) and with more
  batches in flight.

Every case must move every message exactly once (the fake checks it), so the speed is never
bought with a lost or doubled message. Run on demand with `make bench`; CI runs `make
bench-smoke` (fewer messages, same code).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, cast

from dlq_replay import ops
from dlq_replay.ops.clientmove import redrive
from dlq_replay.ops.queues import QueueInfo

if TYPE_CHECKING:
    from collections.abc import Callable

    from mypy_boto3_sqs import SQSClient

SOURCE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-operator"
TARGET = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"


class LatencySqs:
    """An in-memory SQS that waits `latency` seconds on every call, thread-safe."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.lock = threading.Lock()
        self.visible: dict[str, deque[dict[str, Any]]] = {SOURCE: deque(), TARGET: deque()}
        self.in_flight: dict[str, dict[str, Any]] = {}
        self.calls = 0
        self._ids = 0

    def _call(self) -> None:
        time.sleep(self.latency)
        with self.lock:
            self.calls += 1

    def fill(self, count: int) -> None:
        for n in range(count):
            attributes = {
                "dlq-replay-park-reason": {"DataType": "String", "StringValue": "max-attempts"},
                "sqs-dlq-replay-nb": {"DataType": "Number", "StringValue": "3"},
            }
            self.visible[SOURCE].append(
                {"MessageId": f"m-{n}", "Body": f"order {n}", "MessageAttributes": attributes}
            )

    def receive_message(self, **request: Any) -> dict[str, Any]:
        self._call()
        with self.lock:
            queue = self.visible[request["QueueUrl"]]
            batch = []
            for _ in range(min(request["MaxNumberOfMessages"], len(queue))):
                message = queue.popleft()
                self._ids += 1
                handle = f"h-{self._ids}"
                self.in_flight[handle] = message
                batch.append(
                    {
                        **message,
                        "ReceiptHandle": handle,
                        "Attributes": {"ApproximateReceiveCount": "1"},
                    }
                )
        return {"Messages": batch} if batch else {}

    def send_message_batch(self, **request: Any) -> dict[str, Any]:
        self._call()
        with self.lock:
            for entry in request["Entries"]:
                self.visible[request["QueueUrl"]].append(
                    {"MessageId": entry["Id"], "Body": entry["MessageBody"]}
                )
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]], "Failed": []}

    def delete_message_batch(self, **request: Any) -> dict[str, Any]:
        self._call()
        with self.lock:
            for entry in request["Entries"]:
                del self.in_flight[entry["ReceiptHandle"]]
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]], "Failed": []}

    def change_message_visibility_batch(self, **request: Any) -> dict[str, Any]:
        self._call()
        with self.lock:
            for entry in request["Entries"]:
                message = self.in_flight.pop(entry["ReceiptHandle"])
                self.visible[request["QueueUrl"]].append(message)
        return {"Successful": [{"Id": e["Id"]} for e in request["Entries"]], "Failed": []}

    def get_queue_attributes(self, **request: Any) -> dict[str, Any]:
        """The counters a client-side move reads when a receive brings nothing (ops.ending)."""
        self._call()
        with self.lock:
            visible = len(self.visible[request["QueueUrl"]])
            in_flight = len(self.in_flight) if request["QueueUrl"] == SOURCE else 0
        return {
            "Attributes": {
                "ApproximateNumberOfMessages": str(visible),
                "ApproximateNumberOfMessagesNotVisible": str(in_flight),
                "ApproximateNumberOfMessagesDelayed": "0",
            }
        }

    def check_moved(self, count: int) -> None:
        bodies = sorted(m["Body"] for m in self.visible[TARGET])
        expected = sorted(f"order {n}" for n in range(count))
        if bodies != expected or self.visible[SOURCE] or self.in_flight:
            sys.exit("benchmark: a case lost or doubled messages")


def sequential_loop(sqs: Any) -> None:
    """The baseline: one receive, one send, one delete, again and again."""
    while True:
        batch = sqs.receive_message(QueueUrl=SOURCE, MaxNumberOfMessages=10).get("Messages", [])
        if not batch:
            return
        sqs.send_message_batch(
            QueueUrl=TARGET,
            Entries=[{"Id": str(i), "MessageBody": m["Body"]} for i, m in enumerate(batch)],
        )
        sqs.delete_message_batch(
            QueueUrl=SOURCE,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
            ],
        )


def our_redrive(concurrency: int) -> Callable[[Any], None]:
    def run(sqs: Any) -> None:
        request = ops.RedriveRequest(
            source=QueueInfo(
                SOURCE, "arn:aws:sqs:us-east-1:123456789012:orders-operator", False, 120, None
            ),
            destination=QueueInfo(
                TARGET, "arn:aws:sqs:us-east-1:123456789012:orders", False, 30, None
            ),
            wait_seconds=0,
            concurrency=concurrency,
        )
        tally = redrive(cast("SQSClient", sqs), request)
        if not tally.adds_up or tally.failed:
            sys.exit(f"benchmark: redrive failed: {tally}")

    return run


def measure(case: Callable[[Any], None], messages: int, latency: float) -> tuple[float, int]:
    sqs = LatencySqs(latency)
    sqs.fill(messages)
    started = time.perf_counter()
    case(sqs)
    elapsed = time.perf_counter() - started
    sqs.check_moved(messages)
    return messages / elapsed, sqs.calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--smoke", action="store_true", help="few messages: CI keeps it running")
    args = parser.parse_args()
    messages = 200 if args.smoke else args.messages
    latency = args.latency_ms / 1000
    cases: list[tuple[str, Callable[[Any], None]]] = [
        ("sequential loop (baseline)", sequential_loop),
        ("redrive --concurrency 1", our_redrive(1)),
        (
            f"redrive --concurrency {ops.DEFAULT_CONCURRENCY} (default)",
            our_redrive(ops.DEFAULT_CONCURRENCY),
        ),
        ("redrive --concurrency 32", our_redrive(32)),
    ]
    print(f"bench_redrive: {messages} messages, {args.latency_ms:g} ms per SQS call")
    print(f"{'case':<36} {'msg/s':>8} {'calls':>6} {'vs baseline':>12}")
    baseline = 0.0
    for name, case in cases:
        rate, calls = measure(case, messages, latency)
        baseline = baseline or rate
        print(f"{name:<36} {rate:>8.0f} {calls:>6} {rate / baseline:>11.1f}x")


if __name__ == "__main__":
    main()
