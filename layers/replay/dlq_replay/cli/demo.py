"""`dlq-replay demo`: the replay on an embedded SQS emulator (moto and rich: the `local` extra)."""

from __future__ import annotations

import argparse

from dlq_replay.cli.errors import require_local_extra
from dlq_replay.cli.options import (
    MAX_POLLERS,
    Subparsers,
    int_between,
    positive_number,
    setting_type,
    share,
)


def register(subparsers: Subparsers) -> None:
    from dlq_replay.demo.scenario import DemoOptions

    defaults = DemoOptions()
    parser = subparsers.add_parser(
        "demo",
        help="see the replay work on an embedded SQS emulator (no AWS account)",
        description="Start an SQS emulator on 127.0.0.1, run a flaky consumer and the replay "
        "side by side, and account for every message.",
    )
    parser.add_argument(
        "--messages", type=int_between(1, 100_000), default=defaults.messages, help="to send"
    )
    parser.add_argument(
        "--failure-rate",
        type=share,
        default=defaults.failure_rate,
        help="share of messages that fail transiently (succeed once replayed), 0-1",
    )
    parser.add_argument(
        "--poison-rate",
        type=share,
        default=defaults.poison_rate,
        help="share of messages that always fail (end parked), 0-1",
    )
    parser.add_argument(
        "--invalid-rate",
        type=share,
        default=defaults.invalid_rate,
        help="share of messages the consumer parks at once (ParkMessage), 0-1",
    )
    parser.add_argument(
        "--consumer-backoff",
        action="store_true",
        help="the consumer retries in the main queue with the same backoff (the consumer "
        "toolkit) before SQS moves a message to the DLQ: fewer messages reach the replay",
    )
    # The replay settings, judged by the function's own rules.
    for option, variable, default, text in (
        ("--max-attempts", "MAX_ATTEMPTS", defaults.max_attempts, "replays before parking, 1-100"),
        ("--backoff-base-seconds", "BACKOFF_BASE_SECONDS", defaults.base_seconds, "first ceiling"),
        ("--backoff-multiplier", "BACKOFF_MULTIPLIER", defaults.multiplier, "growth, >= 1"),
        ("--backoff-cap-seconds", "BACKOFF_CAP_SECONDS", defaults.cap_seconds, "largest delay"),
        ("--jitter", "JITTER", defaults.jitter, "full, equal, decorrelated or none"),
    ):
        parser.add_argument(
            option, type=setting_type(variable), default=default, help=f"{text} [{variable}]"
        )
    parser.add_argument(
        "--pollers", type=int_between(1, MAX_POLLERS), default=defaults.pollers, help="DLQ pollers"
    )
    parser.add_argument(
        "--timeout",
        type=positive_number,
        default=defaults.timeout_seconds,
        metavar="SECONDS",
        help="stop waiting after this long and report what is not yet done; by default it grows "
        "with the work: 60 s + 0.1 s a message + (backoff cap + 15 s) an attempt",
    )
    parser.add_argument("--seed", type=int, default=None, help="make the run repeatable")
    parser.add_argument("--plain", action="store_true", help="no live display (CI logs)")
    parser.set_defaults(run=run_demo_command)


def run_demo_command(args: argparse.Namespace) -> int:
    require_local_extra("moto")
    if not args.plain:
        require_local_extra("rich")
    from dlq_replay.demo.run import run_demo
    from dlq_replay.demo.scenario import DemoOptions

    options = DemoOptions(
        messages=args.messages,
        failure_rate=args.failure_rate,
        poison_rate=args.poison_rate,
        invalid_rate=args.invalid_rate,
        consumer_backoff=args.consumer_backoff,
        # setting_type keeps the option's text, as the function's environment would.
        max_attempts=int(args.max_attempts),
        base_seconds=int(args.backoff_base_seconds),
        multiplier=float(args.backoff_multiplier),
        cap_seconds=int(args.backoff_cap_seconds),
        jitter=str(args.jitter),
        pollers=args.pollers,
        timeout_seconds=args.timeout,
        seed=args.seed,
        live=not args.plain,
    )
    return run_demo(options)
