"""`dlq-replay import`: send the records of an `export` archive (edited or not) to a queue,
resumably."""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace
from functools import partial

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, audited
from dlq_replay.cli.deployment import (
    add_count_attribute_option,
    add_operator_options,
    resolve_target,
)
from dlq_replay.cli.errors import EXIT_FAILED, EXIT_OK, CommandError, file_error, operator_command
from dlq_replay.cli.output import (
    TallyReport,
    TallyRow,
    count_table,
    destination_name,
    make_console,
    note,
    plural,
)
from dlq_replay.cli.pace_options import add_pace_options, pace_line, stop_text, until_failing_from
from dlq_replay.cli.parsing import Subparsers, readable_file
from dlq_replay.cli.shutdown import Shutdown
from dlq_replay.ops.importing import Importer, ImportRequest, ImportTally
from dlq_replay.ops.queueinfo import queue_info


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "import",
        description="Send each record of PATH (an `export` archive, edited or not) with "
        "SendMessageBatch, 10 a request, in file order: body and every attribute byte for "
        "byte (Binary from base64), the group id kept; on a FIFO queue the deduplication id "
        "is <message_id>-import, so a rerun within 5 minutes is deduplicated by SQS. The ids "
        "sent are appended to PATH.progress after each request; a rerun skips them, so an "
        "interrupted or partly failed import is run again as it was. A line that is not a "
        "record counts as failed, with its line number. Exit 1 if any record failed.",
    )
    parser.add_argument("path", type=readable_file, metavar="PATH", help="the archive to read")
    parser.add_argument(
        "--to",
        dest="destination",
        required=True,
        metavar="QUEUE",
        help="main, operator, dlq, source (each record's source_arn: the queue SQS "
        "dead-lettered it from; a record without one fails), or a queue URL",
    )
    parser.add_argument(
        "--reset-count",
        action="store_true",
        help="start the replay count again (leave the count attribute out)",
    )
    add_count_attribute_option(parser)
    add_pace_options(parser)
    add_audit_option(parser)
    add_operator_options(parser, run_import)


@operator_command
@audited("import")
def run_import(args: argparse.Namespace, action: audit.Action) -> int:
    target = resolve_target(args)
    destination = (
        None
        if args.destination == "source"
        else queue_info(target.sqs, target.queue(args.destination, "--to"))
    )
    request = ImportRequest(
        path=args.path,
        destination=destination,
        reset_count=args.reset_count,
        count_attribute=target.count_attribute() if args.reset_count else "",
        rate=args.rate,
        until_failing=until_failing_from(args, target, None, destination),
    )
    shutdown = Shutdown(audit=action)
    action.gate(queues=(request.destination.url if request.destination else "source",))
    # Each copy carries the action's id, its counts go beside the trail.
    follower = action.follower(target.sqs, [destination])
    if follower is not None:
        request = replace(request, follow_id=follower.action_id)
    json, human = partial(_import_json, request, shutdown), partial(_print_import, request)
    report: TallyReport[ImportTally] = TallyReport(args, action, shutdown, json, human, follower)
    try:
        importer = Importer(target.sqs, request, stop=shutdown.stop, follower=follower)
        tally = report.run(
            importer.run,
            (f"importing into {destination_name(destination)}", 0, lambda tally: tally.read),
            lambda: (importer.tally(), None),
            lambda: _left_text(request, importer.sent, importer.sending),
            sent_to=importer.source_urls,
        )
    except OSError as error:
        raise CommandError(file_error(error, "rerun to continue")) from None
    if tally.stopped:
        note(stop_text(tally.stopped))
    action.leftover(_left_text(request, tally.sent))
    report(tally)
    if follower is not None and follower.problem:
        note(f"follow: {follower.problem}")
    if shutdown.code is not None:
        note(
            f"{shutdown.name}: import stopped early after {plural(tally.sent, 'record')} sent; "
            f"rerun to continue ({request.progress_path} lists what was sent)"
        )
        return shutdown.code
    return EXIT_FAILED if tally.failed or tally.stopped else EXIT_OK


def _left_text(request: ImportRequest, sent: int, sending: int = 0) -> str:
    unconfirmed = (
        f"; {plural(sending, 'record')} were being sent, unconfirmed (a rerun may send them again)"
        if sending
        else ""
    )
    listed = f"{plural(sent, 'record')} sent and listed in {request.progress_path}"
    return f"{listed}{unconfirmed}; rerun to continue"


def _import_json(
    request: ImportRequest, shutdown: Shutdown, tally: ImportTally
) -> dict[str, object]:
    return {
        "destination": request.destination.url if request.destination else "source",
        "progress_file": str(request.progress_path),
        **asdict(tally),
        "stopped": stop_text(tally.stopped) if tally.stopped else None,
        "interrupted": shutdown.name or None,
        "adds_up": tally.adds_up,
    }


def _print_import(request: ImportRequest, tally: ImportTally) -> None:
    console = make_console()
    console.print(f"{request.path} -> {destination_name(request.destination)}")
    rows: list[TallyRow] = [
        ("sent", tally.sent),
        ("skipped", tally.skipped),
        tally.skips,
        ("failed", tally.failed),
        *([("being sent, unconfirmed (abandoned)", tally.unsettled)] if tally.unsettled else []),
        ("read", tally.read),
    ]
    console.print(count_table("records", rows))
    for failure in tally.failures:
        console.print(
            f"failed: line {failure.line}"
            + (f" ({failure.message_id})" if failure.message_id else "")
            + f": {failure.reason}"
        )
    if tally.pace is not None:
        console.print(pace_line(tally.pace))
    if tally.failed or tally.stopped:
        console.print(f"fix or wait, then rerun: {request.progress_path} lists what was sent")
