"""`dlq-replay status | peek | redrive | plan`: the operator's commands (DESIGN.md §7).

Argument parsing and output only; the work is in `ops`. Human tables (rich) by default,
`--json` for scripts; progress bars on stderr for long operations, only on a terminal and
never with `--json`. Exit codes: 0 ok, 1 something failed, 2 usage.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.cli.main import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_aws_options,
    describe_error,
    queue_url,
    sqs_client,
)
from dlq_replay.core.backoff import Jitter
from dlq_replay.core.decision import ParkReason
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE, Settings
from dlq_replay.ops import operations as ops
from dlq_replay.sqs.depth import queue_depth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from rich.console import Console
    from rich.progress import Progress

Subparsers = Any  # argparse's _SubParsersAction is private
Run = Callable[[argparse.Namespace], int]

# Clients other than SQS: few retries and short timeouts, these are one-off look-ups.
_LOOKUP_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=15
)
# CloudWatch is a nice-to-have for `status` (the age of the oldest message): fail fast.
_OPTIONAL_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 1}, connect_timeout=3, read_timeout=5
)
_PLACEHOLDER_QUEUE = "https://sqs.invalid/000000000000/plan-placeholder"


# -- clients and discovery ---------------------------------------------------------------------


def make_client(args: argparse.Namespace, service: str) -> Any:
    """A client of `service` from the AWS CLI-style options; tests replace this function.

    `--endpoint-url` applies to every service a command calls (an emulator such as moto's
    server serves them all on one port); AWS_ENDPOINT_URL_<SERVICE> still wins for a service.
    """
    if service == "sqs":
        return sqs_client(args)
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    endpoint = os.environ.get(f"AWS_ENDPOINT_URL_{service.upper()}") or args.endpoint_url
    config = _OPTIONAL_CONFIG if service == "cloudwatch" else _LOOKUP_CONFIG
    return session.client(service, endpoint_url=endpoint, config=config)  # type: ignore[call-overload]


def _sqs(args: argparse.Namespace) -> SQSClient:
    client: SQSClient = make_client(args, "sqs")
    return client


def add_deployment_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "queues", "name the queues, or read them from a deployed stack (explicit URLs win)"
    )
    group.add_argument("--stack", metavar="NAME", help="a deployed sqs-dlq-replay stack")
    group.add_argument(
        "--main-queue-url", metavar="URL", type=queue_url, help="the queue replays go to"
    )
    group.add_argument(
        "--dlq-url", metavar="URL", type=queue_url, help="the dead-letter queue the replay polls"
    )
    group.add_argument(
        "--operator-queue-url", metavar="URL", type=queue_url, help="where parked messages wait"
    )
    group.add_argument(
        "--function-name",
        metavar="NAME",
        help="the replay function (default: the stack's ReplayFunctionName output)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="machine-readable output on stdout, no progress bars"
    )


def _deployment(args: argparse.Namespace) -> ops.Deployment:
    explicit = ops.Deployment(
        main=args.main_queue_url,
        dlq=args.dlq_url,
        operator=args.operator_queue_url,
        function_name=args.function_name,
    )
    cfn = make_client(args, "cloudformation") if args.stack else None
    return ops.discover(explicit, cfn, args.stack)


def _queue_url(deployment: ops.Deployment, name: str, option: str) -> str:
    """A role (main, dlq, operator) or a queue URL."""
    if "://" in name:
        try:
            return queue_url(name)
        except argparse.ArgumentTypeError as error:
            raise CommandError(f"{option}: {error}", EXIT_USAGE) from None
    if name not in ops.QUEUE_ROLES:
        raise CommandError(
            f"{option}: {name!r} is neither main, dlq, operator nor a queue URL", EXIT_USAGE
        )
    url = deployment.queue(name)
    if url is None:
        flag = {"main": "--main-queue-url", "dlq": "--dlq-url", "operator": "--operator-queue-url"}
        raise CommandError(
            f"{option}: the {name} queue is unknown: pass --stack NAME or {flag[name]}", EXIT_USAGE
        )
    return url


def _count_attribute(args: argparse.Namespace, deployment: ops.Deployment) -> str:
    """--count-attribute, else the function's REPLAY_COUNT_ATTRIBUTE, else the environment."""
    if args.count_attribute:
        return str(args.count_attribute)
    if deployment.function_name:
        try:
            env = ops.function_environment(make_client(args, "lambda"), deployment.function_name)
        except (ClientError, BotoCoreError) as error:
            _note(f"could not read the function's REPLAY_COUNT_ATTRIBUTE ({_code(error)})")
        else:
            if env.get("REPLAY_COUNT_ATTRIBUTE"):
                return env["REPLAY_COUNT_ATTRIBUTE"]
    return os.environ.get("REPLAY_COUNT_ATTRIBUTE") or DEFAULT_COUNT_ATTRIBUTE


