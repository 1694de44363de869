"""`dlq-replay console --demo`: the console on the demo's embedded emulator, its queues wired
as a stack's (main -> DLQ -> operator queue) and holding parked sample messages of several
reasons, sizes and ages, a few of them hostile text, so every page has something to show.

It runs on the demo's own emulator (`sqs_emulator()`: moto's SQS served by werkzeug, what the
`demo` extra installs), not moto's whole server (`moto[server]`, which `make demo`'s venv does
not have). The console's other services answer there at once with an error it shows as a note:
CloudWatch (oldest ages: from the snapshots instead), STS (the audit trail's identity:
unknown); no Lambda is asked, the demo has no replay function."""

from __future__ import annotations

import argparse
import json
import os
import random
from collections.abc import Callable

from dlq_replay.cli.demo import require_moto

REASONS = ("max-attempts", "max-age", "rejected", "invalid-count")


def sample_bodies(count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(body, park reason): mostly JSON orders, some plain text, a few hostile."""
    found: list[tuple[str, str]] = []
    for n in range(count):
        reason = rng.choices(REASONS, weights=(6, 2, 1, 1))[0]
        if n % 25 == 7:
            body = "<script>alert('a body is text')</script>"
        elif n % 5 == 3:
            body = f"plain text order {n}: payment gateway timed out"
        else:
            body = json.dumps({"order": 1000 + n, "sku": f"A-{n % 7}", "total": n * 3 % 97})
        found.append((body, reason))
    return found


def on_demo_queues(args: argparse.Namespace, run: Callable[[argparse.Namespace], int]) -> int:
    require_moto()
    from dlq_replay.demo.emulator import create_queues, emulator_client, sqs_emulator

    with sqs_emulator() as running:
        endpoint = running.endpoint_url
        sqs = emulator_client(endpoint)
        queues = create_queues(sqs, prefix="demo")
        rng = random.Random(7)  # noqa: S311 - sample data
        pairs = sample_bodies(120, rng)
        for start in range(0, len(pairs), 10):
            entries = [
                {
                    "Id": str(i),
                    "MessageBody": body,
                    "MessageAttributes": {
                        "dlq-replay-park-reason": {"DataType": "String", "StringValue": reason},
                        "dlq-replay-count": {"DataType": "Number", "StringValue": "4"},
                    },
                }
                for i, (body, reason) in enumerate(pairs[start : start + 10])
            ]
            sqs.send_message_batch(QueueUrl=queues.operator, Entries=entries)  # type: ignore[arg-type]
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "demo")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "demo")
        args.endpoint_url = endpoint
        args.region = args.region or "us-east-1"
        args.main_queue_url, args.dlq_url = queues.main, queues.dlq
        args.operator_queue_url = queues.operator
        return run(args)
