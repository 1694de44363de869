"""`dlq-replay peek`: look at messages without consuming them."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from dlq_replay import ops
from dlq_replay.cli.deployment import (
    Subparsers,
    add_deployment_options,
    add_json_option,
    command_sqs,
    count_attribute_of,
    operator_command,
    resolve_deployment,
    resolve_queue,
)
from dlq_replay.cli.errors import EXIT_OK
from dlq_replay.cli.options import (
    BUDGET_HELP,
    add_aws_options,
    int_between,
)
from dlq_replay.cli.output import duration, make_console, note, plural, print_json
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE

if TYPE_CHECKING:
    pass


# -- peek ---------------------------------------------------------------------------------------


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "peek",
        help="look at messages without consuming them",
        description="Receive up to --limit messages and make them visible again at once: "
        "message id, replay count, park reason, group id, attribute names, age and receive "
        "count; the body only with --body. " + BUDGET_HELP,
    )
    parser.add_argument("queue", metavar="QUEUE", help="main, dlq, operator, or a queue URL")
    parser.add_argument(
        "--limit", type=int_between(1, 100), default=10, help="messages to show (default 10)"
    )
    parser.add_argument("--body", action="store_true", help="show the message bodies")
    add_receive_options(parser)
    add_deployment_options(parser)
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_peek)


def add_receive_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--count-attribute",
        metavar="NAME",
        help="the replay count attribute (default: the function's REPLAY_COUNT_ATTRIBUTE, "
        f"else the environment's, else {DEFAULT_COUNT_ATTRIBUTE})",
    )
    parser.add_argument(
        "--reserve",
        type=int_between(1, 1000),
        default=1,
        help="receives every message must keep before its maxReceiveCount (default 1)",
    )
    parser.add_argument(
        "--wait-seconds",
        type=int_between(0, 20),
        default=1,
        help="long-poll wait of each receive, 0-20 (default 1: asks every SQS server)",
    )


@operator_command
def run_peek(args: argparse.Namespace) -> int:
    deployment = resolve_deployment(args)
    url = resolve_queue(deployment, args.queue, "QUEUE")
    sqs = command_sqs(args)
    info = ops.queue_info(sqs, url)
    if info.redrive is not None:
        note(
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
        count_attribute=count_attribute_of(args, deployment),
        reserve=args.reserve,
        wait_seconds=args.wait_seconds,
    )
    if result.stopped:
        note(result.stopped)
    if result.not_released:
        note(
            f"{plural(result.not_released, 'message')} could not be made visible at once; they "
            "return within 30 s by themselves"
        )
    if args.json:
        print_json(peek_json(result))
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

    console = make_console()
    if not result.messages:
        console.print(f"{result.queue.name}: no visible messages")
        return
    table = Table(
        title=f"{result.queue.name}: {plural(len(result.messages), 'message')} "
        "(still there, visible)",
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
