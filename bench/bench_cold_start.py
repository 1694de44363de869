"""Cold start of the built artifact: init (importing the handler) and the first invocation.

Each sample is a fresh Python process that runs the way Lambda does: `import boto3` (the
runtime provides it; measured alone and subtracted), then `import app` from `.aws-sam/build`
with the function's folder and the layer's `python/` first on the path (init: our modules,
Powertools, the SQS client), then two invocations of a 10-record event, SQS answering at
botocore's HTTP boundary. The first invocation's own work is the first less the warm one.
Bytecode is never written (`/opt` is read-only in Lambda). The same run measures the
well-known sample's shape (the baseline) and our layer without its .pyc files.

    make build && python bench/bench_cold_start.py           # 15 processes a case
    python bench/bench_cold_start.py --smoke                   # CI: 3 a case
    python bench/bench_cold_start.py --source [--before /tmp/old/layers/replay]
                    # no build: the outage breaker off and on, this tree (and an older one)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".aws-sam" / "build"
ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "MAIN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/main",
    "OPERATOR_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/operator",
    "POWERTOOLS_SERVICE_NAME": "sqs-dlq-replay",
    "POWERTOOLS_METRICS_NAMESPACE": "SqsDlqReplay",
    "PYTHONDONTWRITEBYTECODE": "1",
}
# Runs in the fresh process: times in milliseconds, and where app came from. SQS answers at
# botocore's HTTP boundary (a `before-send` handler every botocore session registers, as moto
# does), so the invocations run all of our code and botocore's, with no network.
PROBE = """
import json, resource, sys, time
started = time.perf_counter()
import boto3
boto3_done = time.perf_counter()
from io import BytesIO
import botocore.handlers
from botocore.awsrequest import AWSResponse
from urllib3 import HTTPResponse

def Body(data): return HTTPResponse(BytesIO(data), preload_content=False)

def sqs_answers(request, **kwargs):
    entries = json.loads(request.body)["Entries"]
    body = json.dumps({"Successful": [{"Id": e["Id"], "MessageId": e["Id"],
                       "MD5OfMessageBody": ""} for e in entries], "Failed": []}).encode()
    return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"}, Body(body))

botocore.handlers.BUILTIN_HANDLERS.append(("before-send.sqs.SendMessageBatch", sqs_answers))

def json_answer(payload):
    def answer(request, **kwargs):
        return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"},
                           Body(json.dumps(payload).encode()))
    return answer

# The outage breaker's requests of a batch with it closed (its table; the main queue's timing).
for event, payload in (
    ("before-send.dynamodb.UpdateItem", {}),
    ("before-send.dynamodb.Query", {"Items": []}),
    ("before-send.dynamodb.GetItem", {}),
    ("before-send.sqs.GetQueueAttributes", {"Attributes": {"VisibilityTimeout": "30",
        "RedrivePolicy": json.dumps({"maxReceiveCount": 3, "deadLetterTargetArn": "x"})}}),
):
    botocore.handlers.BUILTIN_HANDLERS.append((event, json_answer(payload)))

class Context:
    function_name = "sqs-dlq-replay"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:sqs-dlq-replay"
    memory_limit_in_mb = 256
    aws_request_id = "2d5e3a4c-0000-4000-8000-000000000001"

def event(n):
    return {"Records": [{
        "messageId": f"m-{i}", "receiptHandle": f"r-{i}", "body": "x" * 1024,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"},
        "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:dlq", "awsRegion": "us-east-1",
    } for i in range(n)]}

sys.path[:0] = [sys.argv[1], sys.argv[2]]
rss_boto3 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import app
app_done = time.perf_counter()
rss_app = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
app.handler(event(10), Context())
first_done = time.perf_counter()
rss_first = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
warm = []
for _ in range(5):
    again = time.perf_counter()
    app.handler(event(10), Context())
    warm.append(time.perf_counter() - again)
