"""Record the SQS replay's copies of a corpus of SQS dead letters, as the last commit before the
serverless kinds landed (88f404a) made them, so tests/integration/test_sqs_corpus.py can prove
that today's default (`DLQ_KIND=sqs`) makes the same copies byte for byte.

    .venv/bin/python tools/record_sqs_corpus.py            # record into tests/corpus/sqs/
    .venv/bin/python tools/record_sqs_corpus.py --run TREE  # (internal) replay stdin's cases

Recording checks out 88f404a into a temporary `git worktree` under /tmp and runs its handler in
a fresh interpreter (`--run TREE`: TREE's `layers/replay` and `functions/replay` first on
sys.path) over each case, on an in-process moto. The clock is fixed there, before the package
is imported (`time.time` returns `NOW`; 88f404a's Replayer binds `time.time` as its default
clock when it is defined), and `random` is seeded (the jitter itself is keyed by message id
and attempt, so it needs no seed). Every SQS request the replay's session makes is captured
with botocore's `before-parameter-build` hook, its parameters exactly as the replay passed
them (bytes as base64). Receipt handles: each record is first put into its DLQ on moto and
received, so a visibility change meets a real message; the corpus keeps its own handles.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "sqs"
EVENTS = ROOT / "events"
RECORDED_AT = "88f404a"
NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z, the clock of every run
SEED = 44
REGION = "us-east-1"
ACCOUNT = "123456789012"
# The requests that make or move a copy (reads, such as GetQueueAttributes, are not compared).
WRITES = frozenset(
    {
        "SendMessage",
        "SendMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
        "DeleteMessage",
        "DeleteMessageBatch",
    }
)
Json = dict[str, Any]


def url(name: str) -> str:
    return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"


def arn(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


# --- the corpus -----------------------------------------------------------------------------


def _string(value: str, data_type: str = "String") -> Json:
    return {
        "stringValue": value,
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": data_type,
    }


def _binary(value: bytes, data_type: str = "Binary") -> Json:
    return {
        "binaryValue": base64.b64encode(value).decode("ascii"),
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": data_type,
    }


def record(
    number: int,
    body: str,
    attributes: Mapping[str, Json] | None = None,
    *,
    dlq: str = "orders-dlq",
    system: Mapping[str, str] | None = None,
) -> Json:
    """One record as Lambda delivers it from `dlq`, with a fixed message id."""
    message_id = f"c0a5e000-0000-4000-8000-{number:012d}"
    return {
        "messageId": message_id,
        "receiptHandle": f"corpus-receipt-{number}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": str(int(NOW * 1000) - 60_000),
            "SenderId": "AIDAEXAMPLECORPUS",
            "ApproximateFirstReceiveTimestamp": str(int(NOW * 1000) - 59_000),
            **(system or {}),
        },
        "messageAttributes": dict(attributes or {}),
        "md5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
        "md5OfMessageAttributes": None,
        "eventSource": "aws:sqs",
        "eventSourceARN": arn(dlq),
        "awsRegion": REGION,
    }


def _events_file(name: str, **changes: Any) -> list[Json]:
    """The records of events/<name>, their source DLQ kept (orders-dlq or orders-dlq.fifo)."""
    records: list[Json] = json.loads((EVENTS / name).read_text(encoding="utf-8"))["Records"]
    return [{**r, **changes} for r in records]


def _ten(prefix: str) -> dict[str, Json]:
    return {f"{prefix}{i}": _string(f"v{i}") for i in range(10)}


def _nine(count: int = 9) -> dict[str, Json]:
    return {f"app{i}": _string(f"v{i}") for i in range(count)}


def _count(value: str) -> dict[str, Json]:
    return {"sqs-dlq-replay-nb": _string(value, "Number")}


STANDARD: dict[str, dict[str, str]] = {
    "orders-dlq": {},
    "orders": {},
    "orders-operator": {},
    "billing": {},
}
FIFO: dict[str, dict[str, str]] = {
    "orders-dlq.fifo": {"FifoQueue": "true"},
    "orders.fifo": {"FifoQueue": "true"},
    "orders-operator.fifo": {"FifoQueue": "true"},
}
ENV = {"MAIN_QUEUE_URL": url("orders"), "OPERATOR_QUEUE_URL": url("orders-operator")}
FIFO_ENV = {"MAIN_QUEUE_URL": url("orders.fifo"), "OPERATOR_QUEUE_URL": url("orders-operator.fifo")}
TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
DESTINATION_BODY = json.loads((EVENTS / "dlq-lambda-destination.json").read_text("utf-8"))[
    "Records"
][0]["body"]


def cases() -> list[Json]:
    """Each case: queues (name -> attributes), settings, and its events (≤ 10 records each).
    The `lookalike-*` cases are SQS dead letters whose application attributes or body happen to
    look like another kind's record."""
    waiting = _count("2")
    return [
        {
            "name": "standard-attributes",
            "queues": STANDARD,
            "env": ENV,
            "events": [
                [
                    *_events_file("dlq-standard.json"),
                    *_events_file("dlq-binary-attributes.json"),
                    record(1, '{"json": [1, 2.50, "x"]}', {"n": _string("1e3", "Number")}),
                    record(
                        2,
                        "fair queue: ünïcödé ✓",
                        {"b": _binary(b"\xff\xfe\x00\x80"), "c": _string("x", "String.custom")},
                        system={"MessageGroupId": "tenant-7", "AWSTraceHeader": TRACE},
                    ),
                    record(3, "", {"big": _binary(bytes(range(256)), "Binary.gzip")}),
                ]
            ],
        },
        {
            "name": "counts",
            "queues": STANDARD,
            "env": {**ENV, "JITTER": "none", "BACKOFF_BASE_SECONDS": "5"},
            "events": [
                [
                    record(10, "count absent"),
                    record(11, "count 0", _count("0")),
                    record(12, "count 2", _count("2")),
                    *_events_file("dlq-at-attempt-limit.json"),
                    record(13, "ten attributes, no count", _ten("a")),
                    record(14, "nine attributes and the count", {**_nine(), **_count("1")}),
                ],
                _events_file("dlq-bad-count.json"),
            ],
        },
        {
            "name": "fifo",
            "queues": FIFO,
            "env": {**FIFO_ENV, "BACKOFF_BASE_SECONDS": "1"},
            "events": [
                [
                    *_events_file("dlq-fifo.json"),
                    record(
                        20,
                        "fifo at the limit",
                        _count("3"),
                        dlq="orders-dlq.fifo",
                        system={
                            "MessageGroupId": "customer-c",
                            "MessageDeduplicationId": "d-20",
                            "SequenceNumber": "18890000000000000020",
                        },
                    ),
                    record(21, "fifo without a group", dlq="orders-dlq.fifo"),
                ]
            ],
        },
        {
            "name": "shared-dlq",
            "queues": STANDARD,
            "env": {**ENV, "ALLOWED_SOURCE_QUEUE_ARNS": f"{arn('orders')},{arn('billing')}"},
            "events": [
                [
                    record(30, "from billing", system={"DeadLetterQueueSourceArn": arn("billing")}),
                    record(31, "from orders", system={"DeadLetterQueueSourceArn": arn("orders")}),
                    record(32, "from elsewhere", system={"DeadLetterQueueSourceArn": arn("x")}),
                    record(33, "no source"),
                ]
            ],
        },
        {
            "name": "unknown-source",
            "queues": STANDARD,
            "env": {
                "OPERATOR_QUEUE_URL": url("orders-operator"),
                "ALLOWED_SOURCE_QUEUE_ARNS": arn("billing"),
            },
            "events": [
                [
                    record(40, "from billing", system={"DeadLetterQueueSourceArn": arn("billing")}),
                    record(41, "from orders", system={"DeadLetterQueueSourceArn": arn("orders")}),
                ]
            ],
        },
        {
            "name": "long-delay",
            "queues": STANDARD,
            "env": {
                **ENV,
                "JITTER": "none",
                "BACKOFF_BASE_SECONDS": "3600",
                "BACKOFF_CAP_SECONDS": "43200",
            },
            "events": [
                [
                    record(50, "delay 3600 s: written back", {"t": _string("x")}),
                    record(51, "delay 7200 s", _count("1")),
                    record(52, "due", {**waiting, "dlq-replay-not-before": _nb(-10)}),
                    record(53, "due in 300 s", {**waiting, "dlq-replay-not-before": _nb(300)}),
                    record(54, "not due", {**waiting, "dlq-replay-not-before": _nb(5000)}),
                    *_events_file("dlq-waiting.json"),
                    record(55, "no slot for the not-before", {**_nine(), **_count("0")}),
                    record(56, "a slot for it", {**_nine(8), **_count("0")}),
                ]
            ],
        },
        {
            "name": "origin-and-max-age",
            "queues": STANDARD,
            "env": {**ENV, "WRITE_ORIGIN_ATTRIBUTE": "true", "MAX_MESSAGE_AGE_SECONDS": "30"},
            "events": [
                [
                    record(60, "older than 30 s"),
                    record(
                        61,
                        "young",
                        system={
                            "SentTimestamp": str(int(NOW * 1000) - 1000),
                            "ApproximateFirstReceiveTimestamp": str(int(NOW * 1000) - 900),
                        },
                    ),
                ]
            ],
        },
        {
            "name": "lookalike-lambda-attributes",
            "queues": STANDARD,
            "env": ENV,
            "events": [
                [
                    record(
                        70,
                        '{"order": 70}',
                        {
                            "RequestID": _string("req-70"),
                            "ErrorCode": _string("E42"),
                            "ErrorMessage": _string("the application's own"),
                        },
                    ),
                    record(
                        71,
                        "order 71",
                        {"RequestID": _string("req-71"), "ErrorCode": _string("500", "Number")},
                    ),
                ]
            ],
        },
        {
            "name": "lookalike-eventbridge-attributes",
            "queues": STANDARD,
            "env": ENV,
            "events": [
                [
                    record(
                        80,
                        "order 80",
                        {
                            "RULE_ARN": _string(f"arn:aws:events:{REGION}:{ACCOUNT}:rule/r"),
                            "TARGET_ARN": _string(arn("orders")),
                        },
                    )
                ]
            ],
        },
        {
            "name": "lookalike-destination-body",
            "queues": STANDARD,
            "env": ENV,
            "events": [[record(90, DESTINATION_BODY, {"app": _string("consumed it")})]],
        },
    ]


