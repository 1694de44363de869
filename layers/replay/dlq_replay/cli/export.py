"""`dlq-replay export`: parked messages to a JSON Lines archive (a file and/or S3), the first
half of fixing messages by hand (export, edit with jq, `import`)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from functools import partial
from pathlib import Path

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, audited
from dlq_replay.cli.deployment import (
    add_operator_options,
    add_receive_options,
    make_client,
    resolve_target,
)
from dlq_replay.cli.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    file_error,
    operator_command,
)
from dlq_replay.cli.options import BUDGET_HELP
from dlq_replay.cli.output import (
    TallyReport,
    TallyRow,
    count_table,
    make_console,
    note,
    plural,
)
from dlq_replay.cli.parsing import Subparsers, checked, int_between
from dlq_replay.cli.selection import add_selection_options, selector_from
from dlq_replay.cli.shutdown import Shutdown, hidden_at_most_text, hidden_until_text
from dlq_replay.ops.archive import FORMAT
from dlq_replay.ops.export import (
    Export,
    ExportLeftover,
    ExportPhase,
    ExportRequest,
    ExportResult,
)
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.s3archive import S3Location


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "export",
        description=f"Receive the messages of QUEUE and write them to a JSON Lines archive "
        f"({FORMAT}: one message a line, body and every attribute; for the reader also its "
        "kind, target and the service's error), a local file and/or an S3 object. An "
        "existing archive is continued, never overwritten: an interrupted export is rerun "
        "with the same --file or --s3-uri. Without --delete every message is made visible "
        "again once the archive is complete; with --delete the exported ones are deleted "
        "only then. " + BUDGET_HELP + " Details and the record format: "
        "docs/operator-fix.md.",
    )
    parser.add_argument("queue", metavar="QUEUE", help="main, dlq, operator, or a queue URL")
    parser.add_argument(
        "--file",
        type=Path,
        metavar="PATH",
        help="the archive to write, or to continue when it exists",
    )
    parser.add_argument(
        "--s3-uri",
        type=checked(S3Location.parse, "s3_uri"),
        metavar="s3://BUCKET/KEY",
        help="also (or, without --file, only) PUT the archive to this S3 object",
    )
    parser.add_argument(
        "--limit", type=int_between(1, 1_000_000), metavar="N", help="export at most N messages"
    )
    parser.add_argument(
        "--delete",
        action="store_true",
        help="delete the exported messages once the archive is written, fsync'ed (and "
        "uploaded); otherwise they stay in the queue",
    )
    parser.add_argument(
        "--hide-seconds",
        type=int_between(1, 43_200),
        default=120,
        metavar="SECONDS",
        help="visibility timeout of received messages while the export runs; after a crash "
        "they come back by themselves after this long",
    )
    add_selection_options(parser)
    add_receive_options(parser, count_attribute=False)
    add_audit_option(parser)
    add_operator_options(parser, run_export)


@operator_command
@audited("export", changes=lambda args: bool(args.delete))  # --delete deletes what it exported
def run_export(args: argparse.Namespace, action: audit.Action) -> int:
    if args.file is None and args.s3_uri is None:
        raise CommandError(
            "name the archive: --file PATH and/or --s3-uri s3://BUCKET/KEY", EXIT_USAGE
        )
    target = resolve_target(args)
    source = queue_info(target.sqs, target.queue(args.queue, "QUEUE"))
    request = ExportRequest(
        source=source,
        path=args.file,
        s3=args.s3_uri,
        limit=args.limit,
        selector=selector_from(args),
        delete=args.delete,
        hide_seconds=args.hide_seconds,
        wait_seconds=args.wait_seconds,
        reserve=args.reserve,
        replay_targets=target.replay_targets(),
        accepted_kinds=target.accepted_kinds(),
    )
    s3 = make_client(args, "s3") if args.s3_uri is not None else None
    action.gate(queues=(source.url,))
    shutdown = Shutdown(audit=action)
    try:
        job = Export(target.sqs, request, s3=s3, stop=shutdown.stop, memory=ReceiveMemory.local())
    except OSError as error:
        raise CommandError(file_error(error, "nothing was received")) from None
    if job.archived and not args.json:
        note(f"continuing {_places(request)}: {plural(len(job.archived), 'record')} in it")
    approximate = job.expected or 0  # visible and in flight before the read
    total = min(approximate, args.limit) if args.limit else approximate
    json, human = partial(_export_json, source, shutdown), partial(_print_export, request)
    report: TallyReport[ExportResult] = TallyReport(args, action, shutdown, json, human)
    try:
        result = report.run(
            job.run,
            (f"exporting {source.name}", total, lambda result: result.examined),
            lambda: (job.result(), job.leftover()),
            lambda: _export_leftover(job.leftover(), request),
        )
    except OSError as error:
        raise CommandError(file_error(error, "nothing was deleted")) from None
    if result.stopped:
        about = f" of about {result.expected}" if result.expected is not None else ""
        note(f"{result.stopped} (partial: {plural(result.examined, 'message')}{about} read)")
    if shutdown.code is not None:
        action.leftover(_export_interrupted(result, request, shutdown))
    report(result)
    if shutdown.code is not None:
        note(_export_interrupted(result, request, shutdown))
        return shutdown.code
    return EXIT_FAILED if result.failed or result.not_deleted or result.stopped else EXIT_OK


def _export_json(source: QueueInfo, shutdown: Shutdown, result: ExportResult) -> dict[str, object]:
    return {
        "queue": source.url,
        **asdict(result),
        "interrupted": shutdown.name or None,
        "adds_up": result.adds_up,
    }


def _places(request: ExportRequest) -> str:
    return " and ".join(str(p) for p in (request.path, request.s3) if p is not None)


def _rerun(request: ExportRequest) -> str:
    option = f"--file {request.path}" if request.path is not None else f"--s3-uri {request.s3}"
    return f"rerun with the same {option} to continue the same archive"


def _export_interrupted(result: ExportResult, request: ExportRequest, shutdown: Shutdown) -> str:
    """The line after a graceful stop: what exists only in the archive, and where."""
    only = (
        f"{plural(result.deleted, 'message')} deleted from the queue exist only in the archive "
        f"{_places(request)}"
        if request.delete
        else f"nothing was deleted; the archive {_places(request)} holds "
        f"{plural(result.exported + result.already_archived, 'message')} still in the queue"
    )
    back = hidden_until_text(result.not_released, result.hidden_until)
    return f"{shutdown.name}: export stopped early: {only}; {back}; {_rerun(request)}"


def _export_leftover(left: ExportLeftover, request: ExportRequest) -> str:
    """The line when the export is abandoned mid-flight."""
    hidden = hidden_at_most_text(left)
    if left.phase is ExportPhase.RECEIVING:
        part = f" ({request.path}.part is incomplete)" if request.path is not None else ""
        return f"nothing was deleted{part}; {hidden}; {_rerun(request)}"
    deleted = (
        f"{plural(left.deleted, 'message')} deleted so far exist only in the archive "
        f"{_places(request)} ({plural(left.archived, 'record')}, complete)"
        if request.delete
        else f"the archive {_places(request)} is complete; nothing was deleted"
    )
    return f"{deleted}; {hidden}; {_rerun(request)}"


def _print_export(request: ExportRequest, result: ExportResult) -> None:
    console = make_console()
    console.print(
        f"{request.source.name} -> {_places(request)}: "
        f"{plural(result.exported, 'message')}, {result.bytes} bytes"
    )
    archived = result.exported + result.already_archived
    kept: list[TallyRow] = (
        [
            ("archived and deleted", result.deleted),
            ("archived, not deleted (still in the queue)", archived - result.deleted),
        ]
        if request.delete
        else [("archived (still in the queue)", archived)]
    )
    rows: list[TallyRow] = [
        *kept,
        ("  of which already in the archive", result.already_archived),
        ("filtered out (given back)", result.filtered),
        ("failed (given back)", result.failed),
        result.failures,
        ("examined (received)", result.examined),
    ]
    console.print(count_table("messages", rows))
    if result.not_released:
        console.print(hidden_until_text(result.not_released, result.hidden_until))
