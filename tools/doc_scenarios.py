"""The scenarios behind the docs' command samples (tools/doc_samples.py runs them).

Each scenario seeds a moto server of its own as the docs describe it, returns the
shell variables its lines use (`$QUEUES`, `$Q`), and lists its samples in the order they run:
later samples see what earlier ones did, as in an operator's session. Parked messages are
sent to the operator queue with the attributes the replay gives them (count and park reason),
so the sessions start in seconds and the same way every time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from dlq_replay.audit.store import TABLE_KEYS

from tools.standin_stack import FUNCTION_ENVIRONMENT, template

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
ACCOUNT = "123456789012"
AUDIT_TABLE = "shop-audit"  # the audit trail of the samples run without --stack
PARK_REASON = "dlq-replay-park-reason"
COUNT = "sqs-dlq-replay-nb"  # the default count attribute
STACK_COUNT = FUNCTION_ENVIRONMENT["REPLAY_COUNT_ATTRIBUTE"]  # the stack renames it
DAY = 86_400


@dataclass(frozen=True)
class Sample:
    name: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    setup: Callable[[str, Path], dict[str, str]]  # (endpoint, workdir) -> shell variables
    samples: tuple[Sample, ...]
    emulator: bool = True  # False: needs no moto server (the demo brings its own emulator)


def _client(service: Any, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="demo",
        aws_secret_access_key="demo",  # noqa: S106 - the emulator's
    )


def _attributes(reason: str | None, count: str | None, name: str = COUNT, **more: Any) -> Any:
    attributes: dict[str, Any] = {}
    if reason:
        attributes[PARK_REASON] = {"DataType": "String", "StringValue": reason}
    if count is not None:
        kind = "Number" if count.isdigit() else "String"
        attributes[name] = {"DataType": kind, "StringValue": count}
    for key, value in more.items():
        if isinstance(value, bytes):
            attributes[key] = {"DataType": "Binary.gzip", "BinaryValue": value}
        elif isinstance(value, int | float):
            attributes[key] = {"DataType": "Number", "StringValue": str(value)}
        else:
            attributes[key] = {"DataType": "String", "StringValue": value}
    return attributes


def _wired_queues(sqs: SQSClient, prefix: str, main_receives: int = 5) -> dict[str, str]:
    """main -> dlq -> operator, as the template's create-everything mode wires them."""
    urls = {"operator": sqs.create_queue(QueueName=f"{prefix}-operator")["QueueUrl"]}
    for role, target, receives in (("dlq", "operator", 50), ("main", "dlq", main_receives)):
        target_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{prefix}-{target}"
        policy = json.dumps({"deadLetterTargetArn": target_arn, "maxReceiveCount": receives})
        urls[role] = sqs.create_queue(
            QueueName=f"{prefix}-{role}", Attributes={"RedrivePolicy": policy}
        )["QueueUrl"]
    return urls


def _queue_options(urls: dict[str, str]) -> str:
    return (
        f"--main-queue-url {urls['main']} --dlq-url {urls['dlq']} "
        f"--operator-queue-url {urls['operator']}"
    )


def _variables(endpoint: str, urls: dict[str, str]) -> dict[str, str]:
    """$QUEUES and $Q, and a table for the audit trail (as a stack's: shared, no warning)."""
    _client("dynamodb", endpoint).create_table(
        TableName=AUDIT_TABLE,
        BillingMode="PAY_PER_REQUEST",
        **TABLE_KEYS,
    )
    return {
        "QUEUES": _queue_options(urls),
        "Q": f"{endpoint}/{ACCOUNT}",
        "DLQ_REPLAY_AUDIT_TABLE": AUDIT_TABLE,
    }


# --- the stack: `--stack shop`, seven parked messages, three in the DLQ -----------------------


def setup_stack(endpoint: str, workdir: Path) -> dict[str, str]:
    """Stack `shop`; two orders parked with a count of `four`, five after four replays; three
    that failed five receives on the main queue, so SQS moved them to the DLQ."""
    _client("cloudformation", endpoint).create_stack(
        StackName="shop", TemplateBody=json.dumps(template(prefix="shop"))
    )
    sqs = _client("sqs", endpoint)
    urls = {
        role: sqs.get_queue_url(QueueName=f"shop-{role}")["QueueUrl"]
        for role in ("main", "dlq", "operator")
    }
    for order in range(4100, 4107):
        reason, count = ("invalid-count", "four") if order < 4102 else ("max-attempts", "4")
        sqs.send_message(
            QueueUrl=urls["operator"],
            MessageBody=json.dumps({"order": order, "tenant": "acme"}),
            MessageAttributes=_attributes(reason, count, STACK_COUNT, tenant="acme"),
        )
    for order in range(4200, 4203):
        sqs.send_message(
            QueueUrl=urls["main"],
            MessageBody=json.dumps({"order": order, "tenant": "globex"}),
            MessageAttributes=_attributes(None, "1", STACK_COUNT, tenant="globex"),
        )
    while sqs.receive_message(
        QueueUrl=urls["main"], MaxNumberOfMessages=10, VisibilityTimeout=0
    ).get("Messages"):
        pass  # each receive fails the message; the sixth moves it to the DLQ
    return _variables(endpoint, urls)