def _nb(offset: int) -> Json:
    return _string(str(int(NOW) + offset), "Number")


# --- running a tree's handler (in its own interpreter) -----------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _run_case(case: Json) -> Json:
    """One case on a fresh moto: its queues, each record put into its DLQ (for a real receipt
    handle), then each event through `LambdaReplay.from_env`."""
    import boto3
    from dlq_replay.aws_lambda.replay import LambdaReplay
    from moto import mock_aws

    with mock_aws():
        session = boto3.Session(region_name=REGION)
        setup = session.client("sqs")
        for name, attributes in case["queues"].items():
            setup.create_queue(QueueName=name, Attributes=attributes)
        requests: list[Json] = []

        def capture(params: Mapping[str, Any], model: Any, **_: Any) -> None:
            if model.name in WRITES:
                requests.append({"operation": model.name, "params": _plain(params)})

        replay_sqs = session.client("sqs")
        replay_sqs.meta.events.register("before-parameter-build.sqs", capture)
        replay = LambdaReplay.from_env(
            case["env"], sqs=replay_sqs, session=session, logger=_quiet_logger()
        )
        answers = []
        for records in case["events"]:
            real = _enqueue(setup, records)
            event = {"Records": [{**r, "receiptHandle": real[r["messageId"]]} for r in records]}
            requests.clear()
            response = replay(event)
            corpus_handles = {real[r["messageId"]]: r["receiptHandle"] for r in records}
            answers.append(
                {
                    "batchItemFailures": [dict(f) for f in response["batchItemFailures"]],
                    "requests": _rehandle(requests, corpus_handles),
                }
            )
    return {"name": case["name"], "answers": answers}


