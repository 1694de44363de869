"""Benchmark of the console's overview on a region of 500 queues (250 of them DLQs).

On the in-memory SQS over HTTP (bench/sqs_http.py, every request held a fixed latency; the
queues given RedrivePolicy attributes here), which refuses CloudWatch's GetMetricData at once
(HTTP 400, as the demo's emulator does: the ages come from the snapshots):

1. one read of the overview, as the console's refresher makes it: SQS calls and seconds
   (median of several), with the reader's thread pool and with one call at a time;
2. pages polling the overview over HTTP (as the page's script does, every 5 s, each page at
   its own phase) for 30 s: 1 page, then 10 pages, each on a fresh console. The SQS calls are
   counted on the fake: 10 pages must cost what 1 page costs (the refresher's reads), within
   one read at the edges of the window.

`--smoke` (make bench-smoke) runs it small and fast: 40 queues, a 0.5 s refresh, 1.5 s of polls.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import secrets
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from sqs_http import ACCOUNT, OPERATIONS, REGION, FakeSqs


class RegionSqs(FakeSqs):
    """The fake SQS with redrive policies: `sources[name]` is the DLQ that queue names."""

    def __init__(self, latency: float) -> None:
        super().__init__(latency)
        self.sources: dict[str, str] = {}

    def _get_queue_attributes(self, request: dict[str, Any]) -> dict[str, Any]:
        found = super()._get_queue_attributes(request)
        name = str(request["QueueUrl"]).rsplit("/", 1)[1]
        target = self.sources.get(name)
        if target is not None:
            arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{target}"
            policy = {"deadLetterTargetArn": arn, "maxReceiveCount": 5}
            found["Attributes"]["RedrivePolicy"] = json.dumps(policy)
        return found


def region(latency: float, queues: int) -> RegionSqs:
    """`queues` queues: half of them sources, each with a DLQ of its own holding a few."""
    fake = RegionSqs(latency)
    fake.start()
    for n in range(queues // 2):
        source, dlq = f"orders-{n:04d}", f"orders-{n:04d}-dlq"
        fake.queue(source)
        fake.queue(dlq)
        fake.sources[source] = dlq
        fake.fill(dlq, [f"parked {n}"] * (n % 7), {})
    return fake


def sqs_calls(fake: FakeSqs) -> int:
    with fake.changed:
        return sum(n for op, n in fake.calls.items() if op in OPERATIONS)


def make_console(fake: FakeSqs, folder: Path) -> Any:
    from dlq_replay.cli.console import Connection
    from dlq_replay.cli.console.state import Console
    from dlq_replay.cli.main import build_parser

    args = build_parser(["console"]).parse_args(
        ["console", "--endpoint-url", fake.endpoint_url, "--region", REGION]
    )
    return Console(
        Connection.from_args(args),
        folder,
        token=secrets.token_urlsafe(24),
        csrf=secrets.token_urlsafe(24),
        hosts=frozenset({"localhost", "127.0.0.1"}),
        read_only=args.read_only,
    )


def reads(fake: RegionSqs, console: Any, workers: int, times: int) -> tuple[float, int, int]:
    """Median seconds and SQS calls of one overview read; the DLQs it listed."""
    from dlq_replay.cli.console.inventory import read_overview

    def read() -> Any:
        return read_overview(
            console.connection.sqs,
            console.connection.client,
            console.connection.deployment,
            lambda _: ({}, None),
            workers=workers,
        )

    read()  # the clients' first requests (connections) are not the steady cost
    seconds: list[float] = []
    calls: list[int] = []
    listed = 0
    for _ in range(times):
        before, started = sqs_calls(fake), time.perf_counter()
        view = read()
        seconds.append(time.perf_counter() - started)
        calls.append(sqs_calls(fake) - before)
        listed = len(view.rows)
    if listed != len(fake.sources):
        raise SystemExit(f"bench_overview: listed {listed} DLQs, not {len(fake.sources)}")
    return statistics.median(seconds), int(statistics.median(calls)), listed


def settled(fake: FakeSqs, quiet: float = 0.2) -> int:
    """The fake's SQS calls once none came for `quiet` s (a read under way has ended)."""
    seen = sqs_calls(fake)
    while True:
        time.sleep(quiet)
        now = sqs_calls(fake)
        if now == seen:
            return now
        seen = now


