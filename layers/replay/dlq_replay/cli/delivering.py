"""`redrive --to source` for the records a serverless service wrote (a Lambda function's DLQ or
OnFailure destination, an EventBridge rule target's DLQ): the --target-arn option, and what
the command says of their deliveries."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dlq_replay.cli.errors import EXIT_USAGE, CommandError
from dlq_replay.cli.output import TallyRow, plural
from dlq_replay.cli.parsing import JoinedValues, SettingType
from dlq_replay.core.settings import SETTING

if TYPE_CHECKING:
    from dlq_replay.ops.redrive import RedriveTally

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


def delivery_rows(tally: RedriveTally) -> list[TallyRow]:
    """The records delivered (or that a dry run would deliver), by target: under 'moved'."""
    if not tally.delivered:
        return []
    verb = "would deliver to" if tally.dry_run else "delivered to"
    return [{f"{verb} {arn}": n for arn, n in tally.delivered.items()}]


def delivery_lines(tally: RedriveTally) -> list[str]:
    """Each refusal's first message, by code; what a dry run did not do."""
    lines = [f"refused {code}: {message}" for code, message in sorted(tally.errors.items())]
    if tally.dry_run and tally.delivered:
        lines.append("dry run: no target was called (a target may still refuse)")
    return lines


def targets_needed(tally: RedriveTally) -> str | None:
    """The one-line reason why records of serverless kinds stayed: no --target-arn."""
    from dlq_replay.ops.redrive import SkipReason  # late: `redrive --help` needs none of it

    left = tally.skips.get(SkipReason.NO_TARGETS, 0)
    if not left:
        return None
    return (
        f"{plural(left, 'record')} of serverless kinds (Lambda, EventBridge) left in place: "
        "--to source delivers them to their targets only with --target-arn ARN"
    )