def _enqueue(sqs: Any, records: Sequence[Json]) -> dict[str, str]:
    """Put a stand-in of each record into its DLQ and receive it: message id -> receipt."""
    handles = {}
    for r in records:
        queue = url(r["eventSourceARN"].rsplit(":", 1)[1])
        extra = {}
        if queue.endswith(".fifo"):
            extra = {"MessageGroupId": r["messageId"], "MessageDeduplicationId": r["messageId"]}
        sqs.send_message(QueueUrl=queue, MessageBody=r["messageId"], **extra)
        (got,) = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=1)["Messages"]
        handles[got["Body"]] = got["ReceiptHandle"]
    return handles


def _rehandle(requests: list[Json], handles: Mapping[str, str]) -> list[Json]:
    text = json.dumps(requests)
    for real, corpus in handles.items():
        text = text.replace(json.dumps(real)[1:-1], corpus)
    loaded: list[Json] = json.loads(text)
    return loaded


def _quiet_logger() -> Any:
    import logging

    logger = logging.getLogger("corpus.replay")
    logger.setLevel(logging.CRITICAL)
    return logger


def run_tree(tree: Path, cases_json: str) -> str:
    """In this interpreter: the clock fixed and `random` seeded before `tree`'s package is
    imported, then every case. Returns the results as JSON."""
    time.time = lambda: NOW
    random.seed(SEED)
    sys.path[:0] = [str(tree / "layers" / "replay"), str(tree / "functions" / "replay")]
    import dlq_replay

    loaded = Path(dlq_replay.__file__).resolve()
    if not loaded.is_relative_to(tree.resolve()):
        raise SystemExit(f"dlq_replay came from {loaded}, not from {tree}")
    return json.dumps([_run_case(case) for case in json.loads(cases_json)])


