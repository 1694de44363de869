"""The selection options of `peek`, `redrive`, `export` and `delete`, checked by the parser."""

from __future__ import annotations

import argparse

from dlq_replay.cli.errors import EXIT_USAGE, CommandError
from dlq_replay.cli.output import duration
from dlq_replay.cli.parsing import checked
from dlq_replay.core.decision import ParkReason
from dlq_replay.core.failure import CONSUMER_REASON, CONSUMER_REASON_PREFIX
from dlq_replay.ops.select import (
    ANY_CONSUMER_REASON,
    NO_REASON,
    Selector,
    Where,
    compile_match,
    compile_regex,
    parse_duration,
)


def park_reason(text: str) -> str:
    """argparse type: a reason the replay writes, a consumer's `consumer:<reason>`,
    `consumer:*` (every consumer park), or none. A bare consumer reason is refused with the
    spelling that selects it: the replay's reasons and a consumer's may not be confused."""
    consumer = text.removeprefix(CONSUMER_REASON_PREFIX)
    if text in {*(r.value for r in ParkReason), NO_REASON, ANY_CONSUMER_REASON} or (
        consumer != text and CONSUMER_REASON.fullmatch(consumer)
    ):
        return text
    choices = ", ".join(
        [*(r.value for r in ParkReason), "consumer:<reason>", ANY_CONSUMER_REASON, NO_REASON]
    )
    hint = ""
    if CONSUMER_REASON.fullmatch(text):
        hint = (
            f"; a consumer's park for {text!r} is selected as {CONSUMER_REASON_PREFIX}{text}, "
            f"every consumer park as {ANY_CONSUMER_REASON}"
        )
    raise argparse.ArgumentTypeError(f"{text!r} is not a park reason ({choices}){hint}")


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "selection (all given conditions must hold; messages not selected are given back at once)"
    )
    group.add_argument(
        "--filter-reason",
        dest="reasons",
        action="append",
        type=park_reason,
        metavar="REASON",
        help="only messages parked for REASON (repeatable), one of: "
        f"{', '.join(r.value for r in ParkReason)}, consumer:<reason> (parked by a consumer's "
        f"ParkMessage), {ANY_CONSUMER_REASON} (every consumer park), {NO_REASON} (messages "
        "without a park reason: moved by SQS's safety net)",
    )
    group.add_argument(
        "--group",
        dest="groups",
        action="append",
        metavar="GROUP_ID",
        help="only messages of this FIFO message group (repeatable)",
    )
    group.add_argument(
        "--where",
        action="append",
        type=checked(Where.parse, "name=value"),
        metavar="NAME=VALUE",
        help="only messages whose attribute NAME equals VALUE: Number attributes compare as "
        "numbers, Binary ones by their base64 text (repeatable)",
    )
    group.add_argument(
        "--match",
        type=checked(compile_match, "JMESPath expression"),
        metavar="JMESPATH",
        help="only messages with a JSON body on which this JMESPath expression is true, "
        'e.g. "order.total > `100`" or "status == \'failed\'"',
    )
    group.add_argument(
        "--match-text",
        type=checked(compile_regex, "regular expression"),
        metavar="REGEX",
        help="only messages whose body (as text) contains a match of this regular expression",
    )
    for option, bound in (("--older-than", "at least"), ("--newer-than", "at most")):
        group.add_argument(
            option,
            type=checked(parse_duration, "duration"),
            metavar="DURATION",
            help=f"only messages sent {bound} this long ago (90s, 15m, 2h, 3d)",
        )


def selector_from(args: argparse.Namespace) -> Selector:
    """The selection; a usage error when the age window is empty."""
    older, newer = args.older_than, args.newer_than
    if older is not None and newer is not None and older >= newer:
        raise CommandError(
            f"--older-than {duration(older)} and --newer-than {duration(newer)} select "
            "nothing: no message is both older than the first and newer than the second",
            EXIT_USAGE,
        )
    return Selector(
        reasons=frozenset(args.reasons or ()),
        groups=frozenset(args.groups or ()),
        where=tuple(args.where or ()),
        match=args.match,
        match_text=args.match_text,
        older_than=args.older_than,
        newer_than=args.newer_than,
    )
