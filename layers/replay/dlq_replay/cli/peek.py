"""`dlq-replay peek`: look at messages without consuming them."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from dlq_replay.cli.deployment import add_operator_options, add_receive_options, resolve_target
from dlq_replay.cli.errors import EXIT_OK, operator_command
from dlq_replay.cli.options import BUDGET_HELP
from dlq_replay.cli.output import duration, make_console, note, plural, print_json
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.cli.selection import add_selection_options, selector_from
from dlq_replay.core.kinds import RecordKind
from dlq_replay.ops.peek import PeekRequest, PeekResult, peek
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.receivememory import ReceiveMemory


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "peek",
        description="Receive up to --limit messages and make them visible again at once: "
        "message id, replay count, park reason, group id, attribute names, age and receive "
        "count; for records a Lambda function or an EventBridge rule wrote, also their kind, "
        "target and the service's error; the body only with --body. " + BUDGET_HELP,
    )
    parser.add_argument("queue", metavar="QUEUE", help="main, dlq, operator, or a queue URL")
    parser.add_argument(
        "--limit", type=int_between(1, 100), default=10, metavar="N", help="messages to show"
    )
    parser.add_argument("--body", action="store_true", help="show the message bodies")
    add_selection_options(parser)
    add_receive_options(parser)
    add_operator_options(parser, run_peek)


@operator_command
def run_peek(args: argparse.Namespace) -> int:
    target = resolve_target(args)
    url = target.queue(args.queue, "QUEUE")
    info = queue_info(target.sqs, url)
    if info.redrive is not None:
        note(
            f"{info.name} has a RedrivePolicy (maxReceiveCount "
            f"{info.redrive.max_receive_count}): SQS moves a message to "
            f"{info.redrive.target_name} on the receive that would exceed it. Peeking is a "
            "receive: it raises the receive count of every message shown ('left' = receives "
            "still delivering it)."
        )
    selector = selector_from(args)
    request = PeekRequest(
        source=info,
        limit=args.limit,
        body=args.body,
        count_attribute=target.count_attribute(),
        selector=selector,
        wait_seconds=args.wait_seconds,
        reserve=args.reserve,
        replay_targets=target.replay_targets(),
        accepted_kinds=target.accepted_kinds(),
    )
    result = peek(target.sqs, request, memory=ReceiveMemory.local())
    if result.stopped:
        note(result.stopped)
    if result.not_released:
        note(
            f"{plural(result.not_released, 'message')} could not be made visible at once; they "
            "return within 30 s by themselves"
        )
    if not selector.empty:
        note(f"{len(result.messages)} of {plural(result.examined, 'message')} looked at selected")
    if args.json:
        print_json(peek_json(result))
        return EXIT_OK
    _print_peek(result)
    return EXIT_OK


def peek_json(result: PeekResult) -> dict[str, Any]:
    return {
        "queue": {"name": result.queue.name, "url": result.queue.url, "fifo": result.queue.fifo},
        "max_receive_count": result.budget.max_receive_count if result.budget else None,
        "stopped": result.stopped,
        "examined": result.examined,
        "messages": [
            {key: value for key, value in asdict(m).items() if key != "body" or m.body is not None}
            for m in result.messages
        ],
    }


def _print_peek(result: PeekResult) -> None:
    from rich.table import Table

    console = make_console()
    if not result.messages:
        # Messages looked at and none selected is not an empty queue.
        seen = f"0 of {plural(result.examined, 'message')} selected" if result.examined else ""
        console.print(f"{result.queue.name}: {seen or 'no visible messages'}")
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
    # Kind, target and error in a table of their own (ARNs are long), and only where a
    # serverless service wrote a record: an SQS queue's output stays as it was.
    if any(m.kind != RecordKind.SQS for m in result.messages):
        kinds = Table(
            title="who wrote each record, where it goes back to, the service's error",
            title_justify="left",
        )
        for column in ("message id", "kind", "target"):  # the target whole, to copy
            kinds.add_column(column, no_wrap=True)
        kinds.add_column("error", overflow="fold")
        for m in result.messages:
            kinds.add_row(m.message_id, m.kind, m.target_arn or "-", m.error or "-")
        console.print(kinds)
    for m in result.messages:
        if m.body is not None:
            console.print(f"--- body of {m.message_id}")
            console.print(m.body)
