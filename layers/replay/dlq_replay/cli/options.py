"""The options several commands share (AWS connection, replay settings, queue URLs) and the
argparse types that validate values at parse time."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import boto3

from dlq_replay.core.queues import queue_url_problem
from dlq_replay.sqs import client as sqs_clients

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


# Options that set the function's environment variables (DESIGN.md §2), for worker and plan.
SETTING_OPTIONS: dict[str, tuple[str, str]] = {
    "--main-queue-url": ("MAIN_QUEUE_URL", "queue replays go to (default: from the record)"),
    "--operator-queue-url": ("OPERATOR_QUEUE_URL", "queue parked messages go to"),
    "--max-attempts": ("MAX_ATTEMPTS", "replays before a message is parked (1-100, default 3)"),
    "--backoff-base-seconds": ("BACKOFF_BASE_SECONDS", "ceiling of the first delay (default 60)"),
    "--backoff-multiplier": ("BACKOFF_MULTIPLIER", "growth per attempt, >= 1 (default 2)"),
    "--backoff-cap-seconds": ("BACKOFF_CAP_SECONDS", "largest delay, 1-43200 (default 900)"),
    "--jitter": ("JITTER", "full, equal, decorrelated or none (default full)"),
    "--replay-count-attribute": ("REPLAY_COUNT_ATTRIBUTE", "default sqs-dlq-replay-nb"),
    "--allowed-source-queue-arns": ("ALLOWED_SOURCE_QUEUE_ARNS", "comma list of queue ARNs"),
    "--log-message-body": ("LOG_MESSAGE_BODY", "true or false (default false)"),
}


def sqs_client(args: argparse.Namespace) -> SQSClient:
    """An SQS client from the AWS CLI-style options (profile, region, endpoint)."""
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    return sqs_clients.sqs_client(args.endpoint_url, session=session)


def queue_url(text: str) -> str:
    """argparse type of every queue URL option: the same rule as the function's settings."""
    problem = queue_url_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an SQS queue URL: it {problem}")
    return text


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("AWS")
    group.add_argument("--region", help="AWS region (default: from the environment/profile)")
    group.add_argument("--profile", help="named profile from the AWS config files")
    group.add_argument(
        "--endpoint-url",
        default=os.environ.get("AWS_ENDPOINT_URL_SQS") or os.environ.get("AWS_ENDPOINT_URL"),
        help="SQS-compatible endpoint (an emulator or broker)",
    )


def add_setting_options(parser: argparse.ArgumentParser, *, skip: Sequence[str] = ()) -> None:
    group = parser.add_argument_group("replay settings (override the environment variables)")
    for option, (variable, text) in SETTING_OPTIONS.items():
        if option not in skip:
            group.add_argument(option, dest=variable, metavar="VALUE", help=f"{text} [{variable}]")


def setting_overrides(args: argparse.Namespace) -> dict[str, str | None]:
    return {variable: getattr(args, variable, None) for variable, _ in SETTING_OPTIONS.values()}


def int_between(low: int, high: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {value}")
        return value

    return convert


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


BUDGET_HELP = (
    "Receive counts: every ReceiveMessage raises a message's receive count, and on a queue "
    "with a RedrivePolicy (the DLQ -> operator queue safety net, the main queue -> DLQ) SQS "
    "moves a message on the receive that would take it past maxReceiveCount. SQS shows the "
    "count only by receiving, so the rule is a budget: a message arrives on a DLQ with the "
    "receive count it had on its source queue (the largest maxReceiveCount of the queues "
    "ListDeadLetterSourceQueues names), one look adds one. The command refuses to start when "
    "even a fresh message would keep fewer than --reserve receives after the look; it stops "
    "before its next receive as soon as a message it has seen keeps --reserve or fewer; the "
    "first receive of a peek takes a single message (a message already at its limit cannot "
    "be seen coming, so at most one could be touched before the rule has a sample); and "
    "messages in flight (held by the replay for a long delay) are never received. It says "
    "so on stderr and shows the receives left for each message."
)
