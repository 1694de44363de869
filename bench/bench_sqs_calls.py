"""What one SQS call costs in CPU, the floor under the redrive's and the worker's CPU per message.

A client-side move makes three calls per 10 messages (ReceiveMessage, SendMessageBatch,
DeleteMessageBatch), so its CPU per message is about 0.3 times a call's. This benchmark makes
those three calls in rounds (bench_end_to_end's baseline loop), in one thread, against the
in-memory SQS over HTTP (bench/sqs_http.py) running in a process of its own (its CPU is not
counted), and reports the user + system CPU per call and per message of each client:

- boto3: `boto3.client("sqs")` as it comes;
- ours, botocore HTTP: `dlq_replay.sqs.client.sqs_client(http="botocore")`, our client
  (client-side parameter validation off, a fixed User-Agent) with botocore's HTTP layer
  (urllib3 over `http.client`);
- ours: `sqs_client()` as every command and the Lambda use it, its HTTP over kept-alive
  sockets (sqs/transport.py, framed by sqs/http11.py);

at 0 ms and at 10 ms per request: a call that waits for the network costs more CPU than one
that does not (caches and the processor go cold while the thread sleeps), and the commands'
calls always wait.

    python bench/bench_sqs_calls.py            # 300 rounds
    python bench/bench_sqs_calls.py --smoke    # CI: 20 rounds
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
from typing import Any

from bench_end_to_end import ATTRIBUTES, BODY_PADDING, move_batch

SOURCE, TARGET = "calls-source", "calls-target"


def serve(rounds: int, latency: float, ready: Any) -> None:
    """The fake SQS, in a child process, with `rounds` batches of 10 waiting in the source."""
    from sqs_http import FakeSqs

    fake = FakeSqs(latency)
    fake.queue(SOURCE)
    fake.queue(TARGET)
    bodies = [f"message {n:06d} {BODY_PADDING}" for n in range(rounds * 10)]
    fake.fill(SOURCE, bodies, ATTRIBUTES)
    ready.send((fake.endpoint_url, fake.url(SOURCE), fake.url(TARGET)))
    fake.serve_forever()


KINDS = ("boto3", "ours, botocore HTTP", "ours")


def make_client(kind: str, endpoint_url: str) -> Any:
    import boto3
    from dlq_replay.sqs.client import sqs_client

    if kind == "boto3":
        return boto3.client("sqs", endpoint_url=endpoint_url, region_name="us-east-1")
    http = "botocore" if kind == "ours, botocore HTTP" else "stdlib"
    return sqs_client(endpoint_url=endpoint_url, region_name="us-east-1", http=http)


def measure(kind: str, rounds: int, latency: float) -> tuple[float, float]:
    """CPU seconds per call and per message over `rounds` receive/send/delete rounds."""
    ours, theirs = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(rounds, latency, theirs), daemon=True)
    server.start()
    try:
        endpoint_url, source, target = ours.recv()
        sqs = make_client(kind, endpoint_url)
        sqs.get_queue_attributes(QueueUrl=source, AttributeNames=["All"])  # connect, warm up
        cpu = _cpu()
        moved = sum(move_batch(sqs, source, target) for _ in range(rounds))
        spent = _cpu() - cpu
        if moved != rounds * 10:
            raise SystemExit(f"bench_sqs_calls: moved {moved} of {rounds * 10}")
        return spent / (rounds * 3), spent / moved
    finally:
        server.kill()
        server.join()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="20 rounds")
    parser.add_argument("--rounds", type=int, default=None, help="default 300")
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 10.0])
    args = parser.parse_args(argv)
    rounds = args.rounds or (20 if args.smoke else 300)
    shown = " ".join(["python bench/bench_sqs_calls.py", *(sys.argv[1:] if argv is None else argv)])
    print(f"bench_sqs_calls: {rounds} rounds of receive/send/delete of 10, one thread ({shown})")
    print(f"{'ms/req':>6}  {'client':19} {'CPU ms/call':>11} {'CPU ms/msg':>10} {'vs boto3':>8}")
    for latency_ms in args.latency_ms:
        base: float | None = None
        for kind in KINDS:
            per_call, per_message = measure(kind, rounds, latency_ms / 1000)
            base = base or per_call
            print(
                f"{latency_ms:>6g}  {kind:19} {per_call * 1000:>11.3f} {per_message * 1000:>10.3f} "
                f"{per_call / base:>7.2f}x",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    sys.exit(main())
