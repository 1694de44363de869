"""Benchmark of `dlq-replay console` on a large dead-letter queue, beside the CLI.

A 10,000-message operator queue on the in-memory SQS over HTTP (bench/sqs_http.py, every
request held a fixed latency, in a process of its own as SQS is: bench/sqs_process.py), 1,000
of them parked `rejected`:

1. the console reads the queue into its snapshot and shows the first page of the filter
   `reason=rejected` (seconds, SQS calls); the snapshot must be complete (not partial) and
   hold every message;
2. `dlq-replay export --file` (in process) reads the same queue on the same fake: the same
   read, to the user's file, so the ratio of the two is the console's own cost;
3. the console redrives the filter's result to the main queue (its code path: the page's
   POST, `ops.clientmove.ClientMove.run`, audited) until its tally is final;
4. `dlq-replay redrive --filter-reason rejected` (in process, one process like the console)
   does the same on a fresh copy of the queue;
5. (not with --smoke) a snapshot of 100,000 messages in a process of its own: its seconds,
   whether it is complete, and the peak RSS it added (resource.getrusage's high-water mark
   after the read, less the mark before it; the fake holds the messages in its own process).

Each redrive must move exactly the selected messages (the fake's books are checked). The
console's pages are asked through Flask's test client: the figures are the console's work and
SQS's, not a browser's. `--smoke` (make bench-smoke) runs it small.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqs_http import OPERATIONS
from sqs_process import Hosted as FakeSqs
from sqs_process import hosted_sqs

OPERATOR = "orders-operator"
MAIN = "orders"
TOKEN = "/t"  # the console's pages live under its token
LARGE = 100_000  # the snapshot whose memory is measured (not with --smoke)


def sqs_calls(fake: FakeSqs) -> int:
    calls = fake.call_counts()
    return sum(n for op, n in calls.items() if op in OPERATIONS or op == "ReceiveMessage")


def reason(value: str) -> dict[str, Any]:
    return {"dlq-replay-park-reason": {"DataType": "String", "StringValue": value}}


def fake_queue(latency: float, messages: int, selected: int) -> FakeSqs:
    fake = hosted_sqs(latency)
    fake.start()
    fake.queue(OPERATOR)
    fake.queue(MAIN)
    fake.fill(
        OPERATOR, [f'{{"order": {n}}}' for n in range(messages - selected)], reason("max-attempts")
    )
    fake.fill(OPERATOR, [f'{{"order": "r{n}"}}' for n in range(selected)], reason("rejected"))
    return fake


def options(fake: FakeSqs) -> list[str]:
    return [
        "--endpoint-url",
        fake.endpoint_url,
        "--main-queue-url",
        fake.url(MAIN),
        "--operator-queue-url",
        fake.url(OPERATOR),
    ]


def wait(check: Any, seconds: float = 1200, pause: float = 0.2) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            raise SystemExit("bench_console: timed out")
        time.sleep(pause)
    return found


def console_of(fake: FakeSqs, folder: Path) -> Any:
    """The console on the fake, and Flask's test client for its pages (under the token)."""
    from dlq_replay.cli.console import Connection
    from dlq_replay.cli.console.app import create_app
    from dlq_replay.cli.console.state import Console
    from dlq_replay.cli.main import build_parser

    args = build_parser(["console"]).parse_args(["console", *options(fake)])
    console = Console(
        Connection.from_args(args),
        folder,
        token="t",
        csrf="c",
        hosts=frozenset({"localhost"}),
        read_only=args.read_only,
    )
    return console, create_app(console).test_client()


def read_snapshot(fake: FakeSqs, web: Any, console: Any, messages: int) -> tuple[float, int, float]:
    """The snapshot read and the first filtered page: seconds, SQS calls, CPU seconds of this
    process (the fake's are its own process's). The read must be complete and hold every
    message."""
    calls, started, cpu = sqs_calls(fake), time.perf_counter(), time.process_time()
    web.get(f"{TOKEN}/q/{OPERATOR}")
    # Ready is watched in process (a page's poll would add an SQS call and its CPU each time).
    wait(lambda: all(s.state != "reading" for s in console.snapshots()), pause=0.02)
    page = web.get(f"{TOKEN}/q/{OPERATOR}?reason=rejected").get_data(as_text=True)
    seconds, used = time.perf_counter() - started, sqs_calls(fake) - calls
    cpu = time.process_time() - cpu
    assert re.search(r'id="match-count">(\d+)<', page), "no first page"
    (snapshot,) = console.snapshots()
    if snapshot.state != "ready" or snapshot.partial or snapshot.examined != messages:
        raise SystemExit(
            f"bench_console: the snapshot is {snapshot.state}, {snapshot.examined} of about "
            f"{snapshot.expected} messages: {snapshot.partial or snapshot.error}"
        )
    return seconds, used, cpu


def console_redrive(fake: FakeSqs, web: Any) -> tuple[float, int]:
    calls, started = sqs_calls(fake), time.perf_counter()
    answer = web.post(
        f"{TOKEN}/q/{OPERATOR}/redrive",
        data={"scope": "filter", "reason": "rejected", "to": "main", "csrf": "c"},
    )
    job_id = answer.headers["Location"].rsplit("/", 1)[-1]
    job = wait(
        lambda: (j := web.get(f"{TOKEN}/api/jobs/{job_id}").get_json())["state"] != "running" and j
    )
    seconds, used = time.perf_counter() - started, sqs_calls(fake) - calls
    assert job["state"] == "done", job
    assert job["adds_up"], job
    return seconds, used


