"""Benchmark of `dlq-replay console` on a large dead-letter queue, beside the CLI.

A 10,000-message operator queue on the in-memory SQS over HTTP (bench/sqs_http.py, every
request held a fixed latency), 1,000 of them parked `rejected`:

1. the console reads the queue into its snapshot and shows the first page of the filter
   `reason=rejected` (seconds, SQS calls);
2. the console redrives the filter's result to the main queue (its code path: the page's
   POST, `ops.prepare` + `ClientMove.run`, audited) until its tally is final;
3. `dlq-replay redrive --filter-reason rejected` (in process, one process like the console)
   does the same on a fresh copy of the queue.

Each redrive must move exactly the selected messages (the fake's books are checked). The
console's pages are asked through Flask's test client: the figures are the console's work and
SQS's, not a browser's. `--smoke` (make bench-smoke) runs it small.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqs_http import OPERATIONS, FakeSqs

OPERATOR = "orders-operator"
MAIN = "orders"


def sqs_calls(fake: FakeSqs) -> int:
    return sum(n for op, n in fake.calls.items() if op in OPERATIONS or op == "ReceiveMessage")


def reason(value: str) -> dict[str, Any]:
    return {"dlq-replay-park-reason": {"DataType": "String", "StringValue": value}}


def fake_queue(latency: float, messages: int, selected: int) -> FakeSqs:
    fake = FakeSqs(latency)
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


def wait(check: Any, seconds: float = 600) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            raise SystemExit("bench_console: timed out")
        time.sleep(0.2)
    return found


def console_run(fake: FakeSqs, folder: Path) -> tuple[float, int, float, int]:
    from dlq_replay.cli.console.app import create_app
    from dlq_replay.cli.console.state import Console
    from dlq_replay.cli.deployment import command_sqs, resolve_deployment
    from dlq_replay.cli.main import build_parser

    args = build_parser(["console"]).parse_args(["console", *options(fake)])
    console = Console(
        args,
        command_sqs(args),
        resolve_deployment(args),
        folder,
        token="t",
        csrf="c",
        hosts=frozenset({"localhost"}),
    )
    web = create_app(console).test_client()
    web.get("/?token=t")
    calls, started = sqs_calls(fake), time.perf_counter()
    web.get(f"/q/{OPERATOR}")
    wait(lambda: web.get(f"/api/q/{OPERATOR}/snapshot").get_json()["state"] != "reading")
    page = web.get(f"/q/{OPERATOR}?reason=rejected").get_data(as_text=True)
    read_seconds, read_calls = time.perf_counter() - started, sqs_calls(fake) - calls
    shown = re.search(r'id="match-count">(\d+)<', page)
    assert shown, "no first page"
    calls, started = sqs_calls(fake), time.perf_counter()
    answer = web.post(
        f"/q/{OPERATOR}/redrive",
        data={"scope": "filter", "reason": "rejected", "to": "main", "csrf": "c"},
    )
    job_id = answer.headers["Location"].rsplit("/", 1)[-1]
    job = wait(lambda: (j := web.get(f"/api/jobs/{job_id}").get_json())["state"] != "running" and j)
    move_seconds, move_calls = time.perf_counter() - started, sqs_calls(fake) - calls
    assert job["state"] == "done", job
    assert job["adds_up"], job
    return read_seconds, read_calls, move_seconds, move_calls


def cli_run(fake: FakeSqs) -> tuple[float, int]:
    from dlq_replay.cli.main import main

    calls, started = sqs_calls(fake), time.perf_counter()
    argv = ["redrive", "--filter-reason", "rejected", "--json", *options(fake)]
    with open(os.devnull, "w") as sink:
        stdout, sys.stdout = sys.stdout, sink
        try:
            code = main(argv)
        finally:
            sys.stdout = stdout
    assert code == 0, code
    return time.perf_counter() - started, sqs_calls(fake) - calls


def check(fake: FakeSqs, selected: int, case: str) -> None:
    arrived = fake.queues[MAIN].arrived
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
        fake = fake_queue(latency, messages, selected)
        try:
            read_s, read_calls, move_s, move_calls = console_run(fake, Path(state))
            check(fake, selected, "the console")
        finally:
            fake.stop()
        fake = fake_queue(latency, messages, selected)
        try:
            cli_s, cli_calls = cli_run(fake)
            check(fake, selected, "the CLI")
        finally:
            fake.stop()
    print(
        f"bench_console: {messages} messages, {selected} selected, "
        f"{args.latency_ms:g} ms per SQS call"
    )
    print(f"{'case':<52} {'seconds':>8} {'SQS calls':>10}")
    print(f"{'console: snapshot read + first filtered page':<52} {read_s:>8.2f} {read_calls:>10}")
    print(f"{'console: redrive the filter result':<52} {move_s:>8.2f} {move_calls:>10}")
    print(f"{'cli: redrive --filter-reason':<52} {cli_s:>8.2f} {cli_calls:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
