"""Benchmark of the client-side redrive: messages per second through an endpoint with latency.

SQS is replaced at the boto3 boundary by an in-memory queue that sleeps a fixed latency on
every call (20 ms by default, as through a real endpoint; the sleep releases the GIL as a
socket wait does). Each case moves the same number of parked messages from one queue to
another, in the same process run:

- baseline: a plain sequential loop, receive 10 / SendMessageBatch / DeleteMessageBatch, what
  a hand-written script does;
- `ops.clientmove.ClientMove` with --concurrency 1 (today's sequential move) and with more
  batches in flight.

Every case must move every message exactly once (the fake checks it), so the speed is never
bought with a lost or doubled message.

Then botocore's own CPU per call, which bounds a real redrive once calls are quick: the same
receive / send / delete rounds through a real boto3 client against the in-memory SQS over
HTTP (bench/sqs_http.py, no latency), with the other interactive commands' configuration and
with the redrive's (`sqs.client.lean`: no parameter check, a User-Agent written once),
interleaved, the calling thread's CPU, the best of several rounds.

Run on demand with `make bench`; CI runs `make bench-smoke` (fewer messages, same code).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, cast

from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.redrive import DEFAULT_CONCURRENCY, RedriveRequest

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
        """The counters a client-side move reads when a receive brings nothing (ops.movestate)."""
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
        request = RedriveRequest(
            source=QueueInfo(
                SOURCE, "arn:aws:sqs:us-east-1:123456789012:orders-operator", False, 120, None
            ),
            destination=QueueInfo(
                TARGET, "arn:aws:sqs:us-east-1:123456789012:orders", False, 30, None
            ),
            wait_seconds=0,
            concurrency=concurrency,
        )
        tally = ClientMove(cast("SQSClient", sqs), request).run()
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


def client_cpu(rounds: int, repeats: int) -> None:
    """CPU per call of a boto3 client set up as the CLI's (one session, foreign answers
    refused), with the interactive configuration and with the redrive's."""
    import boto3
    from bench_end_to_end import ATTRIBUTES, BODY_PADDING
    from dlq_replay.cli.options import INTERACTIVE_CONFIG
    from dlq_replay.local.answers import refuse_foreign_answers
    from dlq_replay.sqs.client import lean
    from sqs_http import FakeSqs

    fake = FakeSqs(0.0)
    for name in ("source", "target"):
        fake.queue(name)
    fake.start()
    configs = {"interactive (peek, export, ...)": INTERACTIVE_CONFIG}
    configs["redrive (lean)"] = lean(INTERACTIVE_CONFIG)
    best: dict[str, float] = {}
    try:
        for _ in range(repeats):
            for label, config in configs.items():
                session = boto3.Session(
                    aws_access_key_id="bench",
                    aws_secret_access_key="bench",
                    region_name="us-east-1",
                )
                refuse_foreign_answers(session)
                sqs = session.client("sqs", endpoint_url=fake.endpoint_url, config=config)
                moved = len(fake.queues["target"].arrived)
                fake.fill(
                    "source", [f"m {n} {BODY_PADDING}" for n in range(rounds * 10)], ATTRIBUTES
                )
                sqs.get_queue_url(QueueName="source")  # the connection and the client's caches
                started = time.thread_time()
                for _ in range(rounds):
                    one_round(sqs, fake.url("source"), fake.url("target"))
                spent = (time.thread_time() - started) / (3 * rounds)
                best[label] = min(best.get(label, spent), spent)
                if len(fake.queues["target"].arrived) - moved != rounds * 10:
                    sys.exit("benchmark: a round lost or doubled messages")
    finally:
        fake.stop()
    print(f"\nbotocore's CPU per call, best of {repeats} x {rounds} receive/send/delete rounds:")
    first = next(iter(best.values()))
    for label, spent in best.items():
        print(f"{label:<36} {spent * 1000:>7.3f} ms {spent / first:>11.2f}x")


def one_round(sqs: Any, source: str, target: str) -> None:
    """Receive 10 as the redrive does, send them, delete them."""
    batch = sqs.receive_message(
        QueueUrl=source,
        MaxNumberOfMessages=10,
        VisibilityTimeout=120,
        WaitTimeSeconds=0,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    )["Messages"]
    sqs.send_message_batch(
        QueueUrl=target,
        Entries=[
            {"Id": str(i), "MessageBody": m["Body"], "MessageAttributes": m["MessageAttributes"]}
            for i, m in enumerate(batch)
        ],
    )
    sqs.delete_message_batch(
        QueueUrl=source,
        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
    )


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
            f"redrive --concurrency {DEFAULT_CONCURRENCY} (default)",
            our_redrive(DEFAULT_CONCURRENCY),
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
    client_cpu(20 if args.smoke else 100, 2 if args.smoke else 7)


if __name__ == "__main__":
    main()
