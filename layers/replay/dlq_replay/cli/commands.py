"""The subcommands of `dlq-replay`, each a parser plus a function of the parsed arguments."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from dlq_replay.cli.main import (
    add_aws_options,
    add_setting_options,
    queue_url,
    setting_overrides,
    sqs_client,
)
from dlq_replay.cli.operator import OPERATOR_COMMANDS

Subparsers = Any  # argparse's _SubParsersAction is private


def register_worker(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "worker",
        help="run the replay as a long-lived worker on a DLQ (any SQS-compatible endpoint)",
        description="Poll a DLQ like Lambda's event source and replay it; SIGINT/SIGTERM "
        "finish the batch in hand and exit 0.",
    )
    parser.add_argument(
        "--dlq-url", required=True, type=queue_url, help="the dead-letter queue to replay"
    )
    parser.add_argument("--pollers", type=int, default=1, help="concurrent pollers (default 1)")
    parser.add_argument("--batch-size", type=int, default=10, help="1-10 (default 10)")
    parser.add_argument(
        "--wait-seconds", type=int, default=5, help="long-poll wait, 0-20 (default 5)"
    )
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "INFO"))
    add_setting_options(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_worker_command)


def run_worker_command(args: argparse.Namespace) -> int:
    from aws_lambda_powertools import Logger

    from dlq_replay.local.worker import WorkerOptions, run_worker, settings_from

    # The endpoint also decides the URLs built from queue ARNs (shared-DLQ routing).
    overrides = {**setting_overrides(args), "AWS_ENDPOINT_URL_SQS": args.endpoint_url}
    settings = settings_from(os.environ, overrides)
    logger = Logger(service="sqs-dlq-replay", level=args.log_level.upper())
    options = WorkerOptions(
        dlq_url=args.dlq_url,
        pollers=max(1, args.pollers),
        batch_size=args.batch_size,
        wait_seconds=args.wait_seconds,
    )
    return run_worker(sqs_client(args), settings, options, logger=logger)


def register_demo(subparsers: Subparsers) -> None:
    from dlq_replay.demo.run import DemoOptions

    defaults = DemoOptions()
    parser = subparsers.add_parser(
        "demo",
        help="see the replay work on an embedded SQS emulator (no AWS account)",
        description="Start an SQS emulator on 127.0.0.1, run a flaky consumer and the replay "
        "side by side, and account for every message.",
    )
    parser.add_argument("--messages", type=int, default=defaults.messages)
    parser.add_argument(
        "--failure-rate",
        type=float,
        default=defaults.failure_rate,
        help="share of messages that fail transiently (succeed once replayed)",
    )
    parser.add_argument(
        "--poison-rate",
        type=float,
        default=defaults.poison_rate,
        help="share of messages that always fail (end parked)",
    )
    parser.add_argument("--max-attempts", type=int, default=defaults.max_attempts)
    parser.add_argument("--backoff-base-seconds", type=int, default=defaults.base_seconds)
    parser.add_argument("--backoff-multiplier", type=float, default=defaults.multiplier)
    parser.add_argument("--backoff-cap-seconds", type=int, default=defaults.cap_seconds)
    parser.add_argument("--jitter", default=defaults.jitter)
    parser.add_argument("--pollers", type=int, default=defaults.pollers)
    parser.add_argument("--timeout", type=float, default=defaults.timeout_seconds)
    parser.add_argument("--seed", type=int, default=None, help="make the run repeatable")
    parser.add_argument("--plain", action="store_true", help="no live display (CI logs)")
    parser.set_defaults(run=run_demo_command)


def run_demo_command(args: argparse.Namespace) -> int:
    from dlq_replay.demo.run import DemoOptions, run_demo

    options = DemoOptions(
        messages=args.messages,
        failure_rate=args.failure_rate,
        poison_rate=args.poison_rate,
        max_attempts=args.max_attempts,
        base_seconds=args.backoff_base_seconds,
        multiplier=args.backoff_multiplier,
        cap_seconds=args.backoff_cap_seconds,
        jitter=args.jitter,
        pollers=args.pollers,
        timeout_seconds=args.timeout,
        seed=args.seed,
        live=not args.plain,
    )
    return run_demo(options)


REGISTRY: list[Callable[[Subparsers], None]] = [register_worker, register_demo, *OPERATOR_COMMANDS]
