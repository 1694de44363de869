"""The worker's drain rate: messages per second by pollers, through SQS with latency.

Each case starts its own SQS in a child process (`--serve`), so the emulator's CPU is not this
process's, and holds every request `--latency-ms` (18 by default, a network round trip)
before answering. The DLQ starts full. Two emulators:
- `fake` (the figures): the in-memory SQS over HTTP of bench/sqs_http.py (SQS's JSON
  protocol, keep-alive, O(1) or O(log n) per message), so the figures are the worker's
  (botocore included);
- `moto`: moto's server, its DLQ topped up to a shallow depth and its main queue purged every
  50 ms. moto scans its message list several times per message received or deleted, so its
  own process reaches a whole core first: that is where this drain stops scaling on moto.

Side by side in one run, with 1, 4 and 8 pollers of the local event source:
- baseline: a per-record handler (one `SendMessage` per record, what the well-known sample
  does) behind the same event source;
- ours: the handler `dlq-replay worker` runs (`LambdaReplay` over the `Replayer`).

    python bench/bench_worker.py                    # 3,000 messages a case (about a minute)
    python bench/bench_worker.py --emulator moto    # the same drain on moto's server
    python bench/bench_worker.py --smoke            # CI: 200 messages, 1 and 4 pollers
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from sqs_http import REGION, FakeSqs

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

QUEUES = ("bench-main", "bench-dlq", "bench-operator")
TOP_UP_DEPTH = 100
PURGE_EVERY_SECONDS = 0.05
BODY = "x" * 1024
ATTRIBUTES = {"customer": {"DataType": "String", "StringValue": "bench"}}


# --- the children: SQS behind a delay ---------------------------------------------------------


def serve_fake(latency: float, messages: int) -> None:
    """The shared in-memory SQS over HTTP (bench/sqs_http.py), the DLQ filled up front."""
    server = FakeSqs(latency)
    urls = {name: server.queue(name) for name in QUEUES}
    server.fill("bench-dlq", [BODY] * messages, ATTRIBUTES)
    print(json.dumps({"endpoint_url": server.endpoint_url, **urls}), flush=True)
    server.serve_forever()


def serve_moto(latency: float, messages: int) -> None:
    """Run moto on two ports, one delayed (the worker's) and one not (the child's own top-up
    and purges); print the endpoint and queue URLs, then feed and purge."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    os.environ["MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR"] = "false"  # purge at will
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    direct = ThreadedMotoServer("127.0.0.1", 0, verbose=False)
    direct.start()
    app = DomainDispatcherApplication(create_backend_app)

    def delayed(environ: Any, start_response: Any) -> Any:
        time.sleep(latency)
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, delayed, True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sqs = client("http://{}:{}".format(*direct.get_host_and_port()))
    urls = {name: sqs.create_queue(QueueName=name)["QueueUrl"] for name in QUEUES}
    print(
        json.dumps({"endpoint_url": f"http://127.0.0.1:{server.server_port}", **urls}), flush=True
    )
    fed = 0
    while True:
        sqs.purge_queue(QueueUrl=urls["bench-main"])
        depth = int(
            sqs.get_queue_attributes(
                QueueUrl=urls["bench-dlq"], AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]["ApproximateNumberOfMessages"]
        )
        while fed < messages and depth < TOP_UP_DEPTH:
            batch = min(10, messages - fed)
            entries = [
                {"Id": str(n), "MessageBody": BODY, "MessageAttributes": ATTRIBUTES}
                for n in range(batch)
            ]
            sqs.send_message_batch(QueueUrl=urls["bench-dlq"], Entries=entries)  # type: ignore[arg-type]
            fed += batch
            depth += batch
        time.sleep(PURGE_EVERY_SECONDS)


def client(endpoint_url: str, config: Config | None = None) -> SQSClient:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=config or Config(max_pool_connections=32),
    )


# --- the parent: a drain per case -------------------------------------------------------------


@dataclass(frozen=True)
class Drain:
    seconds: float
    deleted: int
    cpu_ms_per_message: float
    server_cpu_ms_per_message: float

    @property
    def rate(self) -> float:
        return self.deleted / self.seconds


