"""What checking every answer costs, and how long an endpoint that never answers holds a command.

1. `foreign_answer` (local.answers: is this the service's answer?) runs on every answer a CLI
   client gets, the worker's receives too, before botocore parses it. Its time per answer is
   set beside botocore's own parse of the same answer: ReceiveMessage with 1 and 10 messages
   of 1 KB and 256 KB (SQS's largest), GetQueueAttributes.
2. `dlq-replay status` and `peek` against an endpoint that takes the connection and never
   answers: seconds until the one line (it was 30.7 s and 61.4 s with a 30 s read timeout).
   Not in --smoke: it waits out the read timeouts (about 45 s).

    python bench/bench_answers.py            # both
    python bench/bench_answers.py --smoke    # CI: the first, briefly
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import botocore.session
from botocore.parsers import create_parser
from dlq_replay.cli.main import main
from dlq_replay.local.answers import foreign_answer, protocol_of

_MODELS = botocore.session.get_session()


def receive_answer(messages: int, size: int) -> bytes:
    body = "x" * size
    return json.dumps(
        {
            "Messages": [
                {
                    "MessageId": f"m{index}",
                    "ReceiptHandle": "r" * 400,
                    "MD5OfBody": "0" * 32,
                    "Body": body,
                    "Attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1"},
                    "MessageAttributes": {
                        "sqs-dlq-replay-nb": {"DataType": "Number", "StringValue": "3"}
                    },
                }
                for index in range(messages)
            ]
        }
    ).encode()


def per_answer(operation: Any, body: bytes, repeat: int) -> tuple[float, float]:
    """Median microseconds of (our check, botocore's parse) of one answer."""
    response = {"status_code": 200, "headers": {}, "body": body}
    parser = create_parser(protocol_of(operation))
    ours, theirs = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        assert foreign_answer(operation, response) is None
        middle = time.perf_counter()
        parser.parse(response, operation.output_shape)
        ours.append(middle - start)
        theirs.append(time.perf_counter() - middle)
    return statistics.median(ours) * 1e6, statistics.median(theirs) * 1e6


def check_cost(smoke: bool) -> None:
    sqs = _MODELS.get_service_model("sqs")
    cases = [
        ("GetQueueAttributes", b'{"Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:1:q"}}'),
        ("ReceiveMessage", receive_answer(1, 1024)),
        ("ReceiveMessage", receive_answer(10, 1024)),
        ("ReceiveMessage", receive_answer(10, 256 * 1024)),
    ]
    print("answer                               bytes   check us   botocore parse us   check/parse")
    for name, body in cases[:2] if smoke else cases:
        ours, theirs = per_answer(sqs.operation_model(name), body, 5 if smoke else 200)
        print(f"{name:30} {len(body):>11,} {ours:>10.1f} {theirs:>19.1f} {ours / theirs:>12.2f}")


@contextlib.contextmanager
def silent_endpoint() -> Iterator[str]:
    """127.0.0.1: accepts each connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()


def silent_wait() -> None:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    print("\ncommand against an endpoint that never answers   exit   seconds   line")
    with silent_endpoint() as url:
        queue = f"{url}/123456789012/orders"
        for argv in (
            ["status", "--operator-queue-url", queue],
            ["status", "--stack", "shop"],
            ["peek", queue],
        ):
            err = io.StringIO()
            start = time.perf_counter()
            with contextlib.redirect_stderr(err):
                code = main([*argv, "--endpoint-url", url, "--region", "us-east-1"])
            took = time.perf_counter() - start
            line = err.getvalue().strip().replace(url, "<endpoint>")
            print(f"{' '.join(argv[:2]):48} {code:>4} {took:>9.1f}   {line}")


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="CI: the check's cost, briefly")
    args = parser.parse_args()
    check_cost(args.smoke)
    if not args.smoke:
        silent_wait()


if __name__ == "__main__":
    main_bench()
