"""What following costs the replay: per invocation (a batch of 10 records), the AWS calls and
the milliseconds of the replay with FOLLOW_TABLE (one UpdateItem of the recovery tally) beside
without, on an in-process moto; and the cold start (import + first call, fresh processes, the
outage breaker on as the template deploys it) of a tree before following beside this one.

    python bench/bench_follow.py                         # 200 invocations a case, cold starts
    python bench/bench_follow.py --smoke                 # CI: 20 invocations, no cold start
    python bench/bench_follow.py --before /tmp/old/layers/replay
                    # the tree to compare the cold start with (default: none, this tree only)
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

ROOT = Path(__file__).resolve().parents[1]
REGION = "us-east-1"
TABLE = "bench-follow"


def _table(dynamodb: Any) -> None:
    dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    )


def invocations(follow: bool, runs: int) -> tuple[list[float], Counter[str]]:
    """`runs` invocations of 10 records each; their times (ms) and the calls by service."""
    from dlq_replay.aws_lambda.replay import LambdaReplay
    from dlq_replay.local.eventsource import lambda_event

    with mock_aws():
        session = boto3.Session(region_name=REGION)
        sqs = session.client("sqs")
        urls = {
            n: sqs.create_queue(QueueName=f"bench-{n}")["QueueUrl"] for n in ("main", "dlq", "op")
        }
        dlq_arn = sqs.get_queue_attributes(QueueUrl=urls["dlq"], AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        env = {
            "MAIN_QUEUE_URL": urls["main"],
            "OPERATOR_QUEUE_URL": urls["op"],
            "OUTAGE_BREAKER": "off",
            **({"FOLLOW_TABLE": TABLE} if follow else {}),
        }
        if follow:
            _table(session.client("dynamodb"))
        calls: Counter[str] = Counter()

        def count(event_name: str, **_: Any) -> None:
            calls[event_name.split(".")[1]] += 1

        session.events.register("before-call", count)
        logger = logging.getLogger("bench_follow")
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
        replay_sqs = session.client("sqs")
        replay = LambdaReplay.from_env(env, sqs=replay_sqs, logger=logger, session=session)
        times = []
        for run in range(runs):
            messages = [
                {
                    "MessageId": f"m-{run}-{i}",
                    "ReceiptHandle": f"r-{run}-{i}",
                    "Body": "x" * 256,
                    "Attributes": {"ApproximateReceiveCount": "1"},
                    "MessageAttributes": {},
                }
                for i in range(10)
            ]
            event = lambda_event(messages, dlq_arn, REGION)
            started = time.perf_counter()
            replay(event)
            times.append((time.perf_counter() - started) * 1000)
            if run == 0:
                calls.clear()  # the first call's client set-up aside
        calls["invocations"] = runs - 1
        return times[1:], calls


def cold_starts(before: Path | None, runs: int) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_cold_start import BREAKER_ON, Case, sample

    function = ROOT / "functions" / "replay"
    cases = []
    if before is not None:
        cases.append(Case("before, breaker on", function, before, BREAKER_ON))
    now = ROOT / "layers" / "replay"
    cases.append(Case("now, breaker on", function, now, BREAKER_ON))
    cases.append(Case("now, + FOLLOW_TABLE", function, now, (*BREAKER_ON, ("FOLLOW_TABLE", TABLE))))
    # The least of each: a machine shared with other work only ever adds to a time.
    print(f"cold start: least of {runs} fresh processes each (import app, first call)")
    for case in cases:
        sample(case)
        samples = [sample(case) for _ in range(runs)]
        app = min(s["app"] for s in samples)
        first = min(s["first"] for s in samples)
        print(
            f"  {case.name:22} import app {app:6.1f} ms   first call {first:6.1f} ms   "
            f"sum {app + first:6.1f} ms"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="20 invocations, no cold start")
    parser.add_argument("--runs", type=int, default=200, help="invocations a case")
    parser.add_argument("--before", type=Path, help="an older layers/replay for the cold start")
    args = parser.parse_args(argv)
    if args.before is not None and not (args.before / "dlq_replay").is_dir():
        parser.error(f"--before {args.before}: no dlq_replay package there")
    runs = 20 if args.smoke else max(2, args.runs)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
    command = "python bench/bench_follow.py" + (" --smoke" if args.smoke else "")
    print(f"bench_follow: {runs} invocations of 10 records a case on moto ({command})")
    medians = {}
    for follow in (False, True):
        times, calls = invocations(follow, runs)
        per = {k: v / calls["invocations"] for k, v in calls.items() if k != "invocations"}
        medians[follow] = min(times)
        label = "with FOLLOW_TABLE" if follow else "without"
        shown = ", ".join(f"{name} {value:.2f}" for name, value in sorted(per.items()))
        print(f"  {label:18} least {medians[follow]:6.2f} ms an invocation; calls each: {shown}")
    print(
        f"  counting costs {medians[True] - medians[False]:+.2f} ms an invocation (moto's own "
        "UpdateItem included)"
    )
    if not args.smoke:
        cold_starts(args.before, 9)
    return 0


if __name__ == "__main__":
    sys.exit(main())
