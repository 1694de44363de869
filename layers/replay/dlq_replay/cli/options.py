"""The options several commands share (AWS connection, replay settings, queue URLs) and the
argparse types that validate values at parse time."""

from __future__ import annotations

import argparse
import os
import textwrap
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import boto3
from botocore.config import Config

from dlq_replay.core.queues import queue_url_problem
from dlq_replay.core.settings import Settings, SettingsError
from dlq_replay.sqs import client as sqs_clients

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


Subparsers = Any  # argparse's _SubParsersAction is private
Run = Callable[[argparse.Namespace], int]

# Options that set the function's environment variables, for worker and plan.
SETTING_OPTIONS: dict[str, tuple[str, str]] = {
    "--main-queue-url": (
        "MAIN_QUEUE_URL",
        "queue replays go to (default: the record's allowed source queue, else none: parked)",
    ),
    "--operator-queue-url": ("OPERATOR_QUEUE_URL", "queue parked messages go to (required)"),
    "--max-attempts": ("MAX_ATTEMPTS", "replays before a message is parked (1-100, default 3)"),
    "--backoff-base-seconds": (
        "BACKOFF_BASE_SECONDS",
        "ceiling of the first delay, 1-43200 (default 60)",
    ),
    "--backoff-multiplier": ("BACKOFF_MULTIPLIER", "growth per attempt, >= 1 (default 2)"),
    "--backoff-cap-seconds": ("BACKOFF_CAP_SECONDS", "largest delay, 1-43200 (default 900)"),
    "--jitter": ("JITTER", "full, equal, decorrelated or none (default full)"),
    "--replay-count-attribute": (
        "REPLAY_COUNT_ATTRIBUTE",
        "the count attribute, an SQS attribute name (default sqs-dlq-replay-nb)",
    ),
    "--allowed-source-queue-arns": (
        "ALLOWED_SOURCE_QUEUE_ARNS",
        "comma list of queue ARNs replays may go back to (default: none)",
    ),
    "--log-message-body": ("LOG_MESSAGE_BODY", "true or false (default false)"),
}
# Interactive commands (status, peek, redrive, plan) fail fast when the endpoint is down; the
# worker keeps the patient retries of the Lambda (dlq_replay.sqs.client). The read timeout
# leaves room for a 20 s long poll.
INTERACTIVE_ATTEMPTS = 2
INTERACTIVE_CONNECT_TIMEOUT = 2
INTERACTIVE_CONFIG = sqs_clients.LEAN_CALLS.merge(
    Config(
        retries={"mode": "standard", "total_max_attempts": INTERACTIVE_ATTEMPTS},
        connect_timeout=INTERACTIVE_CONNECT_TIMEOUT,
        read_timeout=30,
    )
)
MAX_POLLERS = 64  # threads in one process (worker, demo); run more processes for more
# A queue the settings' own check needs when it judges one option alone.
_PLACEHOLDER_OPERATOR = "https://sqs.us-east-1.amazonaws.com/000000000000/placeholder"


class CommandHelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (and its range, for bounded numbers), and no
    word is broken at a hyphen (`--backoff-cap-seconds`, `dlq-replay-park-reason`)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        extras = []
        bounds = getattr(action.type, "range_text", None)
        if bounds and bounds not in text:
            extras.append(bounds)
        if "default" not in text and action.option_strings and action.help != argparse.SUPPRESS:
            if action.required:
                extras.append("required")
            elif action.nargs == 0:
                extras.append("default: off")
            elif action.default is None:
                extras.append("default: none")
            elif action.default != argparse.SUPPRESS:
                extras.append(f"default {action.default}")
        return f"{text} ({', '.join(extras)})" if extras else text

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )


class CommandParser(argparse.ArgumentParser):
    """The parser of every command: the help formatter above, and a usage error in one line
    (`dlq-replay: error: ...`, exit 2) like every other error of the command."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", CommandHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dlq-replay: error: {message} (see: {self.prog} --help)\n")


def setting_type(variable: str) -> Callable[[str], str]:
    """argparse type of an option that sets a function variable: the settings' own rule, so
    the parser refuses exactly what the function would (the value stays a string)."""

    def convert(text: str) -> str:
        try:
            Settings.from_env({"OPERATOR_QUEUE_URL": _PLACEHOLDER_OPERATOR, variable: text})
        except SettingsError as error:
            raise argparse.ArgumentTypeError(f"{text!r} {error.rule} [{variable}]") from None
        return text

    return convert


def sqs_client(args: argparse.Namespace, *, patient: bool = False) -> SQSClient:
    """An SQS client from the AWS CLI-style options (profile, region, endpoint): fast to fail
    for a person waiting at a prompt, patient for the long-running worker."""
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    config = sqs_clients.SQS_CLIENT_CONFIG if patient else INTERACTIVE_CONFIG
    return sqs_clients.sqs_client(args.endpoint_url, session=session, config=config)


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
        help="endpoint of every service the command calls (SQS; with --stack and for status, "
        "plan, pause and resume also CloudFormation, Lambda and CloudWatch): an emulator or "
        "SQS-compatible broker; AWS_ENDPOINT_URL_<SERVICE> still wins for one service (default: "
        "AWS_ENDPOINT_URL_SQS, else AWS_ENDPOINT_URL, else AWS's own endpoints)",
    )


def add_setting_options(parser: argparse.ArgumentParser, *, skip: Sequence[str] = ()) -> None:
    group = parser.add_argument_group("replay settings (override the environment variables)")
    for option, (variable, text) in SETTING_OPTIONS.items():
        if option not in skip:
            group.add_argument(
                option,
                dest=variable,
                metavar="VALUE",
                type=setting_type(variable),
                help=f"{text} [{variable}]",
            )


def setting_overrides(args: argparse.Namespace) -> dict[str, str | None]:
    return {variable: getattr(args, variable, None) for variable, _ in SETTING_OPTIONS.values()}


class int_between:  # noqa: N801 - used like the function it replaces: type=int_between(1, 10)
    """argparse type: an integer in [low, high]; the help shows the range."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.range_text = f"{low}-{high}"

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not self.low <= value <= self.high:
            raise argparse.ArgumentTypeError(f"must be from {self.low} to {self.high}, got {value}")
        return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def share(text: str) -> float:
    """argparse type: a share of the messages, from 0 to 1."""
    if not 0 <= (value := _number(text)) <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def positive_number(text: str) -> float:
    if not 0 < (value := _number(text)) < float("inf"):
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