def one_line(error: ClientError | BotoCoreError) -> tuple[str, int]:
    """describe_error's line, and never more than one: an endpoint that answers with an HTML
    page (an emulator without the operation) is reported by its HTTP status."""
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        if "<" in str(info.get("Message", "")) or str(info.get("Code", "")).isdigit():
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
            return f"{error.operation_name} failed: the endpoint answered HTTP {status}", 1
    message, code = describe_error(error)
    return " ".join(message.split()), code


def _code(error: Exception) -> str:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "error"))
    return type(error).__name__


def operator_command(run: Run) -> Run:
    """Turn the logic's refusals (OpsError) into the CLI's one-line errors."""

    @functools.wraps(run)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except ops.OpsError as error:
            raise CommandError(str(error), EXIT_USAGE if error.usage else EXIT_FAILED) from None
        except (ClientError, BotoCoreError) as error:
            message, code = one_line(error)
            raise CommandError(message, code) from None

    return wrapper


# -- output helpers -------------------------------------------------------------------------------


def _console(*, stderr: bool = False) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # Not a terminal: wide enough that tables keep whole queue names (scripts use --json).
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 160
    return Console(file=stream, markup=False, highlight=False, emoji=False, width=width)


def _note(text: str) -> None:
    print(f"dlq-replay: {text}", file=sys.stderr)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, frozenset | set | tuple):
        return sorted(value) if isinstance(value, frozenset | set) else list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


@contextmanager
def _progress(args: argparse.Namespace) -> Iterator[Progress]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = _console(stderr=True)
    disabled = bool(getattr(args, "json", False)) or not console.is_terminal
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=disabled,
    ) as progress:
        yield progress


def duration(seconds: float) -> str:
    """A human duration with at most two units: 0s, 45s, 1m 30s, 2h 5m, 1d 3h."""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    units = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))
    parts: list[str] = []
    for name, size in units:
        amount, total = divmod(total, size)
        if amount or parts:
            parts.append(f"{amount}{name}")
        if len(parts) == 2:
            break
    while parts and parts[-1].startswith("0"):
        parts.pop()
    return " ".join(parts)


def _int_between(low: int, high: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {value}")
        return value

    return convert


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


_BUDGET_HELP = (
    "Receive counts: every ReceiveMessage raises a message's receive count, and on a queue "
    "with a RedrivePolicy (the DLQ -> operator queue safety net, the main queue -> DLQ) SQS "
    "moves a message on the receive that would take it past maxReceiveCount. SQS shows the "
    "count only by receiving, so the rule is a budget: a message arrives on a DLQ with the "
    "receive count it had on its source queue (the largest maxReceiveCount of the queues "
    "ListDeadLetterSourceQueues names), one look adds one. The command refuses to start when "
    "even a fresh message would keep fewer than --reserve receives after the look; it stops "
    "before its next receive as soon as a message it has seen keeps --reserve or fewer; the "
    "first receive of a peek takes a single message (a message already at its limit cannot "
    "be seen coming, so at most one could be touched before the rule has a sample); and "
    "messages in flight (held by the replay for a long delay) are never received. It says "
    "so on stderr and shows the receives left for each message."
)


# -- status -----------------------------------------------------------------------------------


def register_status(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "status",
        help="depth of the main, DLQ and operator queues; is the replay's event source on",
        description="For each known queue: visible, in flight and delayed messages (SQS's "
        "approximate counters), the age of the oldest message (CloudWatch's "
        "ApproximateAgeOfOldestMessage, where SQS reports it) and its RedrivePolicy; with "
        "--stack or --function-name, whether the replay function's event source on the DLQ "
        "is enabled. Receives no message.",
    )
    add_deployment_options(parser)
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_status)