# The run's whole environment: fake credentials, nothing of the caller's shell (no endpoint,
# profile or function variable can leak in).
_FAKE_AWS = {
    "PATH": "/usr/bin:/bin",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}


def replay_with(tree: Path, case_list: Sequence[Json]) -> list[Json]:
    """Run `tree`'s handler over `case_list` in a fresh interpreter (this one's Python)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--run", str(tree)],
        input=json.dumps(case_list),
        capture_output=True,
        text=True,
        check=False,
        env=_FAKE_AWS,
    )
    if done.returncode != 0:
        raise RuntimeError(f"replaying with {tree} failed:\n{done.stderr[-4000:]}")
    results: list[Json] = json.loads(done.stdout)
    return results


def _git() -> str:
    found = shutil.which("git")
    if found is None:
        raise SystemExit("recording needs git on PATH")
    return found


def record_corpus(commit: str = RECORDED_AT) -> list[Path]:
    """Check out `commit` under /tmp, replay every case with its handler, write the corpus."""
    with tempfile.TemporaryDirectory(prefix="sqs-corpus-") as parent:
        tree = Path(parent) / "tree"
        subprocess.run(
            [_git(), "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
            check=True,
            capture_output=True,
        )
        try:
            results = replay_with(tree, cases())
        finally:
            subprocess.run(
                [_git(), "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True
            )
    CORPUS.mkdir(parents=True, exist_ok=True)
    written = []
    for case, result in zip(cases(), results, strict=True):
        path = CORPUS / f"{case['name']}.json"
        document = {"recorded_at": commit, "now": NOW, **case, "answers": result["answers"]}
        path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", "utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, metavar="TREE", help="replay stdin's cases")
    parser.add_argument("--commit", default=RECORDED_AT, help="the commit to record")
    args = parser.parse_args(argv)
    if args.run is not None:
        sys.stdout.write(run_tree(args.run, sys.stdin.read()))
        return 0
    for path in record_corpus(args.commit):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
