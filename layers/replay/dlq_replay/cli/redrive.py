"""`dlq-replay redrive`: move messages back, natively or client-side."""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace
from functools import partial
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, audited
from dlq_replay.cli.companion_run import companion_setup, early_companion
from dlq_replay.cli.deployment import (
    add_operator_options,
    add_receive_options,
    resolve_target,
)
from dlq_replay.cli.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    one_line,
    operator_command,
)
from dlq_replay.cli.options import BUDGET_HELP, make_deliverer
from dlq_replay.cli.output import (
    TallyReport,
    destination_name,
    make_console,
    note,
    plural,
    print_json,
    progress_bars,
    report_tally,
)
from dlq_replay.cli.pace_options import add_pace_options, stop_text, until_failing_from
from dlq_replay.cli.parsing import Subparsers, int_between, positive_number
from dlq_replay.cli.prestart import usable_cores
from dlq_replay.cli.redrive_tally import (
    add_target_option,
    mode_text,
    nothing_movable,
    print_tally,
    redrive_json,
    stack_targets_of,
    target_arns_of,
)
from dlq_replay.cli.selection import add_selection_options, selector_from
from dlq_replay.cli.shutdown import Shutdown, interrupted, leftover_text
from dlq_replay.local.answers import ForeignAnswerError
from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.companion import WORTH_IT_FROM, Companion, processes_for
from dlq_replay.ops.queueinfo import preflight
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.redrive import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    MoveMode,
    MoveTask,
    RedriveRequest,
    RedriveTally,
    SkipReason,
    choose_mode,
    start_move_task,
    wait_move_task,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "redrive",
        description="Move messages from the operator queue (or the DLQ) back to the main "
        "queue or to their source queues: with SQS's own StartMessageMoveTask when the source "
        "is a DLQ and nothing is to be rewritten (every attribute kept; --wait follows it), "
        "else client-side in batches of 10, each copy without the park reason (with "
        "--reset-count, without the replay count), its original deleted only once the copy "
        "was sent: an interrupted run loses nothing, a rerun continues (at least once). "
        + BUDGET_HELP
        + " Details: docs/operator-move.md#redrive.",
    )
    parser.add_argument(
        "--from",
        dest="source",
        default="operator",
        metavar="QUEUE",
        help="operator, dlq, or a queue URL (default: operator)",
    )
    parser.add_argument(
        "--to",
        dest="destination",
        default="main",
        metavar="QUEUE",
        help="main, source (each message's source queue, as SQS recorded it when "
        "it moved the message: messages parked by the replay have none and are skipped; a "
        "record a Lambda function or an EventBridge rule wrote goes to its target, with "
        "--target-arn), or a queue URL (default: main)",
    )
    add_target_option(parser)
    parser.add_argument(
        "--limit",
        type=int_between(1, 1_000_000),
        metavar="N",
        help="move at most N messages (client-side)",
    )
    add_pace_options(parser)
    parser.add_argument(
        "--concurrency",
        type=int_between(1, MAX_CONCURRENCY),
        metavar="N",
        help="client-side: batches of 10 in flight at once; --rate still bounds the total "
        f"(default: {DEFAULT_CONCURRENCY}, with --until-failing 1, so no batch waits long "
        "for its turn)",
    )
    parser.add_argument(
        "--processes",
        type=int_between(1, 2),
        metavar="N",
        help="client-side: processes moving at once, each with --concurrency batches; a "
        "second one uses a second CPU core, for a move of everything, unpaced, to SQS queues "
        f"(default: 2 from {WORTH_IT_FROM:,} messages with 2 cores or more, else 1)",
    )
    parser.add_argument(
        "--reset-count",
        action="store_true",
        help="start the replay count again (remove the count attribute)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="copy mode: send the copies and leave the originals where they are (made "
        "visible again when the run ends); client-side. A rerun copies them again",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="count what would move; move nothing"
    )
    parser.add_argument(
        "--wait", action="store_true", help="follow a native move task until it finishes"
    )
    parser.add_argument(
        "--poll-seconds",
        type=positive_number,
        default=5.0,
        metavar="SECONDS",
        help="how often --wait asks SQS",
    )
    parser.add_argument(
        "--client-side",
        action="store_true",
        help="move client-side even where a native move task would do (removes the park reason)",
    )
    parser.add_argument(
        "--hide-seconds",
        type=int_between(1, 43_200),
        default=120,
        metavar="SECONDS",
        help="visibility timeout of received messages: messages not moved stay hidden while "
        "the run lasts and are made visible again when it ends; after a crash they come back "
        "by themselves after this long",
    )
    add_selection_options(parser)
    add_receive_options(parser)
    add_audit_option(parser)
    add_operator_options(parser, run_redrive)


@operator_command
@audited("redrive")
def run_redrive(args: argparse.Namespace, action: audit.Action) -> int:
    early = early_companion(args)  # a second process, getting ready meanwhile
    try:
        return _redrive(args, action, early)
    finally:
        if early is not None:
            early.cancel()  # not given its move (an error, a native move): it exits


def _redrive(args: argparse.Namespace, action: audit.Action, early: Companion | None) -> int:
    target = resolve_target(args)
    sqs = target.sqs
    source_url = target.queue(args.source, "--from")
    destination_url = None
    if args.destination != "source":
        destination_url = target.queue(args.destination, "--to")
        if destination_url == source_url:
            raise CommandError("--from and --to name the same queue", EXIT_USAGE)
    target_arns = target_arns_of(args, to_source=destination_url is None)
    known = preflight(sqs, source_url, destination_url, sources=not args.client_side)
    source, destination = known.source, known.destination
    request = RedriveRequest(
        source=source,
        destination=destination,
        limit=args.limit,
        rate=args.rate,
        reset_count=args.reset_count,
        keep=args.keep,
        concurrency=args.concurrency or (1 if args.until_failing else DEFAULT_CONCURRENCY),
        selector=selector_from(args),
        dry_run=args.dry_run,
        count_attribute=target.count_attribute() if args.reset_count else "",
        hide_seconds=args.hide_seconds,
        wait_seconds=args.wait_seconds,
        reserve=args.reserve,
        until_failing=until_failing_from(args, target, source, destination),
        target_arns=target_arns,
        stack_targets=stack_targets_of(target, target_arns),
        accepted_kinds=target.accepted_kinds(),
    )
    choice = choose_mode(
        sqs, request, client_side=args.client_side, sources=known.dead_letter_sources
    )
    if not args.json:
        note(f"{choice.mode.value} move: {mode_text(choice, request.source)}")
    approximate = known.depth.visible
    action.gate(queues=(source_url, destination_url or "source"), selection_size=approximate)
    if choice.mode is MoveMode.NATIVE:
        return _native_redrive(args, action, sqs, request, approximate)
    if args.wait:
        note("--wait only applies to a native move task; a client-side move ends when done")
    return _client_redrive(args, action, sqs, request, approximate, early=early)


def _native_redrive(
    args: argparse.Namespace,
    action: audit.Action,
    sqs: SQSClient,
    request: RedriveRequest,
    approximate: int,
) -> int:
    source, destination = request.source, request.destination
    target = destination_name(destination)
    if request.dry_run:
        plan = {
            "mode": "native",
            "dry_run": True,
            "source_arn": source.arn,
            "destination_arn": destination.arn if destination else None,
            "rate": request.rate,
            "approximate_messages": approximate,
        }
        if args.json:
            print_json(plan)
        else:
            make_console().print(
                "dry run: would start a message move task of about "
                f"{plural(approximate, 'message')} from {source.name} to {target}; nothing moved"
            )
        return EXIT_OK
    try:
        handle = start_move_task(
            sqs, source.arn, destination.arn if destination else None, request.rate
        )
    except (ClientError, ForeignAnswerError) as error:
        message, code = one_line(error)
        if "HTTP" in message:
            message += " (an emulator may lack message move tasks: rerun with --client-side)"
        raise CommandError(message, code) from None
    # SQS's own move cannot carry the action's id: the move is not followed (said in one line).
    running = {"mode": "native", "task_handle": handle, "status": "RUNNING", "followed": None}
    if not args.wait:
        report_tally(
            args,
            action,
            running,
            lambda: make_console().print(
                f"started a message move task of about {plural(approximate, 'message')} from "
                f"{source.name} to {target}; it runs in SQS (follow it with --wait, or watch "
                f"`dlq-replay status`)\ntask handle: {handle}"
            ),
            followed=False,
        )
        return EXIT_OK
    try:
        with progress_bars(args) as progress:
            bar = progress.add_task(f"moving {source.name} -> {target}", total=approximate or None)

            def show(task: MoveTask) -> None:
                progress.update(bar, completed=task.moved, total=task.to_move or None)

            task = wait_move_task(sqs, source.arn, poll_seconds=args.poll_seconds, on_progress=show)
    except KeyboardInterrupt as stop:
        action.tally(running)
        action.leftover(f"the move task {handle} goes on in SQS")
        raise interrupted(
            stop,
            "stopped waiting; the move task goes on in SQS (cancel it with `aws sqs "
            f"cancel-message-move-task --task-handle {handle}`)",
        ) from None
    moved = plural(task.moved, "message")
    line = f"move task {task.status}: {moved} moved from {source.name} to {target}"
    if task.failure_reason:
        line += f" ({task.failure_reason})"
    done = {"mode": "native", "task_handle": handle, **asdict(task), "followed": None}
    report_tally(args, action, done, lambda: make_console().print(line), followed=False)
    return EXIT_OK if task.succeeded else EXIT_FAILED


def _client_redrive(
    args: argparse.Namespace,
    action: audit.Action,
    sqs: SQSClient,
    request: RedriveRequest,
    approximate: int,
    *,
    early: Companion | None,
) -> int:
    total = min(approximate, request.limit) if request.limit else approximate
    verb = "looking at" if request.dry_run else "moving"
    shutdown = Shutdown(audit=action)
    # A dry run calls no target: it only says what would be delivered where.
    delivers = request.target_arns and not request.dry_run
    # Each copy carries the action's id, its counts go beside the trail (not in a dry run).
    follower = action.follower(sqs, [request.destination])
    if follower is not None:
        request = replace(request, follow_id=follower.action_id)
    processes, why = processes_for(args.processes, request, approximate, usable_cores())
    if why:
        note(why)
    companion = (early or Companion(companion_setup(args))) if processes == 2 else None
    if early is not None and companion is None:
        early.cancel()
    move = ClientMove(
        sqs,
        request,
        stop=shutdown.stop,
        deliverer=make_deliverer(args) if delivers else None,
        memory=ReceiveMemory.local(),
        follower=follower,
        companion=companion,
    )
    json = partial(redrive_json, request=request, shutdown=shutdown)
    human = partial(print_tally, request, shutdown)
    report: TallyReport[RedriveTally] = TallyReport(args, action, shutdown, json, human, follower)
    tally = report.run(
        move.run,
        (f"{verb} {request.source.name}", total, lambda tally: tally.seen),
        move.abandoned,
        lambda: leftover_text(move.leftover(), "source queue"),
        grows=True,
        sent_to=move.source_urls,
    )
    if tally.stopped:
        note(stop_text(tally.stopped))
    if companion is not None and companion.problem:
        note(f"second process: {companion.problem}; this one moved the rest")
    action.leftover(leftover_text(move.leftover(), "source queue"))
    report(tally)
    if follower is not None and follower.problem:
        note(f"follow: {follower.problem}")
    if shutdown.code is not None:
        return shutdown.code
    no_targets = tally.skips.get(SkipReason.NO_TARGETS, 0)
    if no_targets:  # records of serverless kinds stayed: no --target-arn
        note(
            f"{plural(no_targets, 'record')} of serverless kinds (Lambda, EventBridge) left in "
            "place: --to source delivers them to their targets only with --target-arn ARN"
        )
    if nothing_movable(tally):
        skips = ", ".join(f"{count} {reason}" for reason, count in sorted(tally.skips.items()))
        note(
            f"nothing could be moved: {plural(tally.skipped, 'message')} skipped ({skips}), "
            "still in the source queue"
        )
        return EXIT_FAILED
    return EXIT_FAILED if tally.failed or tally.sent_not_deleted or tally.stopped else EXIT_OK
