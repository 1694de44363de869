"""`dlq-replay audit`: the audit trail, newest first (docs/operator-audit.md). A record's text
comes from whoever could run a command: it is shown through `visible`, as plain `Text`, so no
recorded value can move the cursor, recolour, retitle or reorder what the next operator reads."""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from dlq_replay import audit
from dlq_replay.cli import followed as reading
from dlq_replay.cli.auditing import add_audit_option, open_store, unshared_text
from dlq_replay.cli.deployment import add_json_option
from dlq_replay.cli.errors import EXIT_OK, EXIT_USAGE, CommandError, operator_command
from dlq_replay.cli.options import add_aws_options
from dlq_replay.cli.output import make_console, note, print_json
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.cli.shutdown import exit_with_on_signal
from dlq_replay.core.queues import arn_resource, queue_name
from dlq_replay.follow.tag import valid_action_id
from dlq_replay.ops.select import parse_duration

if TYPE_CHECKING:
    from rich.text import Text

# The counts of a tally worth a column, in this order (redrive, import, delete, purge).
_TALLY_COUNTS = ("moved", "sent", "deleted", "purged", "failed", "skipped", "seen", "read")
# How many of the trail's newest actions `--follow` looks through to say why an id has no move.
_LOOKUP = 500


def since_time(text: str) -> datetime:
    """argparse type: a duration back from now or an ISO date or time (UTC unless it says)."""
    with contextlib.suppress(ValueError):
        return datetime.now(UTC) - timedelta(seconds=parse_duration(text))
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
    parser.add_argument(
        "--follow",
        type=action_id_type,
        metavar="ACTION_ID",
        help="wait for the move (redrive, import) ACTION_ID to settle, printing its copies "
        "that come back; exit 0 settled with none back, 1 settled with some, 130 stopped, "
        "2 no such move followed",
    )
    parser.add_argument(
        "--poll-seconds",
        type=poll_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how often --follow reads the move, from 0.1 to 300",
    )
    add_audit_option(parser)
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_audit)


def action_id_type(text: str) -> str:
    """argparse type: an action id as `redrive` and `import` print it."""
    if not valid_action_id(text):
        shown = repr(text) if len(text) <= 80 else repr(text[:80]) + "..."
        raise argparse.ArgumentTypeError(
            f"not an action id (as redrive and import print it): {visible(shown)}"
        )
    return text


def poll_seconds(text: str) -> float:
    """argparse type: seconds between two reads of a followed move, 0.1 to 300."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.1 <= value <= 300:
        raise argparse.ArgumentTypeError(f"must be seconds from 0.1 to 300, got {text[:40]!r}")
    return value


@operator_command
def run_audit(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.follow:
        return follow_move(args, store)
    since = audit.utc_text(args.since) if args.since else None
    actions = store.actions(since=since, limit=args.limit)
    follows = reading.follows_of(store.follow_store(), actions)
    now = time.time()
    if args.json:
        print_json(
            {
                "where": store.where,
                "shared": store.shared,
                "actions": [reading.followed_json(action, follows, now) for action in actions],
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
    followed = reading.followed_cells(actions, follows, now)
    title = f"audit trail: {store.where}, newest first"
    # The column when a listed move was followed; else one line says none was (a table of
    # pauses, or of native moves only, keeps its width for what it has).
    console.print(actions_table(actions, title, followed if follows else None))
    if followed and not follows:
        console.print(_text(reading.none_followed_text(len(followed))), soft_wrap=True)
    return EXIT_OK


def follow_move(args: argparse.Namespace, store: audit.AuditStore) -> int:
    """`audit --follow ID`: the move's returns as they come, until it settles or a signal
    stops the wait (exit 130, whichever signal: the move itself goes on)."""
    follows = store.follow_store()
    first = follows.follow(args.follow)
    if first is None:
        raise CommandError(not_followed_text(args.follow, store), EXIT_USAGE)
    say = note if args.json else functools.partial(print, flush=True)
    watch = reading.MoveWatch(
        lambda: follows.follow(args.follow), first, say=say, poll_seconds=args.poll_seconds
    )
    try:
        say(visible(reading.start_line(first, time.time())))
        settled: float | None = watch.run()
        exit_with_on_signal(reading.exit_code(watch.last, settled))  # a signal changes nothing
    except KeyboardInterrupt:  # the shutdown's `Interrupted`, SIGINT, SIGTERM or SIGHUP
        exit_with_on_signal(reading.STOPPED)  # nor does a second one
        settled = None
    now = time.time()
    if args.json:
        print_json(
            {
                "action_id": args.follow,
                "where": store.where,
                "outcome": "stopped" if settled is None else "settled",
                "followed": watch.last.to_json(now),
            }
        )
    else:
        print(reading.end_line(watch.last, settled, now), flush=True)
    return reading.exit_code(watch.last, settled)


def not_followed_text(action_id: str, store: audit.AuditStore) -> str:
    """Why there is nothing to follow: what the trail's newest actions say `action_id` was."""
    try:
        known = {a.record.action_id: a for a in store.actions(limit=_LOOKUP)}.get(action_id)
    except Exception:  # the reason below stands without it
        known = None
    where = f"beside {store.where}"
    if known is None:
        return f"no move {action_id} is followed {where} (a redrive or import prints its id)"
    command = known.record.command
    if command not in reading.MOVE_COMMANDS:
        return f"action {action_id} is a {command}, not a move: it sends no copy to follow"
    return (
        f"action {action_id} ({command}) is not followed: a native redrive cannot carry its "
        "id (redrive with --client-side to follow the copies)"
    )


def actions_table(
    actions: list[audit.AuditAction], title: str, followed: Mapping[str, str] | None = None
) -> Any:
    """The trail as a table; `followed`: the moves' `followed` cells by action id, if shown."""
    from rich.table import Table

    table = Table(title=_text(title), title_justify="left")
    columns = ["started (UTC)", "command", "from", "who", "what", "size", "result"]
    for column in columns + (["followed"] if followed is not None else []):
        table.add_column(column, overflow="fold")
    for action in actions:
        record, end = action.record, action.end
        size = end.selection_size if end else None
        cells = [
            record.started_at.replace("T", " ")[:19],
            record.command,
            str(record.origin),
            who_text(record.identity),
            what_text(record, end),
            "" if size is None else str(size),
            result_text(action),
        ]
        if followed is not None:
            cells.append(followed.get(record.action_id, ""))
        table.add_row(*map(_text, cells))
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
    return ",".join(str(item) for item in value) if isinstance(value, list) else str(value)


def result_text(action: audit.AuditAction) -> str:
    end, outcome = action.end, action.outcome_text
    if end is None:
        return outcome
    parts = [f"{outcome} (abandoned: {end.abandoned})" if end.abandoned else outcome]
    tally = end.tally or {}
    counts = [
        f"{name} {tally[name]}"
        for name in _TALLY_COUNTS
        if isinstance(tally.get(name), int) and not isinstance(tally.get(name), bool)
    ]
    if counts:
        parts.append(", ".join(counts))
    parts += [text for text in (end.error, end.left) if text]
    return ": ".join(parts)