def polled(
    fake: RegionSqs, folder: Path, pages: int, seconds: float, every: float
) -> tuple[int, int]:
    """SQS calls, and page requests, while `pages` pages poll the overview every `every` s
    for `seconds` (the first page at once, the others each at its own phase); the console
    stops at the end of the window."""
    from dlq_replay.cli.console.app import create_app
    from werkzeug.serving import make_server

    console = make_console(fake, folder)
    server = make_server("127.0.0.1", 0, create_app(console), threaded=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/{console.token}/api/overview"
    failures: list[str] = []
    asked: list[int] = []
    before = settled(fake)
    start = time.monotonic()
    end = start + seconds
    rng = random.Random(pages)

    def page(phase: float) -> None:
        due = start + phase
        while (now := time.monotonic()) < end:
            time.sleep(max(0.0, min(due, end) - now))
            if time.monotonic() >= end:
                break
            try:
                with urllib.request.urlopen(url, timeout=30) as answer:
                    json.load(answer)
                asked.append(1)
            except OSError as error:
                failures.append(str(error))
            due += every

    threads = [
        threading.Thread(target=page, args=(0.0 if n == 0 else rng.uniform(0, every),))
        for n in range(pages)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        console.close()
        server.shutdown()
        server.server_close()
    if failures:
        raise SystemExit(f"bench_overview: a page's request failed: {failures[0]}")
    return settled(fake) - before, len(asked)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=500)
    parser.add_argument("--latency-ms", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the pages poll")
    parser.add_argument("--smoke", action="store_true", help="small: the gate keeps it running")
    args = parser.parse_args(argv)
    if args.queues < 2 or args.latency_ms < 0 or args.seconds <= 0:
        parser.error("--queues must be 2 or more, --latency-ms 0 or more, --seconds above 0")
    from dlq_replay.cli.console import state

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    queues, seconds, times = (40, 1.5, 2) if args.smoke else (args.queues, args.seconds, 5)
    if args.smoke:
        state.OVERVIEW_SECONDS = 0.5
    every = state.OVERVIEW_SECONDS  # the page's script polls at the refresher's period
    latency = args.latency_ms / 1000
    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(
            XDG_STATE_HOME=folder,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY=secrets.token_hex(8),
            AWS_DEFAULT_REGION=REGION,
        )
        fake = region(latency, queues)
        try:
            console = make_console(fake, Path(folder))
            pooled_s, pooled_calls, dlqs = reads(fake, console, 8, times)
            serial_s, serial_calls, _ = reads(fake, console, 1, times)
            one_page, one_asked = polled(fake, Path(folder), 1, seconds, every)
            ten_pages, ten_asked = polled(fake, Path(folder), 10, seconds, every)
        finally:
            fake.stop()
    print(
        f"bench_overview: {queues} queues ({dlqs} DLQs), {args.latency_ms:g} ms per SQS call, "
        f"refresh every {every:g} s"
    )
    print(f"{'case':<44} {'seconds':>8} {'SQS calls':>10} {'page requests':>14}")
    print(f"{'one overview read (8 calls in flight)':<44} {pooled_s:>8.3f} {pooled_calls:>10}")
    print(f"{'one overview read (1 call at a time)':<44} {serial_s:>8.3f} {serial_calls:>10}")
    for pages, calls, asked in ((1, one_page, one_asked), (10, ten_pages, ten_asked)):
        case = f"{pages} page{'s' if pages > 1 else ''} polling every {every:g} s"
        print(f"{case:<44} {seconds:>8.1f} {calls:>10} {asked:>14}")
    if pooled_calls != queues + 1:
        raise SystemExit(f"bench_overview: a read made {pooled_calls} calls, not {queues + 1}")
    if abs(ten_pages - one_page) > pooled_calls:
        raise SystemExit("bench_overview: 10 pages did not cost what 1 page costs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