print(json.dumps({
    "boto3": (boto3_done - started) * 1000,
    "app": (app_done - boto3_done) * 1000,
    "first": (first_done - app_done) * 1000,
    "warm": sorted(warm)[2] * 1000,
    "rss_app": (rss_app - rss_boto3) / 1024,
    "rss_first": (rss_first - rss_app) / 1024,
    "origin": app.__file__,
    "dlq_replay": getattr(sys.modules.get("dlq_replay"), "__file__", None),
}))
"""


# The well-known sample's shape, for the baseline: its client made at import, one SendMessage
# per record.
SAMPLE_APP = """
import boto3

sqs = boto3.client("sqs")


def handler(event, context):
    for record in event["Records"]:
        sqs.send_message(QueueUrl="https://sqs.us-east-1.amazonaws.com/123456789012/main",
                         MessageBody=record["body"], DelaySeconds=1)
"""
SAMPLE_ANSWER = """
def sample_answers(request, **kwargs):
    body = json.dumps({"MessageId": "m", "MD5OfMessageBody": ""}).encode()
    return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"}, Body(body))

botocore.handlers.BUILTIN_HANDLERS.append(("before-send.sqs.SendMessage", sample_answers))
"""


@dataclass(frozen=True)
class Case:
    name: str
    function: Path
    layer: Path
    env: tuple[tuple[str, str], ...] = ()


def sample(case: Case) -> dict[str, float]:
    env = {**os.environ, **ENV, **dict(case.env)}
    env.pop("PYTHONPATH", None)
    probe = PROBE.replace("sys.path[:0]", SAMPLE_ANSWER + "sys.path[:0]", 1)
    found = subprocess.run(
        [sys.executable, "-c", probe, str(case.function), str(case.layer)],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(found.stdout.splitlines()[-1])  # after the handler's own log lines
    if not str(result["origin"]).startswith(str(case.function)):
        raise SystemExit(f"app came from {result['origin']}, not from {case.function}")
    if result["dlq_replay"] and not str(result["dlq_replay"]).startswith(str(case.layer)):
        raise SystemExit(f"dlq_replay came from {result['dlq_replay']}, not from {case.layer}")
    keys = ("boto3", "app", "first", "warm", "rss_app", "rss_first")
    return {key: float(result[key]) for key in keys}


def cases(build: Path, scratch: Path) -> list[Case]:
    """The sample, our build without bytecode (as built before), our build as it is."""
    sample_dir = scratch / "sample"
    sample_dir.mkdir()
    (sample_dir / "app.py").write_text(SAMPLE_APP)
    copy = scratch / "build"
    shutil.copytree(build, copy)
    for cache in list(copy.rglob("__pycache__")):
        shutil.rmtree(cache)
    return [
        Case("the well-known sample (baseline)", sample_dir, sample_dir),
        Case(
            "ours, layer without bytecode", copy / "ReplayFunction", copy / "ReplayLayer" / "python"
        ),
        Case("ours, layer as built", build / "ReplayFunction", build / "ReplayLayer" / "python"),
    ]


# The outage breaker on (its default), as the template deploys it: a table and a function name.
BREAKER_ON = (
    ("OUTAGE_BREAKER", "on"),
    ("OUTAGE_BREAKER_TABLE", "bench-breaker"),
    ("AWS_LAMBDA_FUNCTION_NAME", "sqs-dlq-replay"),
)
BREAKER_OFF = (("OUTAGE_BREAKER", "off"),)


def source_cases(before: Path | None) -> list[Case]:
    """The source trees (no build): each with the breaker off (the baseline) and on, an older
    tree's first (`git archive <rev> layers | tar -x -C /tmp/old`, `--before
    /tmp/old/layers/replay`). Powertools and boto3 come from this environment."""
    function = ROOT / "functions" / "replay"
    trees = [("now", ROOT / "layers" / "replay")]
    if before is not None:
        trees.insert(0, ("before", before))
    return [
        Case(f"{label}, breaker {state}", function, layer, env)
        for label, layer in trees
        for state, env in (("off", BREAKER_OFF), ("on", BREAKER_ON))
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="3 processes a case, for CI")
    parser.add_argument("--build-dir", type=Path, default=BUILD)
    parser.add_argument(
        "--source",
        action="store_true",
        help="the source trees, no build: the outage breaker off and on (import, peak RSS)",
    )
    parser.add_argument("--before", type=Path, help="with --source: an older layers/replay")
    args = parser.parse_args(argv)
    if args.before is not None and not args.source:
        parser.error("--before needs --source")
    if args.before is not None and not (args.before / "dlq_replay").is_dir():
        parser.error(f"--before {args.before}: no dlq_replay package there")
    if args.source:
        return source_main(args.smoke, args.before)
    if not (args.build_dir / "ReplayLayer" / "python").is_dir():
        print(f"bench_cold_start: no build in {args.build_dir}: run `make build`", file=sys.stderr)
        return 1
    runs = 3 if args.smoke else 15
    command = "python bench/bench_cold_start.py" + (" --smoke" if args.smoke else "")
    print(
        f"bench_cold_start: median of {runs} fresh processes each, 10 records an event ({command})"
    )
    print(
        f"{'case':34} {'import boto3':>12} {'import app':>11} {'1st call':>9} {'warm call':>10} "
        f"{'1st call own work':>18}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        medians: dict[str, dict[str, float]] = {}
        for case in cases(args.build_dir, Path(scratch)):
            sample(case)  # warm the file cache
            samples = [sample(case) for _ in range(runs)]
            m = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
            m["own"] = statistics.median(s["first"] - s["warm"] for s in samples)
            medians[case.name] = m
            print(
                f"{case.name:34} {m['boto3']:9.1f} ms {m['app']:8.1f} ms {m['first']:6.1f} ms "
                f"{m['warm']:7.1f} ms {m['own']:15.1f} ms"
            )
    ours = medians["ours, layer as built"]
    print(
        f"ours as built: import app {ours['app']:.1f} ms over boto3 (target <= 60), the first "
        f"call's own work (first call - warm call) {ours['own']:.1f} ms (target <= 15)"
    )
    return 0


def source_main(smoke: bool, before: Path | None) -> int:
    """The breaker's weight on a cold start: import and the first call's time and peak RSS
    growth, breaker on against off in the same tree and run."""
    runs = 3 if smoke else 9
    command = "python bench/bench_cold_start.py --source" + (" --smoke" if smoke else "")
    command += f" --before {before}" if before else ""
    print(
        f"bench_cold_start: least of {runs} fresh processes each, 10 records an event ({command})"
    )
    print(f"{'case':22} {'import app':>11} {'1st call':>9} {'RSS import':>11} {'RSS 1st call':>13}")
    medians: dict[str, dict[str, float]] = {}
    for case in source_cases(before):
        sample(case)  # warm the file cache
        samples = [sample(case) for _ in range(runs)]
        # The least of each: a machine shared with other work only ever adds to a time.
        m = {k: min(s[k] for s in samples) for k in samples[0]}
        medians[case.name] = m
        print(
            f"{case.name:22} {m['app']:8.1f} ms {m['first']:6.1f} ms {m['rss_app']:7.1f} MiB "
            f"{m['rss_first']:9.1f} MiB"
        )
    for label in ("before", "now"):
        off, on = medians.get(f"{label}, breaker off"), medians.get(f"{label}, breaker on")
        if off is None or on is None:
            continue
        grown = on["rss_app"] + on["rss_first"] - off["rss_app"] - off["rss_first"]
        print(
            f"{label}: breaker on / off: import {on['app'] / off['app']:.2f}x "
            f"(+{on['app'] - off['app']:.1f} ms), first call {on['first'] / off['first']:.2f}x, "
            f"peak RSS of import + first call {grown:+.1f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