STACK = Scenario(
    setup_stack,
    (
        Sample("status-stack", ("dlq-replay status --stack shop",)),
        Sample("peek-operator", ("dlq-replay peek operator --stack shop --limit 3",)),
        Sample("peek-json", ("dlq-replay peek operator --stack shop --limit 1 --body --json",)),
        Sample("peek-dlq", ("dlq-replay peek dlq --stack shop",)),
        Sample("redrive-native-dry-run", ("dlq-replay redrive --stack shop --dry-run",)),
        Sample(
            "redrive-reset",
            ("dlq-replay redrive --stack shop --filter-reason invalid-count --reset-count",),
        ),
        Sample("redrive-native-missing", ("dlq-replay redrive --stack shop",)),
        Sample("redrive-client", ("dlq-replay redrive --stack shop --client-side --rate 2",)),
        Sample("peek-main", ("dlq-replay peek main --stack shop",)),
        Sample(
            "pause-resume",
            (
                "dlq-replay pause --stack shop",
                "dlq-replay pause --stack shop",
                "dlq-replay status --stack shop | grep 'event source'",
                "dlq-replay resume --stack shop --wait",
                "dlq-replay resume --stack shop --json",
                "dlq-replay pause --function-name nope",
            ),
        ),
        Sample("plan-stack", ("dlq-replay plan --stack shop",)),
        Sample(
            "errors",
            (
                "dlq-replay status --stack nope",
                "dlq-replay peek $Q/no-such-queue",
                "dlq-replay redrive --stack shop --filter-reason typo",
                "env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_EC2_METADATA_DISABLED=true"
                " dlq-replay status --stack shop",
            ),
        ),
    ),
)


# --- selecting messages; expiry; a queue with no receive to spare; plan ------------------------


def setup_selection(endpoint: str, workdir: Path) -> dict[str, str]:
    """Seven parked messages: five JSON orders with a `tenant` String and a `weight` Number,
    parked `rejected` (odd orders) or `max-attempts`, and two text bodies. The operator queue
    keeps messages 14 days, its oldest is 5h 10m from expiry (CloudWatch's datapoint);
    `tight-main` has maxReceiveCount 1."""
    sqs = _client("sqs", endpoint)
    urls = _wired_queues(sqs, "shop")
    orders = [(101, 250.0, "acme", 5), (102, 99.0, "acme", 5.0), (103, 180.5, "acme", 2)]
    orders += [(104, 20.0, "globex", 5), (105, 75.0, "globex", 1)]
    for order, total, tenant, weight in orders:
        reason = "rejected" if order % 2 else "max-attempts"
        sqs.send_message(
            QueueUrl=urls["operator"],
            MessageBody=json.dumps({"order": order, "total": total}),
            MessageAttributes=_attributes(reason, "4", tenant=tenant, weight=weight),
        )
    for body, reason in (
        ("legacy order 7: upstream timeout after 30s", "max-attempts"),
        ("legacy order 8: invalid VAT number", "consumer:invalid-vat"),
    ):
        sqs.send_message(
            QueueUrl=urls["operator"],
            MessageBody=body,
            MessageAttributes=_attributes(reason, "4", tenant="acme"),
        )
    sqs.set_queue_attributes(
        QueueUrl=urls["operator"], Attributes={"MessageRetentionPeriod": str(14 * DAY)}
    )
    _oldest_ages(endpoint, {"shop-operator": 14 * DAY - 18_600.0, "shop-dlq": 2 * DAY + 5_400.0})
    _wired_queues(sqs, "tight", main_receives=1)
    return _variables(endpoint, urls)


def _oldest_ages(endpoint: str, ages: dict[str, float]) -> None:
    """What CloudWatch would report for each queue: ApproximateAgeOfOldestMessage."""
    now = time.time()
    _client("cloudwatch", endpoint).put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Dimensions": [{"Name": "QueueName", "Value": queue}],
                "Timestamp": now - 60,
                "Value": age,
                "Unit": "Seconds",
            }
            for queue, age in ages.items()
        ],
    )


