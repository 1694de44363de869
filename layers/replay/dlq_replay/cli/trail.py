"""`dlq-replay audit`: the audit trail, newest first (docs/operator-audit.md).

What it prints comes from whoever could run a recorded command: every text from a record is
shown through `visible`, which writes each control character (C0, DEL, C1) and each bidi
control as an escape (`\x1b`, `\u202e`), and rich is given plain `Text` (no markup), so no
recorded value can move the cursor, recolour, retitle or reorder what the next operator reads.
`--json` is exact JSON (its encoder escapes control characters already).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, open_store, unshared_text
from dlq_replay.cli.deployment import add_json_option
from dlq_replay.cli.errors import EXIT_OK, operator_command
from dlq_replay.cli.options import add_aws_options
from dlq_replay.cli.output import make_console, note, print_json
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.core.queues import arn_resource, queue_name
from dlq_replay.ops.select import parse_duration

if TYPE_CHECKING:
    from rich.text import Text

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
        note(visible(unshared_text(args.stack, store)))
    console = make_console()
    if not actions:
        after = f" since {since}" if since else ""
        console.print(_text(f"no actions recorded{after} in {store.where}"))
        return EXIT_OK
    console.print(actions_table(actions, f"audit trail: {store.where}, newest first"))
    return EXIT_OK


def actions_table(actions: list[audit.AuditAction], title: str) -> Any:
    from rich.table import Table

    table = Table(title=_text(title), title_justify="left")
    for column in ("started (UTC)", "command", "from", "who", "what", "size", "result"):
        table.add_column(column, overflow="fold")
    for action in actions:
        record = action.record
        end = action.end
        size = end.selection_size if end and end.selection_size is not None else None
        table.add_row(
            *(
                _text(cell)
                for cell in (
                    record.started_at.replace("T", " ")[:19],
                    record.command,
                    str(record.origin),
                    who_text(record.identity),
                    what_text(record, end),
                    "" if size is None else str(size),
                    result_text(action),
                )
            )
        )
    return table


# What a terminal may act on, besides the printable: C0 (tab and newline included: a cell is
# one line of data), DEL, C1, and the bidi controls that reorder what follows them (embeddings,
# overrides, isolates, the marks, and the line and paragraph separators).
_CONTROLS = frozenset(
    (*range(0x00, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, 0x2028, 0x2029)
) | frozenset((*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
_ESCAPES = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _CONTROLS}


def visible(text: str) -> str:
    """`text` with every control character written as its escape (`\\x1b`, `\\u202e`)."""
    return text.translate(_ESCAPES)


def _text(value: str) -> Text:
    """A recorded value as rich's plain text: escaped (`visible`), never read as markup."""
    from rich.text import Text

    return Text(visible(value))


def who_text(identity: audit.Identity) -> str:
    if not identity.known:
        return f"unknown ({identity.unknown_because})"
    # arn:aws:sts::123456789012:assumed-role/Ops/alice -> assumed-role/Ops/alice (123456789012)
    resource = arn_resource(identity.arn)
    return f"{resource} ({identity.account})"


def what_text(record: audit.AuditRecord, end: audit.AuditRecord | None) -> str:
    """The queues it worked on (by name), else the options that named them; then the rest."""
    queues = end.queues if end and end.queues else ()
    parts = [" -> ".join(queue_name(queue) for queue in queues)] if queues else []
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
    outcome = action.outcome_text
    parts = [f"{outcome} (abandoned: {end.abandoned})" if end.abandoned else outcome]
    counts = tally_counts(end.tally or {})
    if counts:
        parts.append(", ".join(f"{name} {count}" for name, count in counts.items()))
    parts += [text for text in (end.error, end.left) if text]
    return ": ".join(parts)


def tally_counts(tally: Mapping[str, Any]) -> dict[str, int]:
    return {
        name: tally[name]
        for name in _TALLY_COUNTS
        if isinstance(tally.get(name), int) and not isinstance(tally.get(name), bool)
    }