@operator_command
def run_status(args: argparse.Namespace) -> int:
    deployment = _deployment(args)
    result = ops.status(
        _sqs(args),
        deployment,
        cloudwatch=make_client(args, "cloudwatch"),
        lam=make_client(args, "lambda") if deployment.function_name else None,
    )
    if args.json:
        _print_json(status_json(result, deployment))
        return EXIT_OK
    from rich.table import Table

    console = _console()
    table = Table(title=_title(deployment), title_justify="left")
    table.add_column("queue", no_wrap=True, min_width=8)
    table.add_column("name", no_wrap=True)
    for column in ("visible", "in flight", "delayed", "oldest"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("redrive", no_wrap=True)
    roles = {queue.queue.arn: queue.role for queue in result.queues}
    for queue in result.queues:
        redrive = queue.queue.redrive
        wiring = "-"
        if redrive:
            target = roles.get(redrive.target_arn, redrive.target_name)
            wiring = f"-> {target} after {redrive.max_receive_count} receives"
        table.add_row(
            queue.role,
            queue.queue.name,
            str(queue.depth.visible),
            str(queue.depth.in_flight),
            str(queue.depth.delayed),
            duration(queue.oldest_age_seconds) if queue.oldest_age_seconds is not None else "-",
            wiring,
        )
    console.print(table)
    console.print(_event_source_line(result.event_source))
    if result.age_note:
        console.print(result.age_note)
    console.print(
        "Counters are approximate (about a minute behind); 'oldest' is CloudWatch's "
        "ApproximateAgeOfOldestMessage, '-' when SQS has not reported it."
    )
    return EXIT_OK


def _title(deployment: ops.Deployment) -> str:
    return f"stack {deployment.stack}" if deployment.stack else "queues"


def _event_source_line(source: ops.EventSourceStatus | None) -> str:
    if source is None:
        return "event source: not checked (pass --stack NAME or --function-name)"
    if not source.found:
        return f"event source: {source.function_name} has NO event source on the DLQ"
    details = [f"batch size {source.batch_size}"] if source.batch_size else []
    if source.maximum_concurrency:
        details.append(f"maximum concurrency {source.maximum_concurrency}")
    if source.last_result:
        details.append(f"last result: {source.last_result}")
    state = source.state or "unknown"
    if not source.enabled:
        state = f"{state.upper()}: the DLQ is not being replayed"
    return f"event source: {source.function_name} on the DLQ is {state} ({', '.join(details)})"


def status_json(result: ops.Status, deployment: ops.Deployment) -> dict[str, Any]:
    return {
        "stack": deployment.stack,
        "queues": [
            {
                "role": q.role,
                "name": q.queue.name,
                "url": q.queue.url,
                "arn": q.queue.arn,
                "fifo": q.queue.fifo,
                "visible": q.depth.visible,
                "in_flight": q.depth.in_flight,
                "delayed": q.depth.delayed,
                "oldest_age_seconds": q.oldest_age_seconds,
                "redrive": asdict(q.queue.redrive) if q.queue.redrive else None,
            }
            for q in result.queues
        ],
        "event_source": (
            {**asdict(result.event_source), "enabled": result.event_source.enabled}
            if result.event_source
            else None
        ),
        "notes": [result.age_note] if result.age_note else [],
    }


# -- peek ---------------------------------------------------------------------------------------


def register_peek(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "peek",
        help="look at messages without consuming them",
        description="Receive up to --limit messages and make them visible again at once: "
        "message id, replay count, park reason, group id, attribute names, age and receive "
        "count; the body only with --body. " + _BUDGET_HELP,
    )
    parser.add_argument("queue", metavar="QUEUE", help="main, dlq, operator, or a queue URL")
    parser.add_argument(
        "--limit", type=_int_between(1, 100), default=10, help="messages to show (default 10)"
    )
    parser.add_argument("--body", action="store_true", help="show the message bodies")
    _add_receive_options(parser)
    add_deployment_options(parser)
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_peek)


