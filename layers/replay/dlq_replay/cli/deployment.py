"""What the commands on a deployment share: their AWS clients, the deployment's queues (from
--stack or explicit URLs) and the options that name them."""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.cli.errors import EXIT_USAGE, CommandError, error_code
from dlq_replay.cli.options import INTERACTIVE, add_aws_options, aws_session, endpoint, sqs_client
from dlq_replay.cli.output import note
from dlq_replay.cli.parsing import Run, int_between, queue_url
from dlq_replay.core.kinds import KIND_CHOICES, RecordKind, accepted_kinds
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE, SETTING, SettingsError
from dlq_replay.ops.stack import QUEUE_ROLES, Deployment, discover, function_environment

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


# CloudWatch is a nice-to-have for `status` (the age of the oldest message): fail fast.
_OPTIONAL_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 1}, connect_timeout=3, read_timeout=5
)


def lookup_config(service: str) -> Config:
    """The configuration of a client other than SQS's, for the CLI and the console alike: a
    one-off look-up for a person waiting, so it fails fast too."""
    return _OPTIONAL_CONFIG if service == "cloudwatch" else INTERACTIVE


def make_client(args: argparse.Namespace, service: str) -> Any:
    """A client of `service` from the AWS CLI-style options; tests replace this function."""
    if service == "sqs":
        return sqs_client(args)
    session = aws_session(args)
    config = lookup_config(service)
    return session.client(service, endpoint_url=endpoint(args, service), config=config)  # type: ignore[call-overload]


def command_sqs(args: argparse.Namespace) -> SQSClient:
    client: SQSClient = make_client(args, "sqs")
    return client


def add_deployment_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "queues", "name the queues, or read them from a deployed stack (explicit URLs win)"
    )
    group.add_argument("--stack", metavar="NAME", help="a deployed sqs-dlq-replay stack")
    group.add_argument(
        "--main-queue-url", metavar="URL", type=queue_url, help="the queue replays go to"
    )
    group.add_argument(
        "--dlq-url", metavar="URL", type=queue_url, help="the dead-letter queue the replay polls"
    )
    group.add_argument(
        "--operator-queue-url", metavar="URL", type=queue_url, help="where parked messages wait"
    )
    group.add_argument(
        "--function-name",
        metavar="NAME",
        help="the replay function (default: the stack's ReplayFunctionName output)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="machine-readable output on stdout, no progress bars"
    )


def add_operator_options(parser: argparse.ArgumentParser, run: Run) -> None:
    """What every command on a deployment's queues ends with."""
    add_deployment_options(parser)
    add_json_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run)


def resolve_deployment(args: argparse.Namespace) -> Deployment:
    explicit = Deployment(
        main=args.main_queue_url,
        dlq=args.dlq_url,
        operator=args.operator_queue_url,
        function_name=args.function_name,
    )
    cfn = make_client(args, "cloudformation") if args.stack else None
    return discover(explicit, cfn, args.stack)


def add_count_attribute_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--count-attribute",
        metavar="NAME",
        help="the replay count attribute (default: the function's REPLAY_COUNT_ATTRIBUTE, "
        f"else the environment's, else {DEFAULT_COUNT_ATTRIBUTE})",
    )


def add_receive_options(parser: argparse.ArgumentParser, *, count_attribute: bool = True) -> None:
    """The options of the commands that receive messages (peek, redrive, export)."""
    if count_attribute:
        add_count_attribute_option(parser)
    parser.add_argument(
        "--reserve",
        type=int_between(1, 1000),
        default=1,
        metavar="N",
        help="receives every message must keep before its maxReceiveCount",
    )
    parser.add_argument(
        "--wait-seconds",
        type=int_between(0, 20),
        default=1,
        metavar="SECONDS",
        help="long-poll wait of each receive: 1 or more asks every SQS server, 0 only some",
    )


def function_settings(args: argparse.Namespace, deployment: Deployment) -> dict[str, str]:
    """The replay function's environment; empty when unknown or unreadable (a note says why)."""
    if not deployment.function_name:
        return {}
    try:
        return function_environment(make_client(args, "lambda"), deployment.function_name)
    except (ClientError, BotoCoreError) as error:
        note(f"could not read the function's settings ({error_code(error)})")
        return {}


def count_attribute_of(settings: Mapping[str, str]) -> str:
    """The function's REPLAY_COUNT_ATTRIBUTE, else the environment's, else the default."""
    variable = "REPLAY_COUNT_ATTRIBUTE"
    return settings.get(variable) or os.environ.get(variable) or DEFAULT_COUNT_ATTRIBUTE


def replay_targets_of(settings: Mapping[str, str]) -> frozenset[str]:
    """The function's REPLAY_TARGET_ARNS, else the environment's; none when unreadable."""
    variable = "REPLAY_TARGET_ARNS"
    text = settings.get(variable) or os.environ.get(variable, "")
    try:
        targets: frozenset[str] = SETTING[variable].parse(text)
    except SettingsError as error:
        note(f"targets unknown: {error}")
        return frozenset()
    return targets


def accepted_kinds_of(settings: Mapping[str, str]) -> frozenset[RecordKind]:
    """The kinds of the function's DLQ_KIND, else the environment's, else `sqs`'s: a look-alike
    in an SQS DLQ is an SQS record, as the replay reads it, never delivered to a function."""
    text = settings.get("DLQ_KIND") or os.environ.get("DLQ_KIND")
    try:
        return accepted_kinds((text or "sqs").strip())
    except ValueError:
        raise CommandError(
            f"DLQ_KIND {text!r} is none of {', '.join(KIND_CHOICES)}", EXIT_USAGE
        ) from None


@dataclass(frozen=True)
class Target:
    """What a command works on: the deployment's queues and the SQS client, resolved once."""

    args: argparse.Namespace
    deployment: Deployment
    sqs: SQSClient

    @functools.cached_property
    def settings(self) -> dict[str, str]:
        """Read when first needed (a command may need none)."""
        return function_settings(self.args, self.deployment)

    def queue(self, name: str, option: str) -> str:
        """The URL of a role (main, dlq, operator) or of a queue URL given to `option`."""
        if "://" in name:
            try:
                return queue_url(name)
            except argparse.ArgumentTypeError as error:
                raise CommandError(f"{option}: {error}", EXIT_USAGE) from None
        if name not in QUEUE_ROLES:
            raise CommandError(
                f"{option}: {name!r} is neither main, dlq, operator nor a queue URL", EXIT_USAGE
            )
        url = self.deployment.queue(name)
        if url is None:
            flag = "--dlq-url" if name == "dlq" else f"--{name}-queue-url"
            raise CommandError(
                f"{option}: the {name} queue is unknown: pass --stack NAME or {flag}", EXIT_USAGE
            )
        return url

    def count_attribute(self) -> str:
        """--count-attribute, else the function's (`count_attribute_of`)."""
        return self.args.count_attribute or count_attribute_of(self.settings)

    def replay_targets(self) -> frozenset[str]:
        return replay_targets_of(self.settings)

    def accepted_kinds(self) -> frozenset[RecordKind]:
        return accepted_kinds_of(self.settings)


def resolve_target(args: argparse.Namespace) -> Target:
    return Target(args, resolve_deployment(args), command_sqs(args))
