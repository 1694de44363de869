"""Replaying each kind of DLQ record, from one run: 1,000 EventBridge DLQ records delivered to
an SQS target (as it is, and through its rule's input transformer) and to a Lambda target
(`Invoke`), beside the SQS kind's replay of 1,000 records; calls per record and records/s, as
ratios against the SQS kind.

Each case starts SQS (bench/sqs_http.py), Lambda's Invoke (bench/lambda_http.py) and
EventBridge's ListTargetsByRule (bench/events_http.py: the replay reads each record's rule, once
per rule) in a child process (`--serve`), so the fakes' CPU is not this process's, every request
held `--latency-ms`
(18 by default, a network round trip) before it is answered, Invoke answered 202 with an
`x-amzn-RequestId` as Lambda accepts an asynchronous invocation. The DLQ starts full of
fresh records (the service's shape, no count yet); the worker's pollers (the local event source,
`LambdaReplay` over the `Replayer`, as `dlq-replay worker` runs them) drain it. Every delay is
drawn at its lowest (0 s with full jitter), so each record is replayed at once: the SQS kind
sends it to the main queue in a batch, an EventBridge record is delivered to its target, one
call a record, as EventBridge's targets take one event a call.

    python bench/bench_kinds.py             # 1,000 records a case, median of 3 (a minute)
    python bench/bench_kinds.py --smoke     # CI: 100 records a case, once (a few seconds)

`connections` counts the TCP connections the clients opened to the fakes: a client that does
not reuse its connections pays a handshake (and on AWS a TLS one) per call.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from events_http import FakeEvents
from lambda_http import FakeLambda
from sqs_http import ACCOUNT, REGION, FakeSqs

QUEUES = ("bench-main", "bench-dlq", "bench-operator", "bench-target")
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:bench-target"
TARGET_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:bench-target"
RULES = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/bench-bus"
# The rules the records name, as ListTargetsByRule lists their targets: bench-rule gives its
# targets the event, bench-shaped its queue what its input transformer makes of the event.
RULE_TARGETS: dict[str, list[dict[str, Any]]] = {
    "bench-rule": [
        {"Id": "queue", "Arn": TARGET_QUEUE_ARN},
        {"Id": "function", "Arn": FUNCTION_ARN},
    ],
    "bench-shaped": [
        {
            "Id": "queue",
            "Arn": TARGET_QUEUE_ARN,
            "InputTransformer": {
                "InputPathsMap": {"id": "$.detail.id", "type": "$.detail-type"},
                "InputTemplate": '{"order": <id>, "rule": <aws.events.rule-name>, '
                '"what": "<type> for <id>"}',
            },
        }
    ],
}
EVENT = json.dumps(
    {
        "version": "0",
        "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        "detail-type": "OrderPlaced",
        "source": "bench.shop",
        "account": ACCOUNT,
        "time": "2026-11-27T10:00:00Z",
        "region": REGION,
        "resources": [],
        "detail": {"id": "x" * 800},
    }
)
# What bench-shaped's transformer makes of EVENT (core/transform.py, AWS's quoting rules).
SHAPED = (
    '{"order": "'
    + "x" * 800
    + '", "rule": "bench-shaped", "what": "OrderPlaced for '
    + "x" * 800
    + '"}'
)
SQS_ATTRIBUTES = {"customer": {"DataType": "String", "StringValue": "bench"}}


def eventbridge_attributes(target_arn: str, rule: str) -> dict[str, Any]:
    """The six attributes EventBridge writes on a target's DLQ record."""
    values = {
        "RULE_ARN": f"{RULES}/{rule}",
        "TARGET_ARN": target_arn,
        "ERROR_CODE": "THROTTLING",
        "ERROR_MESSAGE": "bench: the target throttled every retry",
        "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttempts",
        "RETRY_ATTEMPTS": "2",
    }
    return {name: {"DataType": "String", "StringValue": v} for name, v in values.items()}


@dataclass(frozen=True)
class Case:
    """One kind of record and where it goes."""

    label: str
    dlq_kind: str
    target_arn: str | None  # None: the SQS kind (the main queue)
    rule: str = "bench-rule"

    def attributes(self) -> dict[str, Any]:
        if self.target_arn is None:
            return SQS_ATTRIBUTES
        return eventbridge_attributes(self.target_arn, self.rule)


