"""`dlq-replay demo`: the replay on an embedded SQS emulator (moto: the `demo` extra)."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import dlq_replay
from dlq_replay.cli.errors import EXIT_USAGE, CommandError
from dlq_replay.cli.options import MAX_POLLERS
from dlq_replay.cli.parsing import (
    Subparsers,
    add_setting_options,
    int_between,
    positive_number,
    share,
)
from dlq_replay.core.settings import SETTING

# The settings the demo takes, and the DemoOptions field of each.
_DEMO_SETTINGS = {
    "MAX_ATTEMPTS": "max_attempts",
    "BACKOFF_BASE_SECONDS": "base_seconds",
    "BACKOFF_MULTIPLIER": "multiplier",
    "BACKOFF_CAP_SECONDS": "cap_seconds",
    "JITTER": "jitter",
}


def register(subparsers: Subparsers) -> None:
    from dlq_replay.demo.scenario import DemoOptions

    defaults = DemoOptions()
    parser = subparsers.add_parser(
        "demo",
        description="Start an SQS emulator on 127.0.0.1, run a flaky consumer and the replay "
        "side by side, and account for every message. With --kind eventbridge: an event bus, "
        "a rule and its target queue, the target's DLQ replayed.",
    )
    parser.add_argument(
        "--kind",
        choices=("sqs", "eventbridge"),
        default="sqs",
        metavar="KIND",
        help="the DLQ the demo replays: sqs (a queue's redrive) or eventbridge (a rule target's "
        "DLQ; moto writes no such records, so the demo stages them in EventBridge's documented "
        "shape)",
    )
    parser.add_argument(
        "--messages",
        type=int_between(1, 100_000),
        default=defaults.messages,
        metavar="N",
        help="messages to send",
    )
    parser.add_argument(
        "--failure-rate",
        type=share,
        metavar="SHARE",
        default=defaults.failure_rate,
        help="share of messages that fail transiently (succeed once replayed); "
        "eventbridge: events whose delivery failed (delivered by the replay)",
    )
    parser.add_argument(
        "--poison-rate",
        type=share,
        metavar="SHARE",
        default=defaults.poison_rate,
        help="share of messages that always fail (end parked); eventbridge: records "
        "naming a retired target queue (every delivery refused)",
    )
    parser.add_argument(
        "--invalid-rate",
        type=share,
        metavar="SHARE",
        default=defaults.invalid_rate,
        help="share of messages the consumer parks at once (ParkMessage); eventbridge: "
        "records naming a target outside REPLAY_TARGET_ARNS (parked target-not-allowed)",
    )
    parser.add_argument(
        "--consumer-backoff",
        action="store_true",
        help="the consumer retries in the main queue with the same backoff (the consumer "
        "toolkit) before SQS moves a message to the DLQ: fewer messages reach the replay",
    )
    # The replay settings, judged by the function's own rules, with the demo's quick defaults.
    add_setting_options(
        parser,
        list(_DEMO_SETTINGS),
        title="replay settings",
        defaults={variable: getattr(defaults, name) for variable, name in _DEMO_SETTINGS.items()},
    )
    parser.add_argument(
        "--outage-seconds",
        type=int_between(0, 3600),
        default=int(defaults.outage_seconds),
        metavar="SECONDS",
        help="the consumer fails every message for the first SECONDS (an outage)",
    )
    parser.add_argument(
        "--no-breaker",
        action="store_true",
        help="no outage breaker: the replay keeps replaying (and parking) through an outage",
    )
    parser.add_argument(
        "--pollers",
        type=int_between(1, MAX_POLLERS),
        default=defaults.pollers,
        metavar="N",
        help="DLQ pollers",
    )
    parser.add_argument(
        "--timeout",
        type=positive_number,
        default=defaults.timeout_seconds,
        metavar="SECONDS",
        help="stop waiting after this long and report what is not yet done (default: 60, plus "
        "0.1 a message, plus the backoff cap + 15 an attempt)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, metavar="N", help="make the run repeatable"
    )
    parser.add_argument("--plain", action="store_true", help="no live display (CI logs)")
    parser.set_defaults(run=run_demo_command)


def run_demo_command(args: argparse.Namespace) -> int:
    if args.kind == "eventbridge":
        for option, given in (
            ("--consumer-backoff", args.consumer_backoff),
            ("--outage-seconds", args.outage_seconds),
            ("--no-breaker", args.no_breaker),
        ):
            if given:
                raise CommandError(
                    f"{option} is for the sqs demo; --kind eventbridge has no main-queue "
                    "consumer and no outage breaker",
                    EXIT_USAGE,
                )
    require_moto()
    from dlq_replay.demo.run import run_demo
    from dlq_replay.demo.scenario import DemoOptions

    options = DemoOptions(
        messages=args.messages,
        failure_rate=args.failure_rate,
        poison_rate=args.poison_rate,
        invalid_rate=args.invalid_rate,
        consumer_backoff=args.consumer_backoff,
        **{
            name: SETTING[variable].parse(str(getattr(args, variable)))
            for variable, name in _DEMO_SETTINGS.items()
        },
        pollers=args.pollers,
        timeout_seconds=args.timeout,
        seed=args.seed,
        live=not args.plain,
        outage_seconds=float(args.outage_seconds),
        breaker=not args.no_breaker,
    )
    if args.kind == "eventbridge":
        from dlq_replay.demo.eventbridge_run import run_eventbridge_demo

        return run_eventbridge_demo(options)
    return run_demo(options)


def require_moto() -> None:
    """Stop with one line, before anything starts, when moto (the `demo` extra) is missing: a
    plain `pip install sqs-dlq-replay` has every operator command, not the emulator."""
    try:
        importlib.import_module("moto")
    except ImportError:
        hint = install_hint(Path(dlq_replay.__file__).parent)
        # A usage error (2), as every missing extra is (the console's Flask too): the
        # command is fine, the installation lacks what it needs.
        raise CommandError(
            f"the demo needs moto, from the `demo` extra: {hint}", EXIT_USAGE
        ) from None


def install_hint(package_dir: Path) -> str:
    """How to install the `demo` extra where this package is: a checkout or a distribution."""
    parents = package_dir.parents
    if (
        len(parents) > 2
        and parents[0].name == "replay"
        and parents[1].name == "layers"
        and (parents[2] / "pyproject.toml").is_file()
    ):
        return f"in {parents[2]} run `make demo`, or pip install -e '.[demo]'"
    return "pip install 'sqs-dlq-replay[demo]'"
