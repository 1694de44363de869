"""What a redrive says: why it moves natively or client-side, its tally as a table and as
JSON, whether nothing could be moved (exit 1); and --target-arn, where `--to source` delivers
the records of serverless kinds, narrowed to what the stack allows."""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from dlq_replay.cli.errors import EXIT_USAGE, CommandError
from dlq_replay.cli.output import (
    TallyRow,
    count_table,
    destination_name,
    make_console,
    note,
)
from dlq_replay.cli.pace_options import pace_line, stop_text
from dlq_replay.cli.parsing import JoinedValues, SettingType
from dlq_replay.cli.shutdown import Shutdown, hidden_until_text
from dlq_replay.core.settings import SETTING, SettingsError
from dlq_replay.ops.redrive import NOT_ROUTED, ModeReason, Rewrite, both_allow

if TYPE_CHECKING:
    from dlq_replay.cli.deployment import Target
    from dlq_replay.ops.queueinfo import QueueInfo
    from dlq_replay.ops.redrive import ModeChoice, RedriveRequest, RedriveTally

_TARGETS = SETTING["REPLAY_TARGET_ARNS"]


def add_target_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target-arn",
        dest="target_arns",
        metavar="ARN",
        type=SettingType(_TARGETS),
        action=JoinedValues,
        help="with --to source: the only targets a record of a serverless kind (a Lambda "
        "function's DLQ or OnFailure destination, an EventBridge rule target's DLQ) is "
        "delivered to, as the replay's REPLAY_TARGET_ARNS (an unqualified function ARN allows "
        "its versions and aliases; the one function listed is where a function's own DLQ "
        "records go); repeatable or a comma list. Without it such records stay where they "
        "are; a record naming another target stays too, counted target-not-allowed",
    )


def target_arns_of(args: argparse.Namespace, *, to_source: bool) -> frozenset[str]:
    """--target-arn's ARNs (checked by the parser already); a usage error but to the source."""
    if args.target_arns and not to_source:
        raise CommandError(
            "--target-arn names where records of serverless kinds are delivered: only with "
            "--to source",
            EXIT_USAGE,
        )
    targets: frozenset[str] = _TARGETS.parse(args.target_arns or "")
    return targets


def nothing_movable(tally: RedriveTally) -> bool:
    """Messages were there, none movable (`--to source`, no source or target on any): a
    failure to a script, not a success with nothing to do."""
    not_routed = sum(tally.skips.get(reason, 0) for reason in NOT_ROUTED)
    return not_routed > 0 and tally.moved == 0 and not tally.sent_not_deleted


def redrive_json(
    tally: RedriveTally, request: RedriveRequest, shutdown: Shutdown | None = None
) -> dict[str, Any]:
    return {
        "mode": "client",
        "source": request.source.url,
        "destination": request.destination.url if request.destination else "source",
        "reset_count": request.reset_count,
        "keep": request.keep,
        "filter_reasons": sorted(request.selector.reasons),
        "target_arns": sorted(request.target_arns),
        **asdict(tally),
        "stopped": stop_text(tally.stopped) if tally.stopped else None,
        "interrupted": shutdown.name if shutdown is not None and shutdown.signum else None,
        "adds_up": tally.adds_up,
    }


def print_tally(request: RedriveRequest, shutdown: Shutdown, tally: RedriveTally) -> None:
    console = make_console()
    target = destination_name(request.destination)
    heading = f"{'dry run: ' if tally.dry_run else ''}{request.source.name} -> {target}"
    if shutdown.signum is not None:
        heading += f" (stopped by {shutdown.name}: what SQS confirmed)"
    console.print(heading)
    console.print(count_table("messages", tally_rows(tally, request)))
    for line in tally_lines(tally):
        console.print(line, soft_wrap=True)
    if shutdown.signum is not None:
        console.print("rerun to continue: nothing is lost")