CASES = (
    Case("sqs kind -> main queue (baseline)", "sqs", None),
    Case("eventbridge -> SQS target", "eventbridge", TARGET_QUEUE_ARN),
    Case("eventbridge -> SQS, transformed", "eventbridge", TARGET_QUEUE_ARN, "bench-shaped"),
    Case("eventbridge -> Lambda target", "eventbridge", FUNCTION_ARN),
)


# --- the child: SQS and Lambda behind a delay, books on request --------------------------------


def serve(latency: float, messages: int, case: str) -> None:
    """Both fakes; the DLQ filled with `case`'s records. Prints the endpoints, then, when a line
    arrives on stdin, the calls each fake answered, and exits."""
    sqs, functions = FakeSqs(latency), FakeLambda(latency)
    events = FakeEvents(latency, RULE_TARGETS)
    urls = {name: sqs.queue(name) for name in QUEUES}
    chosen = next(c for c in CASES if c.label == case)
    sqs.fill("bench-dlq", [EVENT] * messages, chosen.attributes())
    sqs.start()
    functions.start()
    events.start()
    endpoints = {
        "sqs": sqs.endpoint_url,
        "lambda": functions.endpoint_url,
        "events": events.endpoint_url,
    }
    print(json.dumps({**endpoints, **urls}), flush=True)
    sys.stdin.readline()
    with sqs.changed, functions.lock, events.lock:
        books = {
            "sqs": dict(sqs.calls),
            "invocations": sum(functions.invocations.values()),
            "rule_reads": sum(events.reads.values()),
            "target_arrived": len(sqs.queues["bench-target"].arrived),
            "target_bodies": sorted(set(sqs.queues["bench-target"].arrived)),
            "main_arrived": len(sqs.queues["bench-main"].arrived),
            "connections": sqs.connections + functions.connections + events.connections,
        }
    print(json.dumps(books), flush=True)


# --- the parent: a drain per case ---------------------------------------------------------------


class Lowest:
    """A random source that draws every delay at its lowest: each record is replayed at once."""

    def randint(self, a: int, b: int) -> int:
        del b
        return a


@dataclass(frozen=True)
class Drain:
    records: int
    seconds: float
    calls: int
    books: Mapping[str, Any]

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def calls_per_record(self) -> float:
        return self.calls / self.records


def handler(
    case: Case, urls: Mapping[str, str], endpoints: Mapping[str, str]
) -> Callable[..., Any]:
    """The handler `dlq-replay worker` runs, set for the case's kind."""
    import boto3
    from dlq_replay.aws_lambda.replay import LambdaReplay
    from dlq_replay.core.settings import Settings
    from dlq_replay.engine.replayer import Replayer
    from dlq_replay.sqs.client import sqs_client
    from dlq_replay.targets.deliverer import Deliverer, TargetClients
    from dlq_replay.targets.ledger import MemoryLedger

    settings = Settings(
        main_queue_url=urls["bench-main"] if case.target_arn is None else None,
        operator_queue_url=urls["bench-operator"],
        dlq_kind=case.dlq_kind,
        replay_target_arns=frozenset([case.target_arn] if case.target_arn else []),
        endpoint_url_sqs=endpoints["sqs"],
    )
    quiet = logging.getLogger("bench_kinds.replay")
    quiet.disabled = True
    sqs = sqs_client(endpoint_url=endpoints["sqs"], region_name=REGION)
    clients = TargetClients(boto3.Session(region_name=REGION))
    replayer = Replayer(
        settings,
        sqs,
        logger=quiet,
        rng=Lowest(),
        deliverer=Deliverer(clients),
        ledger=MemoryLedger(),
    )
    return LambdaReplay(replayer)


