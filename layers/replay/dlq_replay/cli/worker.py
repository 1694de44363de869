"""`dlq-replay worker`: the replay as a long-lived process on a DLQ, on any SQS endpoint."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import signal
from typing import Any

from dlq_replay.cli.auditing import add_audit_option
from dlq_replay.cli.options import (
    MAX_POLLERS,
    add_aws_options,
    aws_session,
    endpoint,
    make_deliverer,
    probe_config,
    sqs_client,
)
from dlq_replay.cli.parsing import (
    Subparsers,
    add_setting_options,
    int_between,
    queue_url,
    setting_overrides,
)
from dlq_replay.local.eventsource import (
    DEFAULT_WAIT_SECONDS,
    MAX_RECEIVE_BATCH,
    START_UP_PATIENCE_SECONDS,
    PollStats,
)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_WAIT_SECONDS = 20  # SQS's longest long poll
MAX_START_UP_PATIENCE = 86_400
# The worker's names of the settings of every serverless kind: `--kind eventbridge`,
# `--target-arn ARN` (repeated, or a comma list); the table's own names work too.
WORKER_OPTIONS = {"DLQ_KIND": "--kind", "REPLAY_TARGET_ARNS": "--target-arn"}


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "worker",
        description="Poll a DLQ like Lambda's event source and replay it. At start it checks that "
        "the main queue (and every allowed source queue) exists and is FIFO exactly when the DLQ "
        "is. With --kind lambda, eventbridge or any it also replays the records a Lambda function "
        "(its asynchronous-invocation DLQ or OnFailure destination) or an EventBridge rule target "
        "wrote, each delivered to its target, and only to one that --target-arn names (a record of "
        "another kind or target is parked). SIGINT, SIGTERM and SIGHUP stop the polling: the "
        "batches in hand are finished (within a few seconds, else the worker says what stays "
        "hidden); the exit code is then 0 after SIGTERM (a service stopped cleanly), 130 after "
        "SIGINT, 129 after SIGHUP; a second signal, or a stop past the grace, exits at once with "
        "128 + the signal's number. The outage breaker stops polling while nearly every replayed "
        "copy comes back (the consumer is down), and tries again after a pause (--no-breaker: "
        "off).",
    )
    parser.add_argument(
        "--dlq-url",
        required=True,
        type=queue_url,
        metavar="URL",
        help="the dead-letter queue to replay",
    )
    parser.add_argument(
        "--pollers",
        type=int_between(1, MAX_POLLERS),
        default=1,
        metavar="N",
        help="concurrent pollers",
    )
    parser.add_argument(
        "--batch-size",
        type=int_between(1, MAX_RECEIVE_BATCH),
        default=MAX_RECEIVE_BATCH,
        metavar="N",
        help="messages per receive, as Lambda's BatchSize on SQS",
    )
    parser.add_argument(
        "--wait-seconds",
        type=int_between(0, MAX_WAIT_SECONDS),
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="long-poll wait of each receive; above 3 a receive still "
        "waiting when a signal comes may be abandoned, what it brings then staying hidden "
        "until the DLQ's visibility timeout ends",
    )
    parser.add_argument(
        "--start-up-patience",
        type=int_between(0, MAX_START_UP_PATIENCE),
        default=int(START_UP_PATIENCE_SECONDS),
        metavar="SECONDS",
        help="how long start-up retries throttling, 5xx, an unreachable endpoint and a proxy's "
        "error page before it gives up",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        default=os.environ.get("LOG_LEVEL", "INFO").upper(),
        help="how much the worker logs, in any case (default: $LOG_LEVEL, else INFO)",
    )
    parser.add_argument(
        "--no-breaker",
        action="store_true",
        help="turn the outage breaker off: keep replaying (and parking) while every replayed "
        "copy comes back; the same as --outage-breaker off",
    )
    add_setting_options(parser, aliases=WORKER_OPTIONS, repeatable=("REPLAY_TARGET_ARNS",))
    parser.add_argument(
        "--stack",
        metavar="NAME",
        help="a deployed sqs-dlq-replay stack: the recovery counts and the returns of operator "
        "moves go to its table, as the function's do (without it or --audit-table: a file on "
        "this machine)",
    )
    add_audit_option(parser)
    add_aws_options(parser)
    # A mistake only the options together show is a usage error too (one line, exit 2).
    parser.set_defaults(run=run_worker_command, usage_error=parser.error)


def run_worker_command(args: argparse.Namespace) -> int:
    from aws_lambda_powertools import Logger

    from dlq_replay.cli.deployment import make_client
    from dlq_replay.cli.errors import CommandError
    from dlq_replay.cli.output import note
    from dlq_replay.cli.shutdown import Shutdown
    from dlq_replay.local.worker_loop import (
        StartError,
        WorkerOptions,
        delivers,
        run_worker,
        settings_from,
    )
    from dlq_replay.notify.sns import notice_client

    # The endpoint also decides the URLs built from queue ARNs (shared-DLQ routing).
    overrides = {**setting_overrides(args), "AWS_ENDPOINT_URL_SQS": endpoint(args)}
    if args.no_breaker:  # the short form of --outage-breaker off
        overrides["OUTAGE_BREAKER"] = "off"
    settings = settings_from(os.environ, overrides)
    if args.REPLAY_TARGET_ARNS is not None and not delivers(settings):
        args.usage_error(
            f"--target-arn names the targets of records of serverless kinds, but the kind is "
            f"{settings.dlq_kind}, whose records go back to their source queue: pass --kind "
            "lambda, eventbridge or any, or leave --target-arn out"
        )
    logger = Logger(service="sqs-dlq-replay", level=args.log_level)
    options = WorkerOptions(
        dlq_url=args.dlq_url,
        pollers=args.pollers,
        batch_size=args.batch_size,
        wait_seconds=args.wait_seconds,
        start_up_patience=args.start_up_patience,
    )
    # Park notices (PARK_NOTIFICATION_TOPIC_ARN) use the same profile; the topic's region.
    sns = notice_client(settings, session=aws_session(args))
    sqs = sqs_client(args, patient=True)
    follow, where = _follow(args, settings, logger)
    shutdown = Shutdown()
    stats = PollStats()
    try:
        code = shutdown.run(
            lambda: run_worker(
                sqs,
                settings,
                options,
                logger=logger,
                sns=sns,
                stop=shutdown.stop,
                stats=stats,
                cloudwatch=(
                    (lambda: make_client(args, "cloudwatch")) if settings.outage_breaker else None
                ),
                probe=sqs_client(args, config=probe_config(args.start_up_patience)),
                deliverer=(
                    make_deliverer(args, settings.send_concurrency) if delivers(settings) else None
                ),
                follow=follow,
                on_started=lambda: note(where),
            ),
            lambda: under_way_text(*stats.under_way()),
        )
    except StartError as error:
        raise CommandError(f"{error}; nothing was received", 2 if error.usage else 1) from None
    if shutdown.signum == signal.SIGTERM:
        # A service asked to stop that stopped cleanly: systemd, Kubernetes and process
        # supervisors read 143 as a failure. An abandoned stop exits 143 from the shutdown.
        return code
    return shutdown.code if shutdown.code is not None else code


def under_way_text(polling: int, in_hand: int) -> str:
    """What a stop that cannot wait leaves: messages in hand, receives still waiting."""
    from dlq_replay.cli.output import plural

    parts = []
    if in_hand:
        parts.append(
            f"{plural(in_hand, 'message')} in hand {'stays' if in_hand == 1 else 'stay'} hidden "
            f"until the DLQ's visibility timeout ends, then {'is' if in_hand == 1 else 'are'} "
            "received again (copies already written may be sent twice)"
        )
    if polling:
        parts.append(
            f"{plural(polling, 'receive')} {'was' if polling == 1 else 'were'} still "
            "waiting (what they bring stays hidden until the DLQ's visibility timeout ends)"
        )
    return "; ".join(parts) or "no message was in hand"


def _follow(args: argparse.Namespace, settings: Any, logger: Any) -> tuple[Any, str]:
    """The follow-up's stores: --audit-table, DLQ_REPLAY_AUDIT_TABLE or the --stack's table
    (as the audit finds it), else the local file; and the line saying which."""
    from dlq_replay.cli.auditing import trail_table
    from dlq_replay.cli.deployment import make_client
    from dlq_replay.follow.replay_side import ReplayFollow, table_store, threshold_of
    from dlq_replay.ops.stack import stack_outputs

    # The stack is read once, for its table and its alarm topic.
    outputs = (
        functools.cache(lambda: stack_outputs(make_client(args, "cloudformation"), args.stack))
        if args.stack
        else None
    )
    table = trail_table(args.audit_table, outputs)
    topic = settings.follow_notice_topic_arn
    if topic is None and outputs is not None:  # the stack's alarm topic, as the Lambda's
        topic = outputs().get("AlarmTopicArn") or None
        settings = dataclasses.replace(settings, follow_notice_topic_arn=topic)
    threshold = threshold_of(settings)
    if table:
        store = table_store(lambda: make_client(args, "dynamodb"), table, threshold)
        where = f"the table {table}"
    else:  # the file store stays out of the layer: imported only here
        from dlq_replay.follow.journal import FileFollowStore, default_follow_path

        file = default_follow_path()
        store = functools.partial(FileFollowStore, file, threshold=threshold)
        where = f"{file}, which no other operator sees (pass --stack NAME or --audit-table NAME)"
    follow = ReplayFollow(
        store,
        count_attribute=settings.count_attribute,
        logger=logger,
        sns=(lambda: make_client(args, "sns")) if topic else None,
        topic=topic,
    )
    return follow, f"follow: recovery counts and returns go to {where}"