def _add_receive_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--count-attribute",
        metavar="NAME",
        help="the replay count attribute (default: the function's REPLAY_COUNT_ATTRIBUTE, "
        f"else the environment's, else {DEFAULT_COUNT_ATTRIBUTE})",
    )
    parser.add_argument(
        "--reserve",
        type=_int_between(1, 1000),
        default=1,
        help="receives every message must keep before its maxReceiveCount (default 1)",
    )
    parser.add_argument(
        "--wait-seconds",
        type=_int_between(0, 20),
        default=1,
        help="long-poll wait of each receive, 0-20 (default 1: asks every SQS server)",
    )


@operator_command
def run_peek(args: argparse.Namespace) -> int:
    deployment = _deployment(args)
    url = _queue_url(deployment, args.queue, "QUEUE")
    sqs = _sqs(args)
    info = ops.queue_info(sqs, url)
    if info.redrive is not None:
        _note(
            f"{info.name} has a RedrivePolicy (maxReceiveCount "
            f"{info.redrive.max_receive_count}): SQS moves a message to "
            f"{info.redrive.target_name} on the receive that would exceed it. Peeking is a "
            "receive: it raises the receive count of every message shown ('left' = receives "
            "still delivering it)."
        )
    result = ops.peek(
        sqs,
        url,
        limit=args.limit,
        body=args.body,
        count_attribute=_count_attribute(args, deployment),
        reserve=args.reserve,
        wait_seconds=args.wait_seconds,
    )
    if result.stopped:
        _note(result.stopped)
    if result.not_released:
        _note(
            f"{result.not_released} messages could not be made visible at once; they return "
            "within 30 s by themselves"
        )
    if args.json:
        _print_json(peek_json(result))
        return EXIT_OK
    _print_peek(result)
    return EXIT_OK


def peek_json(result: ops.PeekResult) -> dict[str, Any]:
    return {
        "queue": {"name": result.queue.name, "url": result.queue.url, "fifo": result.queue.fifo},
        "max_receive_count": result.budget.max_receive_count if result.budget else None,
        "stopped": result.stopped,
        "messages": [
            {key: value for key, value in asdict(m).items() if key != "body" or m.body is not None}
            for m in result.messages
        ],
    }


def _print_peek(result: ops.PeekResult) -> None:
    from rich.table import Table

    console = _console()
    if not result.messages:
        console.print(f"{result.queue.name}: no visible messages")
        return
    table = Table(
        title=f"{result.queue.name}: {len(result.messages)} messages (still there, visible)",
        title_justify="left",
    )
    columns = ["message id", "count", "park reason", "group", "attributes", "age", "receives"]
    if result.budget is not None:
        columns.append("left")
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in {"count", "age", "receives", "left"} else "left",
            no_wrap=column != "attributes",
        )
    for m in result.messages:
        count = str(m.replay_count) if m.replay_count is not None else f"invalid {m.raw_count!r}"
        row = [
            m.message_id,
            count,
            m.park_reason or "-",
            m.group_id or "-",
            ", ".join(m.attribute_names) or "-",
            duration(m.age_seconds) if m.age_seconds is not None else "-",
            str(m.receive_count),
        ]
        if m.receives_left is not None:
            row.append(str(m.receives_left))
        table.add_row(*row)
    console.print(table)
    for m in result.messages:
        if m.body is not None:
            console.print(f"--- body of {m.message_id}")
            console.print(m.body)


