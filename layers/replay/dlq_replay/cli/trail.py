"""`dlq-replay audit`: the audit trail, newest first (docs/operator-audit.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, open_store, unshared_text
from dlq_replay.cli.deployment import add_json_option
from dlq_replay.cli.errors import EXIT_OK, operator_command
from dlq_replay.cli.options import add_aws_options
from dlq_replay.cli.output import make_console, note, print_json
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.ops.select import parse_duration

# The counts of a tally worth a column, in this order (redrive, import, delete, purge).
_TALLY_COUNTS = ("moved", "sent", "deleted", "purged", "failed", "skipped", "seen", "read")


def since_time(text: str) -> datetime:
    """argparse type: a duration back from now (90s, 15m, 2h, 3d) or an ISO date or time (UTC
    unless it says otherwise)."""
    try:
        return datetime.now(UTC) - timedelta(seconds=parse_duration(text))
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a duration (90s, 15m, 2h, 3d) nor a date or time "
            "(2026-11-28, 2026-11-28T09:30)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "audit",
        description="List the audit trail, newest first: every redrive, import, pause, "
        "resume, purge and delete, from the CLI or the console, with who ran it (as STS "
        "named the caller), what it was asked to do, when, and how it ended (its tally or "
        "its error). An action without an end record is still running, or its process was "
        "killed. The trail is the stack's DynamoDB table (--stack, --audit-table); without "
        "one, this machine's file. Details: docs/operator-audit.md.",
    )
    parser.add_argument(
        "--since",
        type=since_time,
        metavar="WHEN",
        help="only actions started since WHEN: a duration back from now (90s, 15m, 2h, 3d) or "
        "a date or time, UTC unless it says otherwise (2026-11-28, 2026-11-28T09:30)",
    )
    parser.add_argument(
        "--limit",
        type=int_between(1, 10_000),
        default=50,
        metavar="N",
        help="the newest N actions (default 50)",
    )
    parser.add_argument("--stack", metavar="NAME", help="a deployed sqs-dlq-replay stack")
    add_audit_option(parser)
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_audit)


@operator_command
def run_audit(args: argparse.Namespace) -> int:
    store = open_store(args)
    since = audit.utc_text(args.since) if args.since else None
    actions = store.actions(since=since, limit=args.limit)
    if args.json:
        print_json(
            {
                "where": store.where,
                "shared": store.shared,
                "actions": [action.to_json() for action in actions],
            }
        )
        return EXIT_OK
    if not store.shared:
        note(unshared_text(args, store))
    console = make_console()
    if not actions:
        after = f" since {since}" if since else ""
        console.print(f"no actions recorded{after} in {store.where}")
        return EXIT_OK
    console.print(actions_table(actions, f"audit trail: {store.where}, newest first"))
    return EXIT_OK


def actions_table(actions: list[audit.AuditAction], title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in ("started (UTC)", "command", "from", "who", "what", "size", "result"):
        table.add_column(column, overflow="fold")
    for action in actions:
        record = action.record
        end = action.end
        size = end.selection_size if end and end.selection_size is not None else None
        table.add_row(
            record.started_at.replace("T", " ")[:19],
            record.command,
            str(record.origin),
            who_text(record.identity),
            what_text(record, end),
            "" if size is None else str(size),
            result_text(action),
        )
    return table


def who_text(identity: audit.Identity) -> str:
    if not identity.known:
        return f"unknown ({identity.unknown_because})"
    # arn:aws:sts::123456789012:assumed-role/Ops/alice -> assumed-role/Ops/alice (123456789012)
    resource = identity.arn.split(":", 5)[-1]
    return f"{resource} ({identity.account})"


def what_text(record: audit.AuditRecord, end: audit.AuditRecord | None) -> str:
    """The queues it worked on (by name), else the options that named them; then the rest."""
    queues = end.queues if end and end.queues else ()
    parts = [" -> ".join(queue.rsplit("/", 1)[-1] for queue in queues)] if queues else []
    parts += [f"{name}={_short(value)}" for name, value in record.request.items()]
    return " ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def result_text(action: audit.AuditAction) -> str:
    end = action.end
    if end is None:
        return action.outcome_text
    parts = [action.outcome_text]
    counts = tally_counts(end.tally or {})
    if counts:
        parts.append(", ".join(f"{name} {count}" for name, count in counts.items()))
    if end.error:
        parts.append(end.error)
    return ": ".join(parts)


def tally_counts(tally: Mapping[str, Any]) -> dict[str, int]:
    return {
        name: tally[name]
        for name in _TALLY_COUNTS
        if isinstance(tally.get(name), int) and not isinstance(tally.get(name), bool)
    }
