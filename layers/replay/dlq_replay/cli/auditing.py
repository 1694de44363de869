"""The audit trail around the commands that move, delete, edit or pause: `@audited("name")` on
a command's run function records it (docs/operator-audit.md), `gate()` before its first change,
`audit_tally()` with its result.

The console calls the same run functions: it sets `args.origin = "console"` (the CLI's is
`cli`). Where the trail is kept: `--audit-table NAME` or DLQ_REPLAY_AUDIT_TABLE, else the table
of `--stack` (its AuditTableName output), else a JSON Lines file on this machine, with a warning
that no other operator sees it. A dry run changes nothing and is not recorded.
"""

from __future__ import annotations

import argparse
import enum
import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
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
_RECORDER = "_audit"
# Options that say how to reach AWS or how to print, not what the action does.
_NOT_THE_REQUEST = frozenset(
    {"run", "json", "command", "origin", "audit_table", "profile", "poll_seconds", "timeout"}
)


def add_audit_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--audit-table",
        metavar="NAME",
        help="the DynamoDB table of the audit trail (default: DLQ_REPLAY_AUDIT_TABLE, else the "
        "stack's AuditTableName output, else a file on this machine: docs/operator-audit.md)",
    )


def origin_of(args: argparse.Namespace) -> audit.Origin:
    return audit.Origin(getattr(args, "origin", None) or audit.Origin.CLI)


def open_store(args: argparse.Namespace) -> audit.AuditStore:
    """The trail of this command's deployment (see the module's docstring)."""
    table = getattr(args, "audit_table", None) or os.environ.get(TABLE_VARIABLE)
    if not table and getattr(args, "stack", None):
        outputs = stack_outputs(clients.make_client(args, "cloudformation"), args.stack)
        table = next((outputs[name] for name in TABLE_OUTPUTS if outputs.get(name)), None)
    if table:
        return audit.DynamoAuditStore(clients.make_client(args, "dynamodb"), table)
    return audit.FileAuditStore()


def unshared_text(args: argparse.Namespace, store: audit.AuditStore) -> str:
    why = (
        f"stack {args.stack} has no {TABLE_OUTPUTS[0]} output (update it)"
        if getattr(args, "stack", None)
        else "pass --stack NAME or --audit-table NAME"
    )
    return f"audit: recorded in {store.where}, which no other operator sees ({why})"


def describe(error: BaseException) -> str:
    """The one line the CLI would print for the error."""
    if isinstance(error, (ClientError, BotoCoreError)):
        return one_line(error)[0]
    if isinstance(error, KeyboardInterrupt):
        return str(error.args[0]) if error.args else "interrupted"
    text = " ".join(str(error).split())
    return text if isinstance(error, CommandError) else f"{type(error).__name__}: {text}"


def request_of(args: argparse.Namespace) -> dict[str, Any]:
    """The options as given, for the begin record: what was asked for, not how to connect."""
    return {
        name: _plain(value)
        for name, value in sorted(vars(args).items())
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
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    for text in ("expression", "pattern"):  # a compiled JMESPath expression, a re.Pattern
        if isinstance(getattr(value, text, None), str):
            return getattr(value, text)
    if hasattr(value, "name") and hasattr(value, "value"):  # --where NAME=VALUE
        return f"{value.name}={value.value}"
    return str(value)


def _identifier(args: argparse.Namespace) -> Callable[[], audit.Identity]:
    """Who the caller is, asked later on the audit's thread. The STS client is made here, on
    the command's thread and before any other: botocore's shared data (endpoints, defaults) is
    then loaded once, where two threads making their first clients at once both load it."""
    try:
        sts = clients.make_client(args, "sts")
    except Exception as error:  # the reason is recorded; the command fails on its own, if at all
        reason = describe(error)
        return lambda: audit.Identity.unknown(reason)
    return lambda: audit.caller_identity(sts)


def _changes(args: argparse.Namespace) -> bool:
    return not getattr(args, "dry_run", False)


def audited(
    command: str | None = None, *, changes: Callable[[argparse.Namespace], bool] = _changes
) -> Callable[[Run], Run]:
    """Record every run of `command` (default: `args.command`) in the audit trail, when it
    `changes` something (default: not a dry run). The begin is written in the background from
    the start; the run must call `gate(args)` before its first change."""

    def wrap(run: Run) -> Run:
        @functools.wraps(run)
        def wrapper(args: argparse.Namespace) -> int:
            if not changes(args):
                return run(args)
            aws_session(args)  # one session, made here, before the threads share it
            recorder = audit.Recorder(
                command or str(args.command),
                origin_of(args),
                request_of(args),
                open_store=lambda: open_store(args),
                identify=_identifier(args),
                describe=describe,
            )
            setattr(args, _RECORDER, recorder)
            recorder.start()
            try:
                code = run(args)
            except audit.AuditError as refused:
                raise CommandError(f"audit: {refused}", EXIT_USAGE) from None
            except BaseException as error:
                _warn(recorder.finish(None, error))
                raise
            _warn(recorder.finish(code))
            return code

        return wrapper

    return wrap


def _warn(problem: str | None) -> None:
    if problem:
        note(f"audit: {problem}")


def gate(
    args: argparse.Namespace, *, queues: tuple[str, ...] = (), selection_size: int | None = None
) -> None:
    """Before the action's first change: wait until its begin record is written (the action
    is refused when it could not be), with what it works on for the end record."""
    recorder = recorder_of(args)
    if recorder is None:
        return
    recorder.note(queues=queues, selection_size=selection_size)
    recorder.gate()
    if recorder.store is not None and not recorder.store.shared:
        note(unshared_text(args, recorder.store))


def audit_tally(args: argparse.Namespace, tally: Mapping[str, Any]) -> None:
    """The action's final tally, for its end record."""
    recorder = recorder_of(args)
    if recorder is not None:
        recorder.tally(tally)


def recorder_of(args: argparse.Namespace) -> audit.Recorder | None:
    """The audit of the run `args` went through (its `begin.action_id`, `failure`, `waited`),
    for the console to link an action to its records; None when it was not recorded."""
    found: audit.Recorder | None = getattr(args, _RECORDER, None)
    return found