def drain(case: Case, *, messages: int, latency: float, pollers: int) -> Drain:
    from dlq_replay.local.eventsource import LocalEventSource, Polling, run_pollers
    from dlq_replay.sqs.client import sqs_client

    command = [sys.executable, __file__, "--serve", "--case", case.label]
    command += ["--latency-ms", str(latency * 1000), "--messages", str(messages)]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdin is not None
        urls: dict[str, str] = json.loads(child.stdout.readline())
        endpoints = {name: urls.pop(name) for name in ("sqs", "lambda", "events")}
        # boto3 reads a service's endpoint from these (the target clients make their own).
        os.environ["AWS_ENDPOINT_URL_SQS"] = endpoints["sqs"]
        os.environ["AWS_ENDPOINT_URL_LAMBDA"] = endpoints["lambda"]
        os.environ["AWS_ENDPOINT_URL_EVENTBRIDGE"] = endpoints["events"]
        quiet = logging.getLogger("bench_kinds.source")
        quiet.disabled = True
        sqs = sqs_client(endpoint_url=endpoints["sqs"], region_name=REGION)
        source = LocalEventSource(
            sqs,
            urls["bench-dlq"],
            handler(case, urls, endpoints),
            Polling(wait_seconds=1),
            logger=quiet,
        )
        stop = threading.Event()
        started = time.perf_counter()
        threads = run_pollers(source, pollers, stop)
        while source.stats.deleted < messages:
            if child.poll() is not None:
                raise SystemExit(f"bench_kinds: the fakes exited with {child.returncode}")
            time.sleep(0.01)
        seconds = time.perf_counter() - started
        stop.set()
        for thread in threads:
            thread.join()
        child.stdin.write("books\n")
        child.stdin.flush()
        books = json.loads(child.stdout.readline())
        calls = sum(books["sqs"].values()) + books["invocations"] + books["rule_reads"]
        return Drain(source.stats.deleted, seconds, calls, books)
    finally:
        child.terminate()
        child.wait()


def check(case: Case, result: Drain, messages: int) -> str | None:
    """Why the drain did not deliver every record where its kind sends it, or None."""
    books = result.books
    arrived = {
        None: books["main_arrived"],
        TARGET_QUEUE_ARN: books["target_arrived"],
        FUNCTION_ARN: books["invocations"],
    }[case.target_arn]
    if arrived != messages:
        return f"{case.label}: {arrived} of {messages} records arrived"
    if case.target_arn == TARGET_QUEUE_ARN:
        shaped = case.rule == "bench-shaped"
        expected = SHAPED if shaped else EVENT
        if books["target_bodies"] != [expected]:
            return f"{case.label}: the target got {books['target_bodies'][:2]}, not {expected}"
    return None


@dataclass(frozen=True)
class Summary:
    """A case's median over its drains."""

    rate: float
    calls_per_record: float
    connections: int

    @classmethod
    def of(cls, drains: list[Drain]) -> Summary:
        return cls(
            statistics.median(d.rate for d in drains),
            statistics.median(d.calls_per_record for d in drains),
            int(statistics.median(d.books["connections"] for d in drains)),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="100 records a case, once")
    parser.add_argument("--latency-ms", type=float, default=18.0)
    parser.add_argument("--messages", type=int, default=None)
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument(
        "--repeats", type=int, default=None, help="drains of each case, in turn (default 3)"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    latency = args.latency_ms / 1000
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(variable, "bench")
    if args.serve:
        serve(latency, args.messages, args.case)
        return 0
    messages = args.messages or (100 if args.smoke else 1_000)
    repeats = args.repeats or (1 if args.smoke else 3)
    command = " ".join(["python bench/bench_kinds.py", *(sys.argv[1:] if argv is None else argv)])
    print(
        f"bench_kinds: {messages} records a case, {args.pollers} pollers, "
        f"{args.latency_ms:g} ms per request, median of {repeats} ({command})"
    )
    drains: dict[str, list[Drain]] = {case.label: [] for case in CASES}
    for _ in range(repeats):  # in turn, so a busy moment of the machine hits every case
        for case in CASES:
            result = drain(case, messages=messages, latency=latency, pollers=args.pollers)
            problem = check(case, result, messages)
            if problem:
                print(f"bench_kinds: {problem}", file=sys.stderr)
                return 1
            drains[case.label].append(result)
    print(
        f"{'case':34} {'records/s':>9} {'vs sqs':>7} {'calls/record':>12} {'vs sqs':>7} "
        f"{'connections':>11}"
    )
    base = Summary.of(drains[CASES[0].label])
    for case in CASES:
        row = Summary.of(drains[case.label])
        print(
            f"{case.label:34} {row.rate:9.0f} {row.rate / base.rate:6.2f}x "
            f"{row.calls_per_record:12.2f} {row.calls_per_record / base.calls_per_record:6.2f}x "
            f"{row.connections:11d}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
