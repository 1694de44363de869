"""`dlq-replay demo`: the replay on an embedded SQS emulator (moto and rich: the `local` extra)."""

from __future__ import annotations

import argparse

from dlq_replay.cli.options import Subparsers


def register(subparsers: Subparsers) -> None:
    from dlq_replay.demo.scenario import DemoOptions

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
    from dlq_replay.demo.run import run_demo
    from dlq_replay.demo.scenario import DemoOptions

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