def cli_export(fake: FakeSqs, folder: Path, messages: int) -> tuple[float, int, float]:
    """`dlq-replay export` of the operator queue to a file (no delete): seconds, SQS calls,
    CPU seconds."""
    from dlq_replay.cli.main import main

    archive = folder / "export.jsonl"
    archive.unlink(missing_ok=True)
    calls, started, cpu = sqs_calls(fake), time.perf_counter(), time.process_time()
    code = quietly(main, ["export", "operator", "--file", str(archive), "--json", *options(fake)])
    seconds, used = time.perf_counter() - started, sqs_calls(fake) - calls
    cpu = time.process_time() - cpu
    with archive.open("rb") as lines:
        written = sum(1 for _ in lines)
    assert code == 0, code
    assert written == messages, (written, messages)
    return seconds, used, cpu


def quietly(run: Any, argv: list[str]) -> int:
    with open(os.devnull, "w") as sink:
        stdout, sys.stdout = sys.stdout, sink
        try:
            return int(run(argv))
        finally:
            sys.stdout = stdout


def peak_rss_mb() -> float:
    """The process's peak resident set so far (Linux reports KiB), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_run(messages: int, latency: float, state: Path) -> dict[str, float]:
    """A snapshot of `messages` in this process: seconds, and the peak RSS it added."""
    fake = fake_queue(latency, messages, messages // 10)
    try:
        before = peak_rss_mb()
        console, web = console_of(fake, state)
        started = time.perf_counter()
        read_snapshot(fake, web, console, messages)
        return {
            "seconds": time.perf_counter() - started,
            "before_mb": before,
            "peak_mb": peak_rss_mb(),
        }
    finally:
        fake.stop()


def cli_run(fake: FakeSqs) -> tuple[float, int]:
    from dlq_replay.cli.main import main

    calls, started = sqs_calls(fake), time.perf_counter()
    code = quietly(main, ["redrive", "--filter-reason", "rejected", "--json", *options(fake)])
    assert code == 0, code
    return time.perf_counter() - started, sqs_calls(fake) - calls


def check(fake: FakeSqs, selected: int, case: str) -> None:
    arrived = fake.arrived(MAIN)
    if (
        len(arrived) != selected
        or len(set(arrived)) != selected
        or not all('"r' in b for b in arrived)
    ):
        raise SystemExit(
            f"bench_console: {case} moved {len(arrived)} messages, not the {selected} chosen"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--selected", type=int, default=1_000)
    parser.add_argument("--latency-ms", type=float, default=2.0)
    parser.add_argument("--smoke", action="store_true", help="small: the gate keeps it running")
    parser.add_argument("--rss", type=int, metavar="N", help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    messages, selected = (1_000, 100) if args.smoke else (args.messages, args.selected)
    latency = args.latency_ms / 1000
    with tempfile.TemporaryDirectory() as state:
        # The audit trail's local file, and credentials the fake accepts.
        os.environ.update(
            XDG_STATE_HOME=state,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY=secrets.token_hex(8),
            AWS_DEFAULT_REGION="us-east-1",
            # The fake is SQS alone: STS refuses at once (the trail records "unknown").
            AWS_ENDPOINT_URL_STS="http://127.0.0.1:9",
        )
        if args.rss:
            print(json.dumps(rss_run(args.rss, latency, Path(state))))
            return 0
        fake = fake_queue(latency, messages, selected)
        try:
            console, web = console_of(fake, Path(state))
            read_s, read_calls, read_cpu = read_snapshot(fake, web, console, messages)
            export_s, export_calls, export_cpu = cli_export(fake, Path(state), messages)
            move_s, move_calls = console_redrive(fake, web)
            check(fake, selected, "the console")
        finally:
            fake.stop()
        fake = fake_queue(latency, messages, selected)
        try:
            cli_s, cli_calls = cli_run(fake)
            check(fake, selected, "the CLI")
        finally:
            fake.stop()
    large = None if args.smoke else rss_child(args.latency_ms)
    print(
        f"bench_console: {messages} messages, {selected} selected, "
        f"{args.latency_ms:g} ms per SQS call"
    )
    print(f"{'case':<52} {'seconds':>8} {'SQS calls':>10}")
    print(f"{'console: snapshot read + first filtered page':<52} {read_s:>8.2f} {read_calls:>10}")
    print(
        f"{'cli: export --file (the same read, same fake)':<52} {export_s:>8.2f} {export_calls:>10}"
    )
    print(f"{'console: redrive the filter result':<52} {move_s:>8.2f} {move_calls:>10}")
    print(f"{'cli: redrive --filter-reason':<52} {cli_s:>8.2f} {cli_calls:>10}")
    print(
        f"snapshot / export: {read_s / export_s:.2f}; CPU of this process (the fake has its "
        f"own): snapshot {read_cpu:.2f} s, export {export_cpu:.2f} s; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    if large is not None:
        print(
            f"snapshot of {LARGE:,} messages: {large['seconds']:.1f} s, complete; peak RSS "
            f"{large['peak_mb']:.0f} MB, {large['peak_mb'] - large['before_mb']:.0f} MB above "
            f"the {large['before_mb']:.0f} MB before the read"
        )
    return 0


def rss_child(latency_ms: float) -> dict[str, float]:
    """`rss_run` in a process of its own: the peak RSS is the large read's alone."""
    found = subprocess.run(
        [sys.executable, __file__, "--rss", str(LARGE), "--latency-ms", str(latency_ms)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(found.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    sys.exit(main())
