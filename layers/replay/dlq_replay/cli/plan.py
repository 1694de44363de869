"""`dlq-replay plan`: the backoff schedule a configuration gives, attempt by attempt."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

# `clients.make_client` is looked up at call time: the tests hand the command emulator clients.
from dlq_replay.cli import deployment as clients
from dlq_replay.cli.deployment import add_json_option
from dlq_replay.cli.errors import (
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    describe_error,
    operator_command,
)
from dlq_replay.cli.options import add_aws_options
from dlq_replay.cli.output import duration, make_console, print_json
from dlq_replay.cli.parsing import Subparsers, add_setting_options, int_between, queue_url
from dlq_replay.core.backoff import BackoffPolicy
from dlq_replay.core.queues import is_fifo_url, queue_name
from dlq_replay.core.settings import SETTING
from dlq_replay.local.answers import ForeignAnswerError
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.plan import (
    DEFAULT_MAIN_MAX_RECEIVE_COUNT,
    MAIN_MAX_RECEIVE_COUNT_LIMIT,
    BackoffPlan,
    ConsumerBackoffPlan,
    ScheduleRow,
    StepKind,
    backoff_plan,
    consumer_backoff_plan,
)
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.stack import STACK_OUTPUTS, function_environment, stack_outputs

# The settings `plan` reads (the worker's names), and the short names it took before, which
# scripts may still pass (not shown in --help).
_SHORT_OPTIONS = {
    "BACKOFF_BASE_SECONDS": "--base",
    "BACKOFF_MULTIPLIER": "--multiplier",
    "BACKOFF_CAP_SECONDS": "--cap",
}
_PLAN_VARIABLES = (*_SHORT_OPTIONS, "JITTER", "MAX_ATTEMPTS")


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        description="The backoff schedule per attempt: the ceiling min(cap, base x "
        "multiplier^(n-1)), the median and 95th percentile of the delay (drawn uniformly in "
        "whole seconds below the ceiling, as the jitter says), and the time until a message "
        "is parked, typical (median) and worst case. Defaults: the function's settings with "
        "--stack/--function-name, else its environment variables. Delays only: the time each "
        "attempt spends failing on the main queue comes on top. See "
        "docs/design.md, 'Backoff and jitter', and docs/operator-inspect.md#plan.",
    )
    add_setting_options(
        parser,
        _PLAN_VARIABLES,
        title="backoff settings (override --stack's or the environment's)",
        old_names=_SHORT_OPTIONS,
    )
    parser.add_argument(
        "--fifo",
        action="store_true",
        help="the main queue is FIFO: every delay waits in the DLQ (default: from "
        "--main-queue-url)",
    )
    parser.add_argument(
        "--main-queue-url",
        metavar="URL",
        type=queue_url,
        help="the main queue: FIFO or not by its name; its RedrivePolicy for --consumer-backoff "
        "(default: $MAIN_QUEUE_URL, else the function's with --stack)",
    )
    parser.add_argument(
        "--stack", metavar="NAME", help="take the settings of this stack's replay function"
    )
    parser.add_argument("--function-name", metavar="NAME", help="take this function's settings")
    parser.add_argument(
        "--consumer-backoff",
        action="store_true",
        help="add the combined schedule of backoff before the DLQ (docs/consumer.md): each copy's "
        "failed receives on the main queue, hidden for a delay of the same policy with attempt "
        "= receive count, then the replay's delay, ..., then the park (default: off)",
    )
    parser.add_argument(
        "--main-max-receive-count",
        metavar="N",
        type=int_between(1, MAIN_MAX_RECEIVE_COUNT_LIMIT),
        help="receives on the main queue before SQS moves a message to the DLQ, with "
        "--consumer-backoff (default: the main "
        "queue's RedrivePolicy, from --main-queue-url or --stack, else "
        f"{DEFAULT_MAIN_MAX_RECEIVE_COUNT}, template.yaml's MainQueueMaxReceiveCount)",
    )
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_plan)


@operator_command
def run_plan(args: argparse.Namespace) -> int:
    if args.main_max_receive_count is not None and not args.consumer_backoff:
        raise CommandError("--main-max-receive-count needs --consumer-backoff", EXIT_USAGE)
    env, origin, outputs = _plan_environment(args)
    overrides = {
        variable: getattr(args, variable)
        for variable in _PLAN_VARIABLES
        if getattr(args, variable) is not None
    }
    merged = {**env, **overrides}
    # plan sends nothing: the table's rows of what it shows, not the whole Settings.
    policy = BackoffPolicy(
        base_seconds=SETTING["BACKOFF_BASE_SECONDS"].read(merged),
        multiplier=SETTING["BACKOFF_MULTIPLIER"].read(merged),
        cap_seconds=SETTING["BACKOFF_CAP_SECONDS"].read(merged),
        jitter=SETTING["JITTER"].read(merged),
    )
    max_attempts: int = SETTING["MAX_ATTEMPTS"].read(merged)
    main_queue_url: str | None = args.main_queue_url or SETTING["MAIN_QUEUE_URL"].read(merged)
    fifo = args.fifo or is_fifo_url(main_queue_url or "")
    plan = backoff_plan(policy, max_attempts, fifo=fifo)
    if overrides:
        origin += ", overridden by options: " + ", ".join(f"{k}={v}" for k, v in overrides.items())
    combined: tuple[ConsumerBackoffPlan, str] | None = None
    if args.consumer_backoff:
        receives, receives_origin = _main_max_receive_count(args, main_queue_url, outputs)
        combined = (consumer_backoff_plan(policy, max_attempts, receives), receives_origin)
    if args.json:
        report = plan_json(plan, origin)
        if combined:
            report["consumer_backoff"] = consumer_backoff_json(*combined)
        print_json(report)
        return EXIT_OK
    _print_plan(plan, origin)
    if combined:
        _print_consumer_backoff(*combined)
    return EXIT_OK


def _plan_environment(
    args: argparse.Namespace,
) -> tuple[Mapping[str, str], str, Mapping[str, str] | None]:
    """The settings' variables, where they came from, and the stack's outputs if read."""
    function_name = args.function_name
    outputs: Mapping[str, str] | None = None
    if args.stack and not function_name:
        outputs = stack_outputs(clients.make_client(args, "cloudformation"), args.stack)
        function_name = outputs.get(STACK_OUTPUTS["function"])
        if not function_name:
            raise OpsError(f"stack {args.stack} has no ReplayFunctionName output")
    if function_name:
        env = function_environment(clients.make_client(args, "lambda"), function_name)
        return env, f"function {function_name}", outputs
    origin = "environment" if any(map(os.environ.get, _PLAN_VARIABLES)) else "defaults"
    return os.environ, origin, outputs


def _main_max_receive_count(
    args: argparse.Namespace, url: str | None, outputs: Mapping[str, str] | None
) -> tuple[int, str]:
    """The main queue's maxReceiveCount and where it came from: the option, else the queue's
    RedrivePolicy, else the template's default (a plan is still worth having offline)."""
    if args.main_max_receive_count is not None:
        return args.main_max_receive_count, "--main-max-receive-count"
    fallback = f"template default {DEFAULT_MAIN_MAX_RECEIVE_COUNT}"
    if url is None and args.stack:
        if outputs is None:
            outputs = stack_outputs(clients.make_client(args, "cloudformation"), args.stack)
        url = outputs.get(STACK_OUTPUTS["main"])
    if url is None:
        return DEFAULT_MAIN_MAX_RECEIVE_COUNT, f"{fallback}: no main queue known"
    name = queue_name(url)
    try:
        info = queue_info(clients.make_client(args, "sqs"), url)
    except ForeignAnswerError:
        raise  # not SQS at all: a wrong --endpoint-url, not a queue to plan without
    except (ClientError, BotoCoreError, OpsError) as error:
        line = str(error) if isinstance(error, OpsError) else describe_error(error)[0]
        return DEFAULT_MAIN_MAX_RECEIVE_COUNT, f"{fallback}: {name} not read: {line}"
    if info.redrive is None:
        return DEFAULT_MAIN_MAX_RECEIVE_COUNT, f"{fallback}: {name} has no RedrivePolicy"
    return info.redrive.max_receive_count, f"RedrivePolicy of {name}"


