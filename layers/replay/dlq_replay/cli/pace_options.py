"""`--rate` and `--until-failing` of `redrive` and `import`: how fast copies go back, and
stopping when they start failing again (`ops.pacing`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.cli.deployment import Target, make_client
from dlq_replay.cli.errors import EXIT_FAILED, EXIT_USAGE, CommandError
from dlq_replay.cli.output import note
from dlq_replay.cli.parsing import int_between, positive_number
from dlq_replay.core.queues import queue_name
from dlq_replay.ops.pacing import (
    DEFAULT_ADAPTIVE_RATE,
    PaceReport,
    UntilFailing,
    WatchError,
    WatchProblem,
    failure_delay,
    watched_dlq,
)

if TYPE_CHECKING:
    from dlq_replay.ops.queueinfo import QueueInfo
    from dlq_replay.ops.redrive import Stop

DEFAULT_CHECK_SECONDS = 10
DEFAULT_FAILURE_THRESHOLD = 1


def add_pace_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rate",
        type=positive_number,
        metavar="PER_SEC",
        help="messages per second at most; with --until-failing the top speed (default: none, "
        f"with --until-failing {DEFAULT_ADAPTIVE_RATE:g})",
    )
    parser.add_argument(
        "--until-failing",
        action="store_true",
        help="protect a recovering consumer: watch the DLQ that copies fail into (the "
        "destination's RedrivePolicy target); every --check-seconds that sees "
        "--failure-threshold or more new messages there halves the rate, a clean check doubles "
        "it back up to --rate, and three failing checks in a row stop the run, with the reason "
        "(exit 1; a rerun continues). Arrivals are read from the DLQ's depth: pause the "
        "replay first (dlq-replay pause), or it takes them off before they are counted",
    )
    parser.add_argument(
        "--check-seconds",
        type=int_between(1, 3600),
        metavar="SECONDS",
        help=f"--until-failing: how often the DLQ is looked at (default: {DEFAULT_CHECK_SECONDS})",
    )
    parser.add_argument(
        "--failure-threshold",
        type=int_between(1, 1_000_000),
        metavar="N",
        help="--until-failing: new DLQ messages within one check that count as failing "
        "(raise it when the queue fails a few messages anyway) "
        f"(default: {DEFAULT_FAILURE_THRESHOLD})",
    )


def until_failing_from(
    args: argparse.Namespace,
    target: Target,
    source: QueueInfo | None,
    destination: QueueInfo | None,
) -> UntilFailing | None:
    """The adaptive pace asked for, with the DLQ it watches; notes on stderr what to expect."""
    if not args.until_failing:
        for flag, value in (
            ("--check-seconds", args.check_seconds),
            ("--failure-threshold", args.failure_threshold),
        ):
            if value is not None:
                raise CommandError(f"{flag} only applies with --until-failing", EXIT_USAGE)
        return None
    try:
        dlq = watched_dlq(target.sqs, source, destination)
    except WatchError as error:
        raise CommandError(_watch_text(error), EXIT_USAGE if error.usage else EXIT_FAILED) from None
    policy = UntilFailing(
        watched=dlq,
        rate=args.rate or DEFAULT_ADAPTIVE_RATE,
        check_seconds=args.check_seconds or DEFAULT_CHECK_SECONDS,
        threshold=args.failure_threshold or DEFAULT_FAILURE_THRESHOLD,
        failure_seconds=failure_delay(destination),
    )
    if not args.json:
        delay = policy.failure_seconds
        lag = (
            f"; a copy that fails gets there only after about {delay} s, so a shorter run "
            "cannot see its own failures"
            if delay
            else ""
        )
        note(
            f"until failing: watching {dlq.name} every {policy.check_seconds:g} s, at most "
            f"{policy.rate:g} messages/s{lag}"
        )
    _warn_if_replayed(target, dlq)
    return policy


def _warn_if_replayed(target: Target, watched: QueueInfo) -> None:
    """The replay taking messages off the watched DLQ hides them from the count: say so."""
    function_name = target.deployment.function_name
    if not function_name or watched.url != target.deployment.dlq:
        return
    from dlq_replay.ops.status import event_source_status  # late: peek and status, 24 ms

    try:
        found = event_source_status(make_client(target.args, "lambda"), function_name, watched.arn)
    except (ClientError, BotoCoreError):
        return
    if found.enabled:
        note(
            f"the replay ({function_name}) is taking messages off {watched.name}, so failures "
            "may not be seen: run `dlq-replay pause` first for --until-failing to count them"
        )


def pace_line(report: PaceReport) -> str:
    """One line for the human output."""
    name = queue_name(report.watched)
    line = (
        f"until failing: {report.arrivals} arrived in {name} over {report.checks} checks "
        f"({report.watched_seconds:.0f} s); {report.backoffs} backoffs, ending at "
        f"{report.rate:g} messages/s"
    )
    if report.too_short:
        line += (
            f"; the run ended before a failing copy could have reached {name} (about "
            f"{report.failure_seconds} s): this says nothing yet about the copies, watch "
            f"{name} with `dlq-replay status`"
        )
    return line


def _watch_text(error: WatchError) -> str:
    if error.problem is WatchProblem.SEVERAL_DESTINATIONS:
        return (
            "--until-failing watches one destination's DLQ, and with --to source the records "
            "may go to several queues: import them per queue (main or a URL)"
        )
    if error.problem is WatchProblem.NO_REDRIVE_POLICY:
        return (
            f"--until-failing: {error.queue} has no redrive policy, so messages that fail "
            "there never reach a DLQ to watch"
        )
    return f"--until-failing: {error.queue}'s DLQ was not found"


def stop_text(stop: Stop) -> str:
    """Why a run stopped before it was done, for the user."""
    from dlq_replay.ops.redrive import BudgetStop  # late: `redrive --help` needs none of it

    if isinstance(stop, BudgetStop):
        return (
            f"stopped: a message left in {stop.queue} has {stop.reserve} or fewer receives "
            f"before SQS moves it to {stop.target}"
        )
    return (
        f"stopped: {stop.arrived} messages arrived in {stop.watched} over the last "
        f"{stop.checks} checks ({stop.window_seconds:g} s), after backing off to "
        f"{stop.rate:g}/s: the copies are failing again; fix the consumer, then rerun"
    )
