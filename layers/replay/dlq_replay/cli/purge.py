"""`dlq-replay purge`: PurgeQueue on one queue, behind its name typed back (`--confirm`)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, audited
from dlq_replay.cli.deployment import Target, add_operator_options, resolve_target
from dlq_replay.cli.errors import EXIT_OK, EXIT_USAGE, CommandError, operator_command
from dlq_replay.cli.output import make_console, plural, report_tally
from dlq_replay.cli.parsing import Subparsers
from dlq_replay.ops.deleting import PURGE_INTERVAL_SECONDS, PurgeResult, depth_before_purge, purge
from dlq_replay.ops.queueinfo import QueueInfo, queue_info


def add_confirm_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--confirm",
        required=True,
        metavar="NAME",
        help=f"the name of the queue, typed back (the last part of its URL): {what} only when "
        "it is the queue's name",
    )


def check_confirmed(confirm: str, queue: QueueInfo) -> None:
    """A usage error unless `confirm` (--confirm, or the console's field) is the queue's own
    name (what a type-to-confirm sends)."""
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
    parser = subparsers.add_parser(
        "purge",
        description="Delete every message of QUEUE with SQS's PurgeQueue: visible, in flight "
        f"and delayed ones, within {PURGE_INTERVAL_SECONDS} seconds, for good (no archive: "
        "`dlq-replay export` first to keep them). Asks for the queue's name typed back with "
        f"--confirm. SQS allows one purge of a queue every {PURGE_INTERVAL_SECONDS} seconds. "
        "Recorded in the audit trail (docs/operator-audit.md).",
    )
    parser.add_argument("queue", metavar="QUEUE", help="main, dlq, operator, or a queue URL")
    add_confirm_option(parser, "purges")
    add_audit_option(parser)
    add_operator_options(parser, run_purge)


@operator_command
@audited("purge")
def run_purge(args: argparse.Namespace, action: audit.Action) -> int:
    target, queue = confirmed_queue(args)
    before = depth_before_purge(target.sqs, queue)
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