def plan_json(plan: BackoffPlan, origin: str) -> dict[str, Any]:
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
        "until_parked_seconds": _totals(plan),
    }


def consumer_backoff_json(plan: ConsumerBackoffPlan, origin: str) -> dict[str, Any]:
    return {
        "main_max_receive_count": plan.main_max_receive_count,
        "from": origin,
        "receives": plan.receives,
        "rows": [asdict(row) for row in plan.rows],
        "until_parked_seconds": _totals(plan),
    }


def _totals(plan: BackoffPlan | ConsumerBackoffPlan) -> dict[str, float]:
    return {"best": plan.best_total, "typical": plan.typical_total, "worst": plan.worst_total}


def _print_plan(plan: BackoffPlan, origin: str) -> None:
    from rich.table import Table

    console = make_console()
    policy = plan.policy
    console.print(
        f"backoff: base {policy.base_seconds}s x {policy.multiplier:g} per attempt, cap "
        f"{policy.cap_seconds}s, {policy.jitter.value} jitter, {plan.max_attempts} attempts "
        f"({origin})"
    )
    table = Table(title_justify="left")
    numbers = ("attempt", "ceiling", "delay range", "median", "p95", "total median", "total worst")
    for column in numbers:
        table.add_column(column, justify="right")
    table.add_column("waits")
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


