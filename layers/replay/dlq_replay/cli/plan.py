"""`dlq-replay plan`: the backoff schedule a configuration gives, attempt by attempt."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from dlq_replay import ops

# `clients.make_client` is looked up at call time: the tests hand the command emulator clients.
from dlq_replay.cli import deployment as clients
from dlq_replay.cli.deployment import add_json_option
from dlq_replay.cli.errors import EXIT_OK, operator_command
from dlq_replay.cli.options import Subparsers, add_aws_options, setting_type
from dlq_replay.cli.output import duration, make_console, print_json
from dlq_replay.core.backoff import Jitter
from dlq_replay.core.settings import Settings

# The operator queue `plan` assumes when none is known: plan sends nothing.
_PLACEHOLDER_QUEUE = "https://sqs.invalid/000000000000/plan-placeholder"


_PLAN_OPTIONS: dict[str, tuple[str, str]] = {
    "base": ("BACKOFF_BASE_SECONDS", "ceiling of the first delay, seconds, 1-43200 (default 60)"),
    "multiplier": ("BACKOFF_MULTIPLIER", "growth of the ceiling per attempt, >= 1 (default 2)"),
    "cap": ("BACKOFF_CAP_SECONDS", "largest ceiling, seconds, 1-43200 (default 900)"),
    "jitter": ("JITTER", f"{', '.join(j.value for j in Jitter)} (default full)"),
    "max_attempts": ("MAX_ATTEMPTS", "replays before a message is parked, 1-100 (default 3)"),
}
# The variables `plan` reads: with none of them set, the plan is the defaults'.
_PLAN_VARIABLES = [variable for variable, _ in _PLAN_OPTIONS.values()]


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="what a backoff setting means: the delay of each attempt, the time to parking",
        description="The schedule of DESIGN.md §3 per attempt: the ceiling min(cap, base x "
        "multiplier^(n-1)), the median and 95th percentile of the delay (drawn uniformly in "
        "whole seconds below the ceiling, as the jitter says), and the time until a message "
        "is parked, typical (median) and worst case. Defaults: the function's settings with "
        "--stack/--function-name, else the environment variables of DESIGN.md §2. Delays "
        "only: the time each attempt spends failing on the main queue comes on top.",
    )
    for name, (variable, text) in _PLAN_OPTIONS.items():
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            metavar="VALUE",
            type=setting_type(variable),
            help=f"{text} [{variable}]",
        )
    parser.add_argument(
        "--fifo",
        action="store_true",
        help="the main queue is FIFO: every delay waits in the DLQ (default: from MAIN_QUEUE_URL)",
    )
    parser.add_argument(
        "--stack", metavar="NAME", help="take the settings of this stack's replay function"
    )
    parser.add_argument("--function-name", metavar="NAME", help="take this function's settings")
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_plan)


@operator_command
def run_plan(args: argparse.Namespace) -> int:
    env, origin = _plan_environment(args)
    overrides = {
        variable: str(getattr(args, name))
        for name, (variable, _) in _PLAN_OPTIONS.items()
        if getattr(args, name) is not None
    }
    merged = {**env, **overrides}
    merged.setdefault("OPERATOR_QUEUE_URL", _PLACEHOLDER_QUEUE)
    if not merged["OPERATOR_QUEUE_URL"].strip():
        merged["OPERATOR_QUEUE_URL"] = _PLACEHOLDER_QUEUE
    settings = Settings.from_env(merged)
    fifo = args.fifo or (settings.main_queue_url or "").endswith(".fifo")
    plan = ops.backoff_plan(settings.backoff, settings.max_attempts, fifo=fifo)
    if overrides:
        origin += ", overridden by options: " + ", ".join(f"{k}={v}" for k, v in overrides.items())
    if args.json:
        print_json(plan_json(plan, origin))
        return EXIT_OK
    _print_plan(plan, origin)
    return EXIT_OK


def _plan_environment(args: argparse.Namespace) -> tuple[Mapping[str, str], str]:
    function_name = args.function_name
    if args.stack and not function_name:
        outputs = ops.stack_outputs(clients.make_client(args, "cloudformation"), args.stack)
        function_name = outputs.get(ops.STACK_OUTPUTS["function"])
        if not function_name:
            raise ops.OpsError(f"stack {args.stack} has no ReplayFunctionName output")
    if function_name:
        env = ops.function_environment(clients.make_client(args, "lambda"), function_name)
        return env, f"function {function_name}"
    if any(os.environ.get(variable) for variable in _PLAN_VARIABLES):
        return os.environ, "environment"
    return os.environ, "defaults"


def plan_json(plan: ops.BackoffPlan, origin: str) -> dict[str, Any]:
    policy = plan.policy
    return {
        "settings": {
            "base_seconds": policy.base_seconds,
            "multiplier": policy.multiplier,
            "cap_seconds": policy.cap_seconds,
            "jitter": policy.jitter.value,
            "max_attempts": plan.max_attempts,
            "fifo": plan.fifo,
            "from": origin,
        },
        "attempts": [asdict(attempt) for attempt in plan.attempts],
        "until_parked_seconds": {
            "best": plan.best_total,
            "typical": plan.typical_total,
            "worst": plan.worst_total,
        },
    }


def _print_plan(plan: ops.BackoffPlan, origin: str) -> None:
    from rich.table import Table

    console = make_console()
    policy = plan.policy
    console.print(
        f"backoff: base {policy.base_seconds}s x {policy.multiplier:g} per attempt, cap "
        f"{policy.cap_seconds}s, {policy.jitter.value} jitter, {plan.max_attempts} attempts "
        f"({origin})"
    )
    table = Table(title_justify="left")
    for column in (
        "attempt",
        "ceiling",
        "delay range",
        "median",
        "p95",
        "total median",
        "total worst",
        "waits",
    ):
        table.add_column(column, justify="left" if column == "waits" else "right")
    limit = "FIFO: any delay" if plan.fifo else "over 15m"
    for a in plan.attempts:
        table.add_row(
            str(a.attempt),
            duration(a.ceiling),
            f"{duration(a.low)} - {duration(a.high)}",
            duration(a.median),
            duration(a.p95),
            duration(a.typical_total),
            duration(a.worst_total),
            _waits(a.dlq_share, limit),
        )
    console.print(table)
    console.print(
        f"a message that keeps failing is parked after {plan.max_attempts} replays: "
        f"typically {duration(plan.typical_total)} of backoff, at worst "
        f"{duration(plan.worst_total)}, at best {duration(plan.best_total)} (plus the time "
        "each attempt spends failing on the main queue)"
    )
    console.print()
    for line in plan_chart(plan):
        console.print(line)


def _waits(dlq_share: float, limit: str) -> str:
    """How the delays of an attempt are served: DelaySeconds, or waiting in the DLQ (§4)."""
    if dlq_share == 0:
        return "DelaySeconds"
    if dlq_share == 1:
        return f"in the DLQ ({limit})"
    return f"{dlq_share:.0%} in the DLQ ({limit})"


def plan_chart(plan: ops.BackoffPlan, width: int = 40) -> list[str]:
    """A bar per attempt on one scale: # up to the median, = up to p95, - up to the ceiling."""
    scale = max((a.high for a in plan.attempts), default=0) or 1
    label = len(str(plan.max_attempts))

    def column(seconds: float) -> int:
        return round(seconds / scale * width)

    lines = [
        f"{'':>{label}}  delay per attempt, 0 to {duration(scale)}: "
        "'#' to the median, '=' to the 95th percentile, '-' to the ceiling"
    ]
    for a in plan.attempts:
        start, median, p95, high = column(a.low), column(a.median), column(a.p95), column(a.high)
        bar = " " * start + "#" * (median - start) + "=" * (p95 - median) + "-" * (high - p95)
        lines.append(
            f"{a.attempt:>{label}} |{bar:<{width}}| {duration(a.median)} / {duration(a.p95)} "
            f"/ {duration(a.high)}"
        )
    return lines