# -- redrive ------------------------------------------------------------------------------------


def register_redrive(subparsers: Subparsers) -> None:
    reasons = [r.value for r in ParkReason]
    parser = subparsers.add_parser(
        "redrive",
        help="send parked messages back once the bug is fixed",
        description="Move messages from the operator queue (or the DLQ) back to the main "
        "queue or to their source queues. Without --reset-count, --filter-reason or --limit, "
        "and when the source is some queue's DLQ, SQS's own StartMessageMoveTask does it "
        "(every attribute kept as is, park reason included; --wait follows it). Otherwise the "
        "move is client-side, in batches of 10: each copy keeps the body and every attribute "
        "byte for byte except the park reason (removed), dlq-replay-not-before (removed) and "
        "with --reset-count the replay count (removed: the message starts again at 0); FIFO "
        "copies keep their group id and get a deduplication id derived from the original's "
        "message id. An original is deleted only after its copy was sent, so an interrupted "
        "run loses nothing and a rerun continues (a message whose copy was sent but whose "
        "delete did not happen is sent again: at least once). " + _BUDGET_HELP,
    )
    parser.add_argument(
        "--from",
        dest="source",
        default="operator",
        metavar="QUEUE",
        help="operator (default), dlq, or a queue URL",
    )
    parser.add_argument(
        "--to",
        dest="destination",
        default="main",
        metavar="QUEUE",
        help="main (default), source (each message's source queue, as SQS recorded it when "
        "it moved the message: messages parked by the replay have none and are skipped), or "
        "a queue URL",
    )
    parser.add_argument(
        "--limit", type=_int_between(1, 1_000_000), help="move at most N messages (client-side)"
    )
    parser.add_argument(
        "--rate", type=_positive_number, metavar="PER_SEC", help="messages per second at most"
    )
    parser.add_argument(
        "--reset-count",
        action="store_true",
        help="start the replay count again (remove the count attribute)",
    )
    parser.add_argument(
        "--filter-reason",
        dest="reasons",
        action="append",
        choices=[*reasons, ops.NO_REASON],
        metavar="REASON",
        help=f"move only messages parked for REASON (repeatable): {', '.join(reasons)}, or "
        f"{ops.NO_REASON} for messages without a park reason (moved by SQS's safety net)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="count what would move; move nothing"
    )
    parser.add_argument(
        "--wait", action="store_true", help="follow a native move task until it finishes"
    )
    parser.add_argument(
        "--poll-seconds",
        type=_positive_number,
        default=5.0,
        help="how often --wait asks SQS (default 5)",
    )
    parser.add_argument(
        "--client-side",
        action="store_true",
        help="move client-side even where a native move task would do (removes the park reason)",
    )
    parser.add_argument(
        "--hide-seconds",
        type=_int_between(1, 43_200),
        default=120,
        help="visibility timeout of received messages: messages not moved stay hidden while "
        "the run lasts and are made visible again when it ends; after a crash they come back "
        "by themselves after this long (default 120)",
    )
    _add_receive_options(parser)
    add_deployment_options(parser)
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_redrive)