def plan_chart(plan: BackoffPlan, width: int = 40) -> list[str]:
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


def _print_consumer_backoff(plan: ConsumerBackoffPlan, origin: str) -> None:
    from rich.table import Table

    console = make_console()
    receives = plan.main_max_receive_count
    console.print()
    console.print(
        f"with backoff before the DLQ: main queue maxReceiveCount {receives} ({origin}); "
        "each failed receive hides the message for a delay of the same policy, attempt = "
        "receive count; each replay sends a new copy, whose receive count starts again"
    )
    table = Table(title_justify="left")
    for column in ("replay count", "receive count", "step", "delay", "total best", "total median"):
        table.add_column(column, justify="left" if column == "step" else "right")
    table.add_column("total worst", justify="right")
    for index, row in enumerate(plan.rows):
        following = plan.rows[index + 1] if index + 1 < len(plan.rows) else None
        table.add_row(
            str(row.copy),
            _receive_counts(row),
            consumer_step_label(row, receives),
            "-" if row.kind is StepKind.PARK else f"{duration(row.low)} - {duration(row.high)}",
            duration(row.best_total),
            duration(row.typical_total),
            duration(row.worst_total),
            end_section=following is not None and following.copy != row.copy,
        )
    console.print(table)
    console.print(
        f"a message that keeps failing is parked after {plan.max_attempts + 1} deliveries x "
        f"{receives} receives ({plan.receives} on the main queue) and {plan.max_attempts} "
        f"replays: typically {duration(plan.typical_total)}, at worst "
        f"{duration(plan.worst_total)}, at best {duration(plan.best_total)} (plus the handler's "
        "run time and the polling)"
    )


def _receive_counts(row: ScheduleRow) -> str:
    if row.kind is not StepKind.RECEIVE:
        return ""
    return str(row.first) if row.steps == 1 else f"{row.first}-{row.last}"


def consumer_step_label(row: ScheduleRow, max_receive_count: int) -> str:
    """What happens in a row of the combined schedule, in the words of the two clocks."""
    match row.kind:
        case StepKind.RECEIVE:
            text = "fails: visibility backoff" + (" (each)" if row.steps > 1 else "")
            if row.last == max_receive_count:
                text += ", then SQS moves it to the DLQ"
            return text
        case StepKind.REPLAY:
            return f"in the DLQ: its delay, then replay {row.first} sends a new copy"
        case StepKind.PARK:
            return f"in the DLQ: parked (replay count {row.first} = max attempts)"
