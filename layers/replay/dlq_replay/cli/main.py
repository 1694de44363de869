"""`dlq-replay`: one console command for the worker, the demo and the operator's needs.

AWS CLI habits: `--region`, `--profile`, `--endpoint-url` on every command; exit codes
0 (ok), 1 (something failed), 2 (usage). Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import boto3
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)

from dlq_replay.core.queues import queue_url_problem
from dlq_replay.core.settings import SettingsError
from dlq_replay.sqs import client as sqs_clients

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

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


class CommandError(Exception):
    """A failure worth one line to the user; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


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


def build_parser() -> argparse.ArgumentParser:
    from dlq_replay.cli import commands

    parser = argparse.ArgumentParser(
        prog="dlq-replay",
        description="Replay SQS dead-letter messages with backoff; inspect and redrive what "
        "was parked.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in commands.REGISTRY:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except KeyboardInterrupt:
        print("dlq-replay: interrupted", file=sys.stderr)
        return 130
    except (CommandError, SettingsError, ClientError, BotoCoreError) as error:
        message, code = describe_error(error)
        print(f"dlq-replay: error: {message}", file=sys.stderr)
        return code


def describe_error(error: Exception) -> tuple[str, int]:
    """One line a human can act on, and the exit code."""
    if isinstance(error, CommandError):
        return str(error), error.code
    if isinstance(error, SettingsError):
        return str(error), EXIT_USAGE
    if isinstance(error, NoCredentialsError):
        return (
            "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY, or pass --profile",
            EXIT_FAILED,
        )
    if isinstance(error, NoRegionError):
        return "no AWS region: pass --region or set AWS_DEFAULT_REGION", EXIT_USAGE
    if isinstance(error, ProfileNotFound):
        return str(error), EXIT_USAGE
    if isinstance(error, EndpointConnectionError):
        return f"cannot reach the endpoint: {error}", EXIT_FAILED
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        code = str(info.get("Code", ""))
        operation = error.operation_name
        if "NonExistentQueue" in code or code == "QueueDoesNotExist":
            return f"queue not found ({operation}): {info.get('Message', code)}", EXIT_FAILED
        if code in {"AccessDenied", "AccessDeniedException", "AuthorizationError"}:
            return f"access denied ({operation}): {info.get('Message', code)}", EXIT_FAILED
        if code == "ValidationError" and "does not exist" in str(info.get("Message", "")):
            return f"not found ({operation}): {info.get('Message')}", EXIT_FAILED
        return f"{operation} failed: {code}: {info.get('Message', '')}", EXIT_FAILED
    return f"{type(error).__name__}: {error}", EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
