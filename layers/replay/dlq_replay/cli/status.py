"""`dlq-replay status`: depth and age of each queue, and the replay's event source."""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from typing import Any

from dlq_replay.breaker.breaker_state import Phase

# `clients.make_client` is looked up at call time: the tests hand the command emulator clients.
from dlq_replay.cli import deployment as clients
from dlq_replay.cli.deployment import add_operator_options, resolve_target
from dlq_replay.cli.errors import EXIT_OK, operator_command
from dlq_replay.cli.output import duration, make_console, print_json
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.ops.pause import BreakerStatus, breaker_status
from dlq_replay.ops.receiving import ALL_KINDS
from dlq_replay.ops.stack import Deployment
from dlq_replay.ops.status import EventSourceStatus, KindCounts, QueueStatus, Status, status


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "status",
        description="For each known queue: visible, in flight and delayed messages (SQS's "
        "approximate counters), the age of the oldest message (CloudWatch's "
        "ApproximateAgeOfOldestMessage, where SQS reports it), how long until that message expires "
        "(the queue's retention minus its age; a warning under a day) and its RedrivePolicy; with "
        "--stack or --function-name, whether the replay function's event source on the DLQ is "
        "enabled, and the outage breaker's state (since when, the next probe, how many messages "
        "wait); the kinds of record the function accepts and their targets. Receives no message, "
        "but with --sample N: then it looks at up to N of the DLQ's records (a peek, within the "
        "receive budget) and counts them by kind, target and the service's error.",
    )
    parser.add_argument(
        "--sample",
        type=int_between(0, 100),
        default=0,
        metavar="N",
        help="look at up to N records of the DLQ and count them by kind (sqs, lambda, "
        "lambda-destination, eventbridge), target and error; each one looked at is received once",
    )
    add_operator_options(parser, run_status)