def cpu_seconds(pid: int) -> float:
    """User + system CPU of another process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_record_handler(sqs: SQSClient, main_url: str) -> Callable[..., Mapping[str, Any]]:
    """The baseline: one SendMessage per record, one after another, as the sample does."""

    def handle(event: dict[str, Any], context: Any) -> Mapping[str, Any]:
        del context
        for record in event["Records"]:
            attributes: dict[str, Any] = {
                name: {"DataType": value["dataType"], "StringValue": value["stringValue"]}
                for name, value in record["messageAttributes"].items()
                if "stringValue" in value
            }
            sqs.send_message(
                QueueUrl=main_url, MessageBody=record["body"], MessageAttributes=attributes
            )
        return {"batchItemFailures": []}

    return handle


def our_handler(sqs: SQSClient, urls: Mapping[str, str]) -> Callable[..., Mapping[str, Any]]:
    from dlq_replay.aws_lambda.replay import LambdaReplay
    from dlq_replay.core.settings import Settings
    from dlq_replay.engine.replayer import Replayer

    settings = Settings(
        main_queue_url=urls["bench-main"], operator_queue_url=urls["bench-operator"]
    )
    quiet = logging.getLogger("bench_worker.replay")
    quiet.disabled = True
    return LambdaReplay(Replayer(settings, sqs, logger=quiet))


def drain(case: str, pollers: int, *, messages: int, latency: float, emulator: str) -> Drain:
    from dlq_replay.local.eventsource import LocalEventSource, Polling, run_pollers
    from dlq_replay.sqs.client import sqs_client

    child = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            "--emulator",
            emulator,
            "--latency-ms",
            str(latency * 1000),
            "--messages",
            str(messages),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        urls: dict[str, str] = json.loads(child.stdout.readline())
        sqs = sqs_client(endpoint_url=urls.pop("endpoint_url"), region_name=REGION)
        handler = (
            per_record_handler(sqs, urls["bench-main"])
            if case == "baseline"
            else our_handler(sqs, urls)
        )
        quiet = logging.getLogger("bench_worker.source")
        quiet.disabled = True
        source = LocalEventSource(
            sqs, urls["bench-dlq"], handler, Polling(wait_seconds=1), logger=quiet
        )
        stop = threading.Event()
        started, cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_seconds(child.pid)
        threads = run_pollers(source, pollers, stop)
        while source.stats.deleted < messages:
            if child.poll() is not None:
                raise SystemExit(f"bench_worker: the emulator exited with {child.returncode}")
            time.sleep(0.01)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        server_cpu = cpu_seconds(child.pid) - server_cpu
        stop.set()
        for thread in threads:
            thread.join()
        deleted = source.stats.deleted
        return Drain(seconds, deleted, cpu / deleted * 1000, server_cpu / deleted * 1000)
    finally:
        child.terminate()
        child.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="200 messages, 1 and 4 pollers")
    parser.add_argument("--latency-ms", type=float, default=18.0)
    parser.add_argument("--messages", type=int, default=None)
    parser.add_argument("--pollers", type=int, nargs="+", default=None)
    parser.add_argument(
        "--emulator",
        choices=("fake", "moto"),
        default="fake",
        help="fake: an O(1) in-memory SQS (the figures); moto: moto's server, whose own CPU "
        "per message caps the drain",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    latency = args.latency_ms / 1000
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(variable, "bench")
    if args.serve:
        serve = serve_fake if args.emulator == "fake" else serve_moto
        serve(latency, args.messages)
        return 0
    messages = args.messages or (200 if args.smoke else 3_000)
    pollers = args.pollers or ([1, 4] if args.smoke else [1, 4, 8])
    command = " ".join(["python bench/bench_worker.py", *(sys.argv[1:] if argv is None else argv)])
    print(
        f"bench_worker: {messages} messages a case, {args.latency_ms:g} ms per request ({command})"
    )
    print(
        f"{'pollers':>7}  {'handler':28} {'msg/s':>7} {'vs baseline':>11} "
        f"{'CPU ms/msg':>10} {'server CPU ms/msg':>17}"
    )
    common: dict[str, Any] = {"latency": latency, "emulator": args.emulator}
    for count in pollers:
        # The baseline is 5x slower: a fifth of the messages gives its rate in the same time.
        baseline = drain("baseline", count, messages=max(50, messages // 5), **common)
        ours = drain("ours", count, messages=messages, **common)
        for name, result in (("per-record (baseline)", baseline), ("ours", ours)):
            ratio = result.rate / baseline.rate
            print(
                f"{count:7}  {name:28} {result.rate:7.0f} {ratio:10.1f}x "
                f"{result.cpu_ms_per_message:10.2f} {result.server_cpu_ms_per_message:17.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