SELECTION = Scenario(
    setup_selection,
    (
        Sample("status-expiry", ("COLUMNS=150 dlq-replay status $QUEUES",)),
        Sample(
            "select-peek",
            (
                "dlq-replay peek operator $QUEUES --where tenant=acme --match 'total > `100`'"
                " --body",
                "dlq-replay peek operator $QUEUES --match-text 'timeout|VAT' --newer-than 1h"
                " --body",
            ),
        ),
        Sample(
            "select-redrive",
            ("dlq-replay redrive $QUEUES --where tenant=acme --match 'total > `100`'",),
        ),
        Sample(
            "select-export",
            (
                "dlq-replay export operator $QUEUES --filter-reason consumer:invalid-vat"
                " --newer-than 1h --file vat.jsonl",
            ),
        ),
        Sample(
            "select-errors",
            (
                "dlq-replay peek operator $QUEUES --match 'total >'",
                "dlq-replay peek operator $QUEUES --older-than 3x",
                "dlq-replay peek operator $QUEUES --match 'foo(total)'",
                "dlq-replay peek operator $QUEUES --older-than 2h --newer-than 1h",
            ),
        ),
        Sample("peek-refused", ("dlq-replay peek $Q/tight-main",)),
        Sample(
            "plan-long",
            (
                "dlq-replay plan --backoff-base-seconds 60 --backoff-multiplier 4 "
                "--backoff-cap-seconds 7200 --max-attempts 6",
            ),
        ),
    ),
)


# --- fix by hand: export, edit with jq, import -------------------------------------------------


def setup_fix(endpoint: str, workdir: Path) -> dict[str, str]:
    """Five parked orders: three `rejected` by a consumer that now wants `"schema": "v2"`
    (with a `tenant` String and a `payload` Binary.gzip attribute), two `max-attempts`; an
    S3 bucket for archives; a text file that is not an archive."""
    sqs = _client("sqs", endpoint)
    urls = _wired_queues(sqs, "shop")
    for order in (101, 102, 103, 104, 105):
        reason = "rejected" if order <= 103 else "max-attempts"
        sqs.send_message(
            QueueUrl=urls["operator"],
            MessageBody=json.dumps({"schema": "v1", "order": order}),
            MessageAttributes=_attributes(
                reason, "4", tenant="acme", payload=b"\x1f\x8b\x08\x00demo"
            ),
        )
    _client("s3", endpoint).create_bucket(Bucket="shop-archive")
    (workdir / "notes.txt").write_text("remember to rotate the keys\n", encoding="utf-8")
    return _variables(endpoint, urls)


FIX = Scenario(
    setup_fix,
    (
        Sample(
            "fix-export",
            (
                "dlq-replay export operator $QUEUES --filter-reason rejected --delete"
                " --file rejected.jsonl",
                "head -1 rejected.jsonl | jq .",
            ),
        ),
        Sample(
            "fix-edit",
            (
                'jq -c \'.body |= sub("v1";"v2")\' rejected.jsonl > fixed.jsonl',
                "jq -r .body fixed.jsonl",
            ),
        ),
        Sample(
            "fix-import",
            (
                "dlq-replay import fixed.jsonl --to main $QUEUES --reset-count",
                "dlq-replay import fixed.jsonl --to main $QUEUES --reset-count --json",
                "cat fixed.jsonl.progress",
            ),
        ),
        Sample("fix-peek", ("dlq-replay peek main $QUEUES --body",)),
        Sample(
            "fix-more",
            (
                "dlq-replay export operator $QUEUES --s3-uri s3://shop-archive/parked/2026-01-01.jsonl",
                "cp fixed.jsonl again.jsonl && dlq-replay import again.jsonl --to source $QUEUES",
                "dlq-replay export operator $QUEUES --file notes.txt",
            ),
        ),
    ),
)


# --- the demo's summary -----------------------------------------------------------------------


def setup_nothing(endpoint: str, workdir: Path) -> dict[str, str]:
    return {}


DEMO = Scenario(
    setup_nothing,
    (
        Sample("demo-summary", ("dlq-replay demo --seed 1 --plain | tail -3",)),
        Sample(
            "demo-eventbridge-summary",
            ("dlq-replay demo --kind eventbridge --seed 1 --plain | tail -2",),
        ),
    ),
    emulator=False,
)

SCENARIOS = (STACK, SELECTION, FIX, DEMO)
