"""`dlq-replay purge` (PurgeQueue) and `dlq-replay delete` (the messages a selection takes):
each behind the queue's name typed back (`--confirm`)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from functools import partial
from typing import Any

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, audited
from dlq_replay.cli.deployment import (
    Target,
    add_operator_options,
    add_receive_options,
    resolve_target,
)
from dlq_replay.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, operator_command
from dlq_replay.cli.options import BUDGET_HELP
from dlq_replay.cli.output import (
    TallyReport,
    TallyRow,
    count_table,
    make_console,
    note,
    plural,
    report_tally,
)
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.cli.selection import add_selection_options, selector_from
from dlq_replay.cli.shutdown import Shutdown, hidden_until_text
from dlq_replay.ops.deleting import (
    PURGE_INTERVAL_SECONDS,
    Deleter,
    DeleteRequest,
    DeleteTally,
    PurgeResult,
    purge,
)
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.sqs.depth import queue_depth


def check_confirmed(confirm: str, queue: QueueInfo) -> None:
    """A usage error unless `confirm` (--confirm, or the console's field) is the queue's name."""
    if confirm != queue.name:
        raise CommandError(
            f"--confirm {confirm!r} is not the name of the queue {queue.url}: type its name "
            f"({queue.name}) to confirm; nothing was done",
            EXIT_USAGE,
        )


def confirmed_queue(args: argparse.Namespace) -> tuple[Target, QueueInfo]:
    """The run's target and its QUEUE, once --confirm is checked: purge and delete start here."""
    target = resolve_target(args)
    queue = queue_info(target.sqs, target.queue(args.queue, "QUEUE"))
    check_confirmed(args.confirm, queue)
    return target, queue


def register(subparsers: Subparsers) -> None:
    purge_parser = subparsers.add_parser(
        "purge",
        description="Delete every message of QUEUE with SQS's PurgeQueue: visible, in flight "
        f"and delayed ones, within {PURGE_INTERVAL_SECONDS} seconds, for good (no archive: "
        "`dlq-replay export` first to keep them). Asks for the queue's name typed back with "
        f"--confirm. SQS allows one purge of a queue every {PURGE_INTERVAL_SECONDS} seconds. "
        "Recorded in the audit trail (docs/operator-audit.md).",
    )
    parser = subparsers.add_parser(
        "delete",
        description="Delete the messages of QUEUE that the selection takes (every message "
        "without one), for good (`dlq-replay export --delete` keeps an archive instead): "
        "each received batch's selected messages are deleted at once, the others given back "
        "when the run ends. Asks for the queue's name typed back with --confirm. The tally "
        "adds up: received = deleted + skipped + failed. " + BUDGET_HELP + " Recorded in the "
        "audit trail (docs/operator-audit.md).",
    )
    for each, what in ((purge_parser, "purges"), (parser, "deletes")):
        each.add_argument("queue", metavar="QUEUE", help="main, dlq, operator, or a queue URL")
        each.add_argument(
            "--confirm",
            required=True,
            metavar="NAME",
            help=f"the name of the queue, typed back (the last part of its URL): {what} only "
            "when it is the queue's name",
        )
    parser.add_argument(
        "--limit", type=int_between(1, 1_000_000), metavar="N", help="delete at most N messages"
    )
    parser.add_argument(
        "--hide-seconds",
        type=int_between(1, 43_200),
        default=120,
        metavar="SECONDS",
        help="visibility timeout of received messages: those not deleted stay hidden while "
        "the run lasts and are made visible again when it ends; after a crash they come back "
        "by themselves after this long",
    )
    add_selection_options(parser)
    add_receive_options(parser, count_attribute=False)
    for each, run in ((purge_parser, run_purge), (parser, run_delete)):
        add_audit_option(each)
        add_operator_options(each, run)


@operator_command
@audited("purge")
def run_purge(args: argparse.Namespace, action: audit.Action) -> int:
    target, queue = confirmed_queue(args)
    before = queue_depth(target.sqs, queue.url)
    action.gate(queues=(queue.url,), selection_size=before.total)
    result = purge(target.sqs, queue, before)
    depth = result.before
    line = (
        f"purged {queue.name}: about {plural(result.purged, 'message')} ({depth.visible} "
        f"visible, {depth.in_flight} in flight, {depth.delayed} delayed); SQS removes them "
        f"within {PURGE_INTERVAL_SECONDS} seconds"
    )
    report_tally(
        args, action, purge_json(result), lambda: make_console().print(line, soft_wrap=True)
    )
    return EXIT_OK


def purge_json(result: PurgeResult) -> dict[str, Any]:
    return {"queue": result.queue, "purged": result.purged, "before": asdict(result.before)}


@operator_command
@audited("delete")
def run_delete(args: argparse.Namespace, action: audit.Action) -> int:
    target, queue = confirmed_queue(args)
    request = DeleteRequest(
        source=queue,
        selector=selector_from(args),
        limit=args.limit,
        hide_seconds=args.hide_seconds,
        wait_seconds=args.wait_seconds,
        reserve=args.reserve,
    )
    shutdown = Shutdown(audit=action)
    # Refuses a spent budget, or a receive that would move a message earlier runs saw.
    deleter = Deleter(target.sqs, request, stop=shutdown.stop, memory=ReceiveMemory.local())
    approximate = queue_depth(target.sqs, queue.url).visible
    action.gate(queues=(queue.url,), selection_size=approximate)
    json, human = partial(delete_json, queue), partial(_print, queue)
    report: TallyReport[DeleteTally] = TallyReport(args, action, shutdown, json, human)
    tally = report.run(
        deleter.run,
        (f"deleting from {queue.name}", approximate, lambda tally: tally.seen),
        lambda: (deleter.tally(), None),
        lambda: hidden_until_text(len(deleter.receiving.handles), deleter.receiving.hidden_until),
        grows=True,
    )
    action.leftover(hidden_until_text(tally.not_released, tally.hidden_until))
    if tally.stopped:
        note(tally.stopped)
    report(tally)
    if shutdown.code is not None:
        return shutdown.code
    return EXIT_FAILED if tally.failed or tally.stopped else EXIT_OK


def delete_json(queue: QueueInfo, tally: DeleteTally) -> dict[str, Any]:
    return {"queue": queue.url, **asdict(tally), "adds_up": tally.adds_up}


def _print(queue: QueueInfo, tally: DeleteTally) -> None:
    console = make_console()
    console.print(f"{queue.name}: deleted what the selection took")
    rows: list[TallyRow] = [
        ("deleted", tally.deleted),
        ("skipped (not selected, given back)", tally.skipped),
        ("failed (still in the queue)", tally.failed),
        ("seen (received)", tally.seen),
    ]
    console.print(count_table("messages", rows))
    if tally.not_released:
        console.print(hidden_until_text(tally.not_released, tally.hidden_until))
    if tally.failed:
        console.print("failed messages come back when their hide time ends: rerun to retry")
