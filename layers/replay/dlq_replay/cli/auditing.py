"""The audit trail around the commands that move, delete, edit or pause (docs/operator-audit.md):
`@audited("name")` hands the run function its `audit.Action`. The trail: the --audit-table,
DLQ_REPLAY_AUDIT_TABLE, the --stack's table, else a file on this machine (with a warning that
no other operator sees it). A dry run is not recorded."""

from __future__ import annotations

import argparse
import enum
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay import audit

# `clients.make_client` is looked up at call time: the tests hand the command emulator clients.
from dlq_replay.cli import deployment as clients
from dlq_replay.cli.errors import EXIT_USAGE, CommandError, one_line
from dlq_replay.cli.options import aws_session
from dlq_replay.cli.output import note
from dlq_replay.cli.parsing import Run
from dlq_replay.ops.stack import stack_outputs

TABLE_VARIABLE = "DLQ_REPLAY_AUDIT_TABLE"
# Stack outputs naming the table, in order: older stacks have the second only with the breaker.
TABLE_OUTPUTS = ("AuditTableName", "OutageBreakerTableName")
# Options that say how to reach AWS or how to print, not what the action does.
_NOT_THE_REQUEST = frozenset(
    {"run", "json", "command", "origin", "audit_table", "profile", "poll_seconds", "timeout"}
)
# A run function that holds its audit.
AuditedRun = Callable[[argparse.Namespace, audit.Action], int]


def add_audit_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--audit-table",
        metavar="NAME",
        help="the DynamoDB table of the audit trail (default: DLQ_REPLAY_AUDIT_TABLE, else the "
        "stack's AuditTableName output, else a file on this machine: docs/operator-audit.md)",
    )


def store_of(
    table: str | None, stack: str | None, client: Callable[[str], Any]
) -> audit.AuditStore:
    """The trail: `trail_table`'s table, else the file."""
    outputs = (lambda: stack_outputs(client("cloudformation"), stack)) if stack else None
    table = trail_table(table, outputs)
    if table:
        return audit.DynamoAuditStore(client("dynamodb"), table)
    return audit.FileAuditStore()


def trail_table(table: str | None, outputs: Callable[[], Mapping[str, str]] | None) -> str | None:
    """The trail's table (the worker's follow counts go there too): `table`, else
    DLQ_REPLAY_AUDIT_TABLE, else the stack's output (`outputs()` reads them); None for none."""
    table = table or os.environ.get(TABLE_VARIABLE)
    if not table and outputs is not None:
        found = outputs()
        table = next((found[name] for name in TABLE_OUTPUTS if found.get(name)), None)
    return table or None


def open_store(args: argparse.Namespace) -> audit.AuditStore:
    return store_of(
        getattr(args, "audit_table", None),
        getattr(args, "stack", None),
        lambda service: clients.make_client(args, service),
    )


def unshared_text(stack: str | None, store: audit.AuditStore) -> str:
    why = (
        f"stack {stack} has no {TABLE_OUTPUTS[0]} output (update it)"
        if stack
        else "pass --stack NAME or --audit-table NAME"
    )
    return f"audit: recorded in {store.where}, which no other operator sees ({why})"


def describe(error: BaseException) -> str:
    if isinstance(error, (ClientError, BotoCoreError)):
        return one_line(error)[0]
    if isinstance(error, KeyboardInterrupt):
        return str(error.args[0]) if error.args else "interrupted"
    text = " ".join(str(error).split())
    return text if isinstance(error, CommandError) else f"{type(error).__name__}: {text}"


def request_from(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options given, for the begin record: what was asked for, not how to connect or print."""
    return {
        name: _plain(value)
        for name, value in sorted(options.items())
        if not name.startswith("_")
        and name not in _NOT_THE_REQUEST
        and value not in (None, False, [], (), "")
    }


def _plain(value: Any) -> Any:
    """A JSON value for an option's parsed value (paths, compiled patterns, selections)."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    for text in ("expression", "pattern"):  # a compiled JMESPath expression, a re.Pattern
        if isinstance(getattr(value, text, None), str):
            return getattr(value, text)
    if hasattr(value, "name") and hasattr(value, "value"):  # --where NAME=VALUE
        return f"{value.name}={value.value}"
    return str(value)  # a Path, and anything else, as its text


def identifier(sts: Callable[[], Any]) -> Callable[[], audit.Identity]:
    """Who the caller is, asked later on the audit's thread. The STS client is made here, on
    the caller's thread: two threads making their first clients at once both load botocore's."""
    try:
        client = sts()
    except Exception as error:  # the reason is recorded; the command fails on its own, if at all
        reason = describe(error)
        return lambda: audit.Identity.unknown(reason)
    return lambda: audit.caller_identity(client)


def action_of(args: argparse.Namespace, command: str) -> audit.Action:
    """The audit of this command line's run (origin `cli`), not started yet: `with` starts it."""
    aws_session(args)  # one session, made here, before the threads share it
    stack = getattr(args, "stack", None)

    def announce(store: audit.AuditStore) -> None:
        if not store.shared:
            note(unshared_text(stack, store))

    return audit.Action(
        command,
        audit.Origin.CLI,
        request_from(vars(args)),
        open_store=lambda: open_store(args),
        identify=identifier(lambda: clients.make_client(args, "sts")),
        describe=describe,
        announce=announce,
    )


def _changes(args: argparse.Namespace) -> bool:
    return not getattr(args, "dry_run", False)


def audited(
    command: str | None = None, *, changes: Callable[[argparse.Namespace], bool] = _changes
) -> Callable[[AuditedRun], Run]:
    """Record every run of `command` (default: `args.command`) that `changes` something: a
    begin that could not be written stops the run at its `gate` (one line, exit 2)."""

    def wrap(run: AuditedRun) -> Run:
        @functools.wraps(run)
        def wrapper(args: argparse.Namespace) -> int:
            name = command or str(args.command)
            if not changes(args):
                return run(args, audit.Action.unrecorded(name))
            action = action_of(args, name)
            try:
                with action:
                    return action.ended(run(args, action))
            except audit.AuditError as refused:
                raise CommandError(f"audit: {refused}", EXIT_USAGE) from None
            finally:
                if action.problem:
                    note(f"audit: {action.problem}")

        return wrapper

    return wrap
