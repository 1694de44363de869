"""`dlq-replay pause | resume`: stop and restart the replay of the DLQ (its event source)."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay import audit

# `clients.make_client` is looked up at call time: the tests hand the command emulator clients.
from dlq_replay.cli import deployment as clients
from dlq_replay.cli.auditing import add_audit_option, audited
from dlq_replay.cli.deployment import add_operator_options, resolve_target
from dlq_replay.cli.errors import EXIT_OK, EXIT_USAGE, CommandError, operator_command
from dlq_replay.cli.output import make_console, note, print_json
from dlq_replay.cli.parsing import Subparsers, positive_number
from dlq_replay.ops.movefollow import action_line
from dlq_replay.ops.pause import PauseResult, operator_took_over, set_event_source, wait_for_state
from dlq_replay.ops.queueinfo import queue_info
from dlq_replay.ops.stack import Deployment

_TARGET = (
    "--stack NAME, or --function-name NAME with --dlq-url URL choosing the mapping when the "
    "function has several"
)
_GOALS = {"pause": "Disabled", "resume": "Enabled"}  # the state --wait waits for
_DESCRIPTIONS = {
    "pause": (
        f"Disables the replay function's event source mapping on the DLQ ({_TARGET}). Nothing "
        "is deleted or moved: the messages wait in the DLQ, where SQS keeps them until the "
        "DLQ's retention period ends (`dlq-replay status` shows how long the oldest has left), "
        "and the replay picks them up again after `dlq-replay resume`. Use it while the "
        "consumer is still broken, so replays do not spend their attempts. Lambda changes the "
        "state asynchronously (Disabling, then Disabled): `dlq-replay status` shows it, "
        "--wait follows it. Pausing a paused replay says so and exits 0."
    ),
    "resume": (
        f"Enables the replay function's event source mapping on the DLQ again ({_TARGET}): "
        "the replay picks up the messages that waited in the DLQ. Lambda changes the state "
        "asynchronously (Enabling, then Enabled): `dlq-replay status` shows it, --wait "
        "follows it. Resuming a running replay says so and exits 0."
    ),
}


def register(subparsers: Subparsers) -> None:
    for command, description in _DESCRIPTIONS.items():
        parser = subparsers.add_parser(command, description=description)
        parser.add_argument(
            "--wait",
            action="store_true",
            help=f"wait until Lambda reports the mapping {_GOALS[command]} "
            "(default: return at once)",
        )
        parser.add_argument(
            "--timeout",
            type=positive_number,
            default=60.0,
            metavar="SECONDS",
            help="how long --wait waits at most",
        )
        parser.set_defaults(enable=command == "resume")
        add_audit_option(parser)
        add_operator_options(parser, run_pause)


@operator_command
@audited()
def run_pause(args: argparse.Namespace, action: audit.Action) -> int:
    resolved = resolve_target(args)
    deployment = resolved.deployment
    if not deployment.function_name:
        raise CommandError("which function? pass --stack NAME or --function-name NAME", EXIT_USAGE)
    dlq_arn = queue_info(resolved.sqs, deployment.dlq).arn if deployment.dlq else None
    lam = clients.make_client(args, "lambda")
    action.gate(queues=(deployment.dlq,) if deployment.dlq else ())
    result = set_event_source(lam, deployment.function_name, dlq_arn, enabled=args.enable)
    # The operator decides from now on: an open breaker closes and never resumes this pause.
    dynamodb = functools.partial(clients.make_client, args, "dynamodb")
    breaker = take_over(lam, dynamodb, deployment.function_name, enable=args.enable)
    state = result.after
    # Also when it already was on its way (Disabling for a pause): --wait means "until done".
    if args.wait and state != _GOALS[args.command]:
        state = wait_for_state(lam, result.uuid, _GOALS[args.command], timeout=args.timeout)
    action.tally({**asdict(result), "after": state, "breaker": breaker})
    if args.json:
        told = {"breaker": breaker} if breaker else {}  # only when the breaker was open
        said = {"action_id": action.action_id} if action.recorded else {}  # `audit` lists it
        print_json({**asdict(result), "after": state, "waited": bool(args.wait), **told, **said})
        return EXIT_OK
    console = make_console()
    console.print(_summary(args, result, state, deployment), soft_wrap=True)
    if breaker:
        console.print(breaker, soft_wrap=True)
    if action.recorded:  # on stderr: the state stays the one line a script reads on stdout
        note(action_line(action.action_id, None))
    return EXIT_OK


def take_over(
    lam: Any, dynamodb: Callable[[], Any], function_name: str, *, enable: bool
) -> str | None:
    """Close an open outage breaker for the operator; what to say about it, if anything."""
    try:
        closed = operator_took_over(lam, dynamodb(), function_name, paused=not enable)
    except (ClientError, BotoCoreError) as error:
        return f"note: the outage breaker could not be told ({type(error).__name__})"
    if closed is None:
        return None
    if enable:
        return "outage breaker closed: the replay runs as usual"
    return "outage breaker closed: it will not resume this pause; `dlq-replay resume` does"


def _summary(
    args: argparse.Namespace, result: PauseResult, state: str, deployment: Deployment
) -> str:
    if not result.changed:
        word = "resumed" if args.enable else "paused"
        return f"already {word}: {result.function_name} on the DLQ is {state}"
    if args.enable:
        return f"resumed: {result.function_name} on the DLQ is {state} (was {result.before})"
    return (
        f"paused: {result.function_name} on the DLQ is {state} (was {result.before}); "
        f"messages wait in the DLQ until `dlq-replay resume {_selector(args, deployment)}`"
    )


def _selector(args: argparse.Namespace, deployment: Deployment) -> str:
    """The options that name the same event source again, for the `resume` hint."""
    if args.stack:
        return f"--stack {args.stack}"
    selector = f"--function-name {deployment.function_name}"
    return f"{selector} --dlq-url {args.dlq_url}" if args.dlq_url else selector
