"""`dlq-replay export`: parked messages to a JSON Lines archive (a file and/or S3), the first
half of fixing messages by hand (export, edit with jq, `import`)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from dlq_replay import ops
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
    TallyRow,
    count_table,
    make_console,
    note,
    plural,
    print_json,
    progress_bars,
)
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.cli.selection import add_selection_options, selector_from
from dlq_replay.ops.archive import FORMAT
from dlq_replay.ops.depth import queue_depth


def s3_uri(text: str) -> ops.S3Location:
    """argparse type: s3://BUCKET/KEY."""
    try:
        return ops.S3Location.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "export",
        description=f"Receive the messages of QUEUE and write one JSON object a line "
        f"({FORMAT}): message_id, body, every message attribute (Binary values base64, type "
        "suffixes kept), message_group_id, message_deduplication_id, aws_trace_header, "
        "receive_count and sent_timestamp (epoch ms). The file is written as PATH.part and "
        "renamed to PATH once flushed and fsync'ed; an existing PATH is never overwritten. "
        "With --s3-uri the same lines are then PUT to S3 (after the local file, or alone "
        "through a temporary file). Without --delete every message is made visible again as "
        "soon as the archive is complete; with --delete the exported messages are deleted "
        "only then, and nothing is deleted when writing or uploading fails. Messages not "
        "exported (filtered out, over --limit) are given back as soon as the receiving ends. "
        + BUDGET_HELP,
    )
    parser.add_argument("queue", metavar="QUEUE", help="main, dlq, operator, or a queue URL")
    parser.add_argument(
        "--file", type=Path, metavar="PATH", help="the archive to write (must not exist yet)"
    )
    parser.add_argument(
        "--s3-uri",
        type=s3_uri,
        metavar="s3://BUCKET/KEY",
        help="also (or, without --file, only) PUT the archive to this S3 object",
    )
    parser.add_argument("--limit", type=int_between(1, 1_000_000), help="export at most N messages")
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
        help="visibility timeout of received messages while the export runs; after a crash "
        "they come back by themselves after this long (default 120)",
    )
    add_selection_options(parser)
    add_receive_options(parser, count_attribute=False)
    add_operator_options(parser, run_export)


@operator_command
def run_export(args: argparse.Namespace) -> int:
    if args.file is None and args.s3_uri is None:
        raise CommandError(
            "name the archive: --file PATH and/or --s3-uri s3://BUCKET/KEY", EXIT_USAGE
        )
    target = resolve_target(args)
    source = ops.queue_info(target.sqs, target.queue(args.queue, "QUEUE"))
    request = ops.ExportRequest(
        source=source,
        path=args.file,
        s3=args.s3_uri,
        limit=args.limit,
        selector=selector_from(args),
        delete=args.delete,
        hide_seconds=args.hide_seconds,
        wait_seconds=args.wait_seconds,
        reserve=args.reserve,
    )
    s3 = make_client(args, "s3") if args.s3_uri is not None else None
    approximate = queue_depth(target.sqs, source.url).visible
    total = min(approximate, args.limit) if args.limit else approximate
    try:
        with progress_bars(args) as progress:
            bar = progress.add_task(f"exporting {source.name}", total=total or None)

            def show(result: ops.ExportResult) -> None:
                progress.update(bar, completed=result.examined)

            result = ops.export(target.sqs, request, s3=s3, on_progress=show)
    except OSError as error:
        raise CommandError(file_error(error, "nothing was deleted")) from None
    except KeyboardInterrupt:
        raise KeyboardInterrupt(
            "interrupted: nothing was deleted, the messages are visible again"
        ) from None
    if result.stopped:
        note(result.stopped)
    if args.json:
        print_json({"queue": source.url, **asdict(result), "adds_up": result.adds_up})
    else:
        _print_export(result, request)
    return EXIT_FAILED if result.failed or result.not_deleted or result.stopped else EXIT_OK


def _print_export(result: ops.ExportResult, request: ops.ExportRequest) -> None:
    console = make_console()
    places = [p for p in (result.path, result.s3_uri) if p]
    console.print(
        f"{request.source.name} -> {' and '.join(places)}: "
        f"{plural(result.exported, 'message')}, {result.bytes} bytes"
    )
    kept: list[TallyRow] = (
        [
            ("exported and deleted", result.deleted),
            ("exported, not deleted (still in the queue)", result.not_deleted),
        ]
        if request.delete
        else [("exported (still in the queue)", result.exported)]
    )
    rows: list[TallyRow] = [
        *kept,
        ("filtered out (given back)", result.filtered),
        ("failed (given back)", result.failed),
        result.failures,
        ("examined", result.examined),
    ]
    console.print(count_table("messages", rows))