@operator_command
def run_status(args: argparse.Namespace) -> int:
    resolved = resolve_target(args)
    deployment = resolved.deployment
    lam = clients.make_client(args, "lambda") if deployment.function_name else None
    result = status(
        resolved.sqs,
        deployment,
        cloudwatch=clients.make_client(args, "cloudwatch"),
        lam=lam,
        sample=args.sample,
        replay_targets=resolved.replay_targets() if args.sample else frozenset(),
        accepted_kinds=resolved.accepted_kinds() if args.sample else ALL_KINDS,
    )
    kinds = kinds_json(resolved.settings, result.kinds)
    breaker = None
    if lam is not None and deployment.function_name:
        dynamodb = clients.make_client(args, "dynamodb")
        breaker = breaker_status(lam, dynamodb, deployment.function_name)
    now = time.time()
    # The replay's recovery on the DLQ over the last day, from the trail's table or file.
    from dlq_replay.cli.auditing import open_store
    from dlq_replay.cli.followed import recovery_report

    dlq = next((q for q in result.queues if q.role == "dlq"), None)
    recovery = recovery_report(open_store(args), dlq.queue.name if dlq else None, now)
    # Messages in the DLQ (visible, in flight, delayed): what the breaker holds back.
    waiting = dlq.depth.total if dlq else None
    if args.json:
        print_json(
            {
                **status_json(result, deployment),
                "breaker": breaker_json(breaker, waiting, now),
                "kinds": kinds,
                "recovery": recovery,
            }
        )
        return EXIT_OK
    from rich.table import Table

    console = make_console()
    title = f"stack {deployment.stack}" if deployment.stack else "queues"
    table = Table(title=title, title_justify="left")
    table.add_column("queue", no_wrap=True, min_width=8)
    table.add_column("name", no_wrap=True)
    for column in ("visible", "in flight", "delayed", "oldest", "expires in"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("redrive", no_wrap=True)
    roles = {queue.queue.arn: queue.role for queue in result.queues}
    for queue in result.queues:
        redrive = queue.queue.redrive
        wiring = "-"
        if redrive:
            target = roles.get(redrive.target_arn, redrive.target_name)
            wiring = f"-> {target} after {redrive.max_receive_count} receives"
        table.add_row(
            queue.role,
            queue.queue.name,
            str(queue.depth.visible),
            str(queue.depth.in_flight),
            str(queue.depth.delayed),
            "-" if queue.oldest_age_seconds is None else duration(queue.oldest_age_seconds),
            _expires_cell(queue),
            wiring,
        )
    console.print(table)
    console.print(_event_source_line(result.event_source))
    if breaker is not None:
        console.print(breaker_line(breaker, waiting, now), soft_wrap=True)
    for line in kinds_lines(kinds):
        console.print(line, soft_wrap=True)
    console.print(recovery["text"], soft_wrap=True, markup=False, highlight=False)
    if result.age_note:
        console.print(result.age_note)
    console.print(
        "Counters are approximate (about a minute behind); 'oldest' is CloudWatch's "
        "ApproximateAgeOfOldestMessage, '-' when SQS has not reported it; 'expires in' is the "
        "queue's retention minus that age, '-' when unknown, '!' under a day."
    )
    for warning in expiry_warnings(result):
        console.print(warning, soft_wrap=True)  # one line each, for grep
    return EXIT_OK


def kinds_json(settings: dict[str, str], sample: KindCounts | None) -> dict[str, Any]:
    """The kinds the function accepts, its targets and the DLQ's sample (with --sample)."""
    targets = settings.get("REPLAY_TARGET_ARNS", "")
    return {
        "dlq_kind": settings.get("DLQ_KIND") or None,
        "replay_target_arns": sorted(arn.strip() for arn in targets.split(",") if arn.strip()),
        "sample": asdict(sample) if sample is not None else None,
    }


def kinds_lines(kinds: dict[str, Any]) -> list[str]:
    """What status says of kinds: nothing for a function of SQS records and no sample."""
    lines: list[str] = []
    dlq_kind = kinds["dlq_kind"]
    if dlq_kind and dlq_kind != "sqs":
        targets = ", ".join(kinds["replay_target_arns"]) or "none (every record is parked)"
        lines.append(f"kinds: the function replays {dlq_kind} records; targets: {targets}")
    sample = kinds["sample"]
    if sample is not None:
        looked = sample["sampled"]
        by_kind = ", ".join(f"{n} {kind}" for kind, n in sorted(sample["kinds"].items()))
        lines.append(f"DLQ sample: {looked} records looked at{': ' + by_kind if looked else ''}")
        lines += [f"  {where}: {n}" for where, n in sorted(sample["targets"].items())]
        lines += [f"  error {error}: {n}" for error, n in sorted(sample["errors"].items())]
        if sample["stopped"]:
            lines.append(f"  sample stopped: {sample['stopped']}")
    return lines


def _expires_cell(queue: QueueStatus) -> str:
    """Time left before SQS deletes the oldest message; marked `!` under a day."""
    if queue.expires_in_seconds is None:
        return "-"
    # Truncated, not rounded: 23h 59m 59.6s left must not read as "1d".
    return duration(int(queue.expires_in_seconds)) + (" !" if queue.expiry_warning else "")


def expiry_warnings(result: Status) -> list[str]:
    """One line per queue whose oldest message SQS deletes within a day, with what to do."""
    return [
        f"WARNING: the oldest message in the {queue.role} queue {queue.queue.name} expires in "
        f"{duration(int(queue.expires_in_seconds or 0))} (retention "
        f"{duration(queue.queue.retention_seconds)}): {_expiry_advice(queue.role)}"
        for queue in result.expiring
    ]


def _expiry_advice(role: str) -> str:
    # An export is a file SQS cannot expire; a redriven message starts on the main queue.
    export = f"dlq-replay export {role} --file PATH (an archive that does not expire)"
    if role == "operator":
        return f"move or export it now: dlq-replay redrive (to the main queue) or {export}"
    if role == "dlq":
        return (
            "is the replay running (event source above)? else move or export it now: "
            f"dlq-replay redrive --from dlq or {export}"
        )
    return "the consumer is not draining the queue"


def _event_source_line(source: EventSourceStatus | None) -> str:
    if source is None:
        return "event source: not checked (pass --stack NAME or --function-name)"
    if source.function_missing:
        return f"event source: no such function: {source.function_name}"
    if not source.found:
        return f"event source: {source.function_name} has NO event source on the DLQ"
    details = [f"batch size {source.batch_size}"] if source.batch_size else []
    if source.maximum_concurrency:
        details.append(f"maximum concurrency {source.maximum_concurrency}")
    if source.last_result:
        details.append(f"last result: {source.last_result}")
    state = source.state or "unknown"
    if not source.enabled:
        state = f"{state.upper()}: the DLQ is not being replayed"
    return f"event source: {source.function_name} on the DLQ is {state} ({', '.join(details)})"


def status_json(result: Status, deployment: Deployment) -> dict[str, Any]:
    return {
        "stack": deployment.stack,
        "queues": [
            {
                "role": q.role,
                "name": q.queue.name,
                "url": q.queue.url,
                "arn": q.queue.arn,
                "fifo": q.queue.fifo,
                "visible": q.depth.visible,
                "in_flight": q.depth.in_flight,
                "delayed": q.depth.delayed,
                "oldest_age_seconds": q.oldest_age_seconds,
                "retention_seconds": q.queue.retention_seconds,
                "expires_in_seconds": q.expires_in_seconds,
                "expiry_warning": q.expiry_warning,
                "redrive": asdict(q.queue.redrive) if q.queue.redrive else None,
            }
            for q in result.queues
        ],
        "event_source": (
            {**asdict(result.event_source), "enabled": result.event_source.enabled}
            if result.event_source
            else None
        ),
        "notes": [*expiry_warnings(result), *([result.age_note] if result.age_note else [])],
    }


def breaker_line(status: BreakerStatus, waiting: int | None, now: float) -> str:
    """One line: the breaker's state, since when, the next probe, and what waits."""
    state = status.state
    if status.note or state is None:
        return status.note or "outage breaker: off"
    if state.phase is Phase.CLOSED:
        last = f" (last change: {state.cause.value})" if state.cause else ""
        return f"outage breaker: closed{last}"
    since = f"since {duration(max(0, int(now - state.since)))} ago"
    wait = "" if waiting is None else f"; {waiting} messages wait in the DLQ"
    if state.phase is Phase.OPEN:
        left = (state.next_probe or now) - now
        probe = f"in {duration(int(left))}" if left > 0 else "due now"
        return (
            f"outage breaker: OPEN {since} (opening {state.openings} in a row): the replay "
            f"paused itself; next probe {probe}{wait}"
        )
    doing = "probe sent, watching the DLQ" if state.holding else "probing"
    return f"outage breaker: HALF-OPEN {since} ({doing}){wait}"


def breaker_json(
    status: BreakerStatus | None, waiting: int | None, now: float
) -> dict[str, Any] | None:
    if status is None:
        return None
    state = status.state
    return {
        "state": status.phase,
        "table": status.table,
        "since": state.since if state and state.since else None,
        "next_probe": state.next_probe if state else None,
        "next_probe_in_seconds": (
            max(0.0, state.next_probe - now) if state and state.next_probe else None
        ),
        "openings": state.openings if state else None,
        "cause": state.cause.value if state and state.cause else None,
        "holding": state.holding if state else None,
        "waiting": waiting,
        "note": status.note,
    }
