"""What the audit trail adds to a redrive's start: time to its first ReceiveMessage and first
SendMessageBatch, with the trail in a DynamoDB table, in the local file, and with none.

Each sample is `dlq-replay redrive --client-side` of 10 parked messages, run in this process
against moto's server in a process of its own (every service on one port of 127.0.0.1, so
every call is a real HTTP round trip, and the server's work does not share this process's
GIL; the queues are named by URL). The clock starts when
the command's run function is called and stops at the first request of each kind (`CPU to
send`: the process's CPU time until the first send, all threads: what a loaded machine
stretches); the figure is the median over N runs, and `gate wait` is how long the command
waited for the audit's begin record after its own checks (0 when the record was written
while they ran). "none" runs it with an unrecorded audit (as a dry run is): the baseline.

    python bench/bench_audit.py            # 15 runs a case
    python bench/bench_audit.py --smoke    # CI: 3 a case
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
from dlq_replay import audit
from dlq_replay.audit.store import TABLE_KEYS
from dlq_replay.cli.auditing import action_of
from dlq_replay.cli.main import build_parser
from dlq_replay.cli.redrive import run_redrive
from dlq_replay.demo.emulator import create_queues, emulator_client

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

TABLE = "bench-audit"
ATTRIBUTES: dict[str, MessageAttributeValueTypeDef] = {
    "dlq-replay-park-reason": {"DataType": "String", "StringValue": "max-attempts"},
}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's server in a child process on a free port of 127.0.0.1; yields its endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(timeout=10)


def create_table(endpoint: str) -> None:
    boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    ).create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        **TABLE_KEYS,
    )


def one_run(endpoint: str, urls: Any, case: str) -> dict[str, float]:
    """One redrive; the seconds to its first receive and first send, and the gate's wait."""
    sqs = emulator_client(endpoint)
    sqs.send_message_batch(
        QueueUrl=urls.operator,
        Entries=[
            {"Id": str(n), "MessageBody": f"m{n}", "MessageAttributes": ATTRIBUTES}
            for n in range(10)
        ],
    )
    if case == "table":
        os.environ["DLQ_REPLAY_AUDIT_TABLE"] = TABLE
    else:
        os.environ.pop("DLQ_REPLAY_AUDIT_TABLE", None)
    argv = ["redrive", "--client-side", "--wait-seconds", "0", "--json"]
    argv += ["--endpoint-url", endpoint, "--operator-queue-url", urls.operator]
    argv += ["--main-queue-url", urls.main]
    args = build_parser(["redrive"]).parse_args(argv)
    session = boto3.Session(
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
        region_name="us-east-1",
    )
    first: dict[str, float] = {}
    started = time.perf_counter()
    cpu = time.process_time()

    def seen(event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation not in first:
            first[operation] = time.perf_counter() - started
            first[f"{operation} cpu"] = time.process_time() - cpu

    session.events.register("before-send.sqs.ReceiveMessage", seen)
    session.events.register("before-send.sqs.SendMessageBatch", seen)
    args._aws_session = session
    run = inspect.unwrap(run_redrive)  # the run function itself: it takes its audit
    started, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        if case == "none":
            action = audit.Action.unrecorded("redrive")
            code = run(args, action)
        else:
            # What `@audited` does: the command's audit, held by the run function.
            with action_of(args, "redrive") as action:
                code = action.ended(run(args, action))
    assert code == 0, code
    return {
        "receive": first["ReceiveMessage"],
        "send": first["SendMessageBatch"],
        "cpu": first["SendMessageBatch cpu"],
        "gate": action.waited,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="3 runs a case, for CI")
    args = parser.parse_args(argv)
    runs = 3 if args.smoke else 15
    cases = ("none", "file", "table")
    results: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
    with moto_server() as endpoint, tempfile.TemporaryDirectory() as state:
        os.environ.update(
            XDG_STATE_HOME=state,
            AWS_ACCESS_KEY_ID="demo",
            AWS_SECRET_ACCESS_KEY="demo",
            AWS_DEFAULT_REGION="us-east-1",
        )
        create_table(endpoint)
        urls = create_queues(emulator_client(endpoint), prefix="bench")
        one_run(endpoint, urls, "table")  # warm: botocore's data files, the server's first calls
        for _ in range(runs):
            for case in cases:  # interleaved: a busier moment hits every case alike
                results[case].append(one_run(endpoint, urls, case))
    command = "python bench/bench_audit.py" + (" --smoke" if args.smoke else "")
    print(f"bench_audit: {command} (median of {runs} runs, moto's server on 127.0.0.1)")
    print(f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} CPUs")
    print(
        f"{'trail':<8} {'1st receive ms':>15} {'1st send ms':>12} {'CPU to send ms':>15} "
        f"{'gate wait ms':>13}"
    )
    for case, samples in results.items():
        receive, send, cpu, gate = (
            statistics.median(sample[key] for sample in samples) * 1000
            for key in ("receive", "send", "cpu", "gate")
        )
        print(f"{case:<8} {receive:>15.1f} {send:>12.1f} {cpu:>15.1f} {gate:>13.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