@operator_command
def run_redrive(args: argparse.Namespace) -> int:
    deployment = _deployment(args)
    sqs = _sqs(args)
    source = ops.queue_info(sqs, _queue_url(deployment, args.source, "--from"))
    destination: ops.QueueInfo | None = None
    if args.destination != "source":
        destination = ops.queue_info(sqs, _queue_url(deployment, args.destination, "--to"))
        if destination.url == source.url:
            raise CommandError("--from and --to name the same queue", EXIT_USAGE)
    request = ops.RedriveRequest(
        source=source,
        destination=destination,
        limit=args.limit,
        rate=args.rate,
        reset_count=args.reset_count,
        reasons=frozenset(args.reasons or ()),
        dry_run=args.dry_run,
        count_attribute=_count_attribute(args, deployment) if args.reset_count else "",
        hide_seconds=args.hide_seconds,
        wait_seconds=args.wait_seconds,
        reserve=args.reserve,
    )
    mode, why = ops.choose_mode(sqs, request, client_side=args.client_side)
    if not args.json:
        _note(f"{mode.value} move: {why}")
    if mode is ops.MoveMode.NATIVE:
        return _native_redrive(args, sqs, request)
    if args.wait:
        _note("--wait only applies to a native move task; a client-side move ends when done")
    return _client_redrive(args, sqs, request)


def _native_redrive(args: argparse.Namespace, sqs: SQSClient, request: ops.RedriveRequest) -> int:
    source, destination = request.source, request.destination
    approximate = queue_depth(sqs, source.url).visible
    target = destination.name if destination else "their source queues"
    if request.dry_run:
        plan = {
            "mode": "native",
            "dry_run": True,
            "source_arn": source.arn,
            "destination_arn": destination.arn if destination else None,
            "rate": request.rate,
            "approximate_messages": approximate,
        }
        if args.json:
            _print_json(plan)
        else:
            _console().print(
                f"dry run: would start a message move task of about {approximate} messages "
                f"from {source.name} to {target}; nothing moved"
            )
        return EXIT_OK
    try:
        handle = ops.start_move_task(
            sqs, source.arn, destination.arn if destination else None, request.rate
        )
    except ClientError as error:
        message, code = one_line(error)
        if "HTTP" in message:
            message += " (an emulator may lack message move tasks: rerun with --client-side)"
        raise CommandError(message, code) from None
    if not args.wait:
        if args.json:
            _print_json({"mode": "native", "task_handle": handle, "status": "RUNNING"})
        else:
            _console().print(
                f"started a message move task of about {approximate} messages from "
                f"{source.name} to {target}; it runs in SQS (follow it with --wait, or watch "
                f"`dlq-replay status`)\ntask handle: {handle}"
            )
        return EXIT_OK
    try:
        with _progress(args) as progress:
            bar = progress.add_task(f"moving {source.name} -> {target}", total=approximate or None)

            def show(task: ops.MoveTask) -> None:
                progress.update(bar, completed=task.moved, total=task.to_move or None)

            task = ops.wait_move_task(
                sqs, source.arn, poll_seconds=args.poll_seconds, on_progress=show
            )
    except KeyboardInterrupt:
        _note(
            "stopped waiting; the move task goes on in SQS (cancel it with `aws sqs "
            f"cancel-message-move-task --task-handle {handle}`)"
        )
        raise
    if args.json:
        _print_json({"mode": "native", "task_handle": handle, **asdict(task)})
    else:
        line = (
            f"move task {task.status}: {task.moved} messages moved from {source.name} to {target}"
        )
        if task.failure_reason:
            line += f" ({task.failure_reason})"
        _console().print(line)
    return EXIT_OK if task.succeeded else EXIT_FAILED


def _client_redrive(args: argparse.Namespace, sqs: SQSClient, request: ops.RedriveRequest) -> int:
    approximate = queue_depth(sqs, request.source.url).visible
    total = min(approximate, request.limit) if request.limit else approximate
    latest = ops.RedriveTally(dry_run=request.dry_run)
    verb = "looking at" if request.dry_run else "moving"
    try:
        with _progress(args) as progress:
            bar = progress.add_task(f"{verb} {request.source.name}", total=total or None)

            def show(tally: ops.RedriveTally) -> None:
                nonlocal latest
                latest = tally
                progress.update(bar, completed=tally.seen, total=max(total, tally.seen) or None)

            tally = ops.redrive(sqs, request, on_progress=show)
    except KeyboardInterrupt:
        _note(f"interrupted after {_tally_line(latest)}; rerun to continue, nothing is lost")
        raise
    if tally.stopped:
        _note(tally.stopped)
    if args.json:
        _print_json(redrive_json(tally, request))
    else:
        _print_tally(tally, request)
    return EXIT_FAILED if tally.failed or tally.stopped else EXIT_OK