def tally_rows(tally: RedriveTally, request: RedriveRequest) -> list[TallyRow]:
    """The tally's rows, as the table shows them (the console shows the same rows)."""
    if request.keep:
        moved = "would copy" if tally.dry_run else "copied (originals kept)"
    else:
        moved = "would move" if tally.dry_run else "moved (sent and deleted)"
    rows: list[TallyRow] = [(moved, tally.moved)]
    if tally.delivered:  # by target, under 'moved'
        verb = "would deliver to" if tally.dry_run else "delivered to"
        rows.append({f"{verb} {arn}": n for arn, n in tally.delivered.items()})
    if tally.sent_not_deleted:
        rows.append(
            ("sent, original not deleted (a rerun sends them again)", tally.sent_not_deleted)
        )
    rows += [
        ("failed (left in place)", tally.failed),
        tally.failures,
        ("skipped (left in place)", tally.skipped),
        tally.skips,
    ]
    if tally.given_back:
        rows.append(("received, given back untouched", tally.given_back))
    if tally.unsettled:
        rows.append(("received, copy not confirmed sent (abandoned)", tally.unsettled))
    rows.append(("seen (received)", tally.seen))
    return rows


def tally_lines(tally: RedriveTally) -> list[str]:
    """The lines after the tally's table."""
    lines: list[str] = []
    if tally.not_released:
        lines.append(hidden_until_text(tally.not_released, tally.hidden_until))
    if tally.dry_run:
        lines.append("dry run: nothing was sent or deleted")
    lines += [f"refused {code}: {message}" for code, message in sorted(tally.errors.items())]
    if tally.dry_run and tally.delivered:
        lines.append("dry run: no target was called (a target may still refuse)")
    if tally.pace is not None:
        lines.append(pace_line(tally.pace))
    if tally.failed:
        lines.append("failed messages are still in the source queue: rerun to retry them")
    return lines


def mode_text(choice: ModeChoice, source: QueueInfo) -> str:
    """Why this mode, for the user."""
    if choice.reason is ModeReason.ASKED:
        return "client-side move asked for"
    if choice.reason is ModeReason.REWRITES:
        asked = ", ".join(_REWRITE_FLAGS[rewrite] for rewrite in choice.rewrites)
        return f"{asked}: only a client-side move can do that"
    if choice.reason is ModeReason.NOT_A_DLQ:
        return f"{source.name} is no queue's DLQ, so StartMessageMoveTask does not take it"
    return f"{source.name} is a DLQ: SQS's own move task applies"


_REWRITE_FLAGS = {
    Rewrite.RESET_COUNT: "--reset-count",
    Rewrite.KEEP: "--keep",
    Rewrite.FILTER_REASON: "--filter-reason",
    Rewrite.SELECTION: "a selection",
    Rewrite.LIMIT: "--limit",
    Rewrite.UNTIL_FAILING: "--until-failing",
    Rewrite.DELIVER: "--target-arn",
}


def stack_targets_of(target: Target, listed: frozenset[str]) -> frozenset[str] | None:
    """What the stack allows of --target-arn's targets: its function's REPLAY_TARGET_ARNS, else
    the environment's; None when neither is known (the operator's list alone)."""
    if not listed:
        return None
    variable = _TARGETS.variable
    settings = target.settings
    text = settings.get(variable, "") if settings else os.environ.get(variable)
    if text is None:
        note(
            "--target-arn: the stack's ReplayTargetArns is unknown (no --stack): "
            "delivering to --target-arn's targets alone"
        )
        return None
    try:
        allowed: frozenset[str] = _TARGETS.parse(text)
    except SettingsError as error:
        allowed = frozenset()
        note(f"--target-arn: the stack's targets are unreadable ({error}): delivering to none")
    kept = both_allow(listed, allowed)
    dropped = sorted(listed - kept)
    if dropped:
        narrowed = sorted(kept - listed)
        note(
            f"--target-arn: the stack's ReplayTargetArns does not allow {', '.join(dropped)}"
            + (f" (only {', '.join(narrowed)})" if narrowed else "")
            + ": its records stay where they are"
        )
    return allowed