def redrive_json(tally: ops.RedriveTally, request: ops.RedriveRequest) -> dict[str, Any]:
    return {
        "mode": "client",
        "source": request.source.url,
        "destination": request.destination.url if request.destination else "source",
        "reset_count": request.reset_count,
        "filter_reasons": sorted(request.reasons),
        **asdict(tally),
        "adds_up": tally.adds_up,
    }


def _tally_line(tally: ops.RedriveTally) -> str:
    moved = "would move" if tally.dry_run else "moved"
    return (
        f"{tally.seen} seen: {tally.moved} {moved}, {tally.failed} failed, {tally.skipped} skipped"
    )


def _print_tally(tally: ops.RedriveTally, request: ops.RedriveRequest) -> None:
    from rich.table import Table

    console = _console()
    target = request.destination.name if request.destination else "their source queues"
    console.print(f"{'dry run: ' if tally.dry_run else ''}{request.source.name} -> {target}")
    table = Table()
    table.add_column("messages")
    table.add_column("count", justify="right")
    table.add_row("would move" if tally.dry_run else "moved", str(tally.moved))
    table.add_row("failed (left in place)", str(tally.failed))
    for code, count in sorted(tally.failures.items()):
        table.add_row(f"  {code}", str(count))
    table.add_row("skipped (left in place)", str(tally.skipped))
    for code, count in sorted(tally.skips.items()):
        table.add_row(f"  {code}", str(count))
    table.add_row("seen", str(tally.seen))
    console.print(table)
    if tally.dry_run:
        console.print("dry run: nothing was sent or deleted")
    if tally.failed:
        console.print("failed messages are still in the source queue: rerun to retry them")


# -- plan ---------------------------------------------------------------------------------------

_PLAN_OPTIONS: dict[str, tuple[str, str]] = {
    "base": ("BACKOFF_BASE_SECONDS", "ceiling of the first delay, seconds"),
    "multiplier": ("BACKOFF_MULTIPLIER", "growth of the ceiling per attempt, >= 1"),
    "cap": ("BACKOFF_CAP_SECONDS", "largest ceiling, seconds (1-43200)"),
    "jitter": ("JITTER", f"{', '.join(j.value for j in Jitter)}"),
    "max_attempts": ("MAX_ATTEMPTS", "replays before a message is parked (1-100)"),
}


def register_plan(subparsers: Subparsers) -> None:
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
            f"--{name.replace('_', '-')}", dest=name, metavar="VALUE", help=f"{text} [{variable}]"
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
        _print_json(plan_json(plan, origin))
        return EXIT_OK
    _print_plan(plan, origin)
    return EXIT_OK


def _plan_environment(args: argparse.Namespace) -> tuple[Mapping[str, str], str]:
    function_name = args.function_name
    if args.stack and not function_name:
        outputs = ops.stack_outputs(make_client(args, "cloudformation"), args.stack)
        function_name = outputs.get(ops.STACK_OUTPUTS["function"])
        if not function_name:
            raise ops.OpsError(f"stack {args.stack} has no ReplayFunctionName output")
    if function_name:
        env = ops.function_environment(make_client(args, "lambda"), function_name)
        return env, f"function {function_name}"
    return os.environ, "environment"


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

    console = _console()
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


OPERATOR_COMMANDS: Sequence[Callable[[Subparsers], None]] = (
    register_status,
    register_peek,
    register_redrive,
    register_plan,
)
