"""What the operator commands share: their AWS clients, the deployment's queues (from --stack
or explicit URLs), and the turning of every refusal into one line."""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay import ops
from dlq_replay.cli.errors import EXIT_FAILED, EXIT_USAGE, CommandError, error_code, one_line
from dlq_replay.cli.options import (
    INTERACTIVE_ATTEMPTS,
    INTERACTIVE_CONNECT_TIMEOUT,
    queue_url,
    sqs_client,
)
from dlq_replay.cli.output import note
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


Subparsers = Any  # argparse's _SubParsersAction is private
Run = Callable[[argparse.Namespace], int]

# Clients other than SQS: one-off look-ups for a person waiting, so they fail fast too.
_LOOKUP_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": INTERACTIVE_ATTEMPTS},
    connect_timeout=INTERACTIVE_CONNECT_TIMEOUT,
    read_timeout=15,
)
# CloudWatch is a nice-to-have for `status` (the age of the oldest message): fail fast.
_OPTIONAL_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 1}, connect_timeout=3, read_timeout=5
)


# -- clients and discovery ---------------------------------------------------------------------


def make_client(args: argparse.Namespace, service: str) -> Any:
    """A client of `service` from the AWS CLI-style options; tests replace this function.

    `--endpoint-url` applies to every service a command calls (an emulator such as moto's
    server serves them all on one port); AWS_ENDPOINT_URL_<SERVICE> still wins for a service.
    """
    if service == "sqs":
        return sqs_client(args)
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    endpoint = os.environ.get(f"AWS_ENDPOINT_URL_{service.upper()}") or args.endpoint_url
    config = _OPTIONAL_CONFIG if service == "cloudwatch" else _LOOKUP_CONFIG
    return session.client(service, endpoint_url=endpoint, config=config)  # type: ignore[call-overload]


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


def resolve_deployment(args: argparse.Namespace) -> ops.Deployment:
    explicit = ops.Deployment(
        main=args.main_queue_url,
        dlq=args.dlq_url,
        operator=args.operator_queue_url,
        function_name=args.function_name,
    )
    cfn = make_client(args, "cloudformation") if args.stack else None
    return ops.discover(explicit, cfn, args.stack)


def resolve_queue(deployment: ops.Deployment, name: str, option: str) -> str:
    """A role (main, dlq, operator) or a queue URL."""
    if "://" in name:
        try:
            return queue_url(name)
        except argparse.ArgumentTypeError as error:
            raise CommandError(f"{option}: {error}", EXIT_USAGE) from None
    if name not in ops.QUEUE_ROLES:
        raise CommandError(
            f"{option}: {name!r} is neither main, dlq, operator nor a queue URL", EXIT_USAGE
        )
    url = deployment.queue(name)
    if url is None:
        flag = {"main": "--main-queue-url", "dlq": "--dlq-url", "operator": "--operator-queue-url"}
        raise CommandError(
            f"{option}: the {name} queue is unknown: pass --stack NAME or {flag[name]}", EXIT_USAGE
        )
    return url


def count_attribute_of(args: argparse.Namespace, deployment: ops.Deployment) -> str:
    """--count-attribute, else the function's REPLAY_COUNT_ATTRIBUTE, else the environment."""
    if args.count_attribute:
        return str(args.count_attribute)
    if deployment.function_name:
        try:
            env = ops.function_environment(make_client(args, "lambda"), deployment.function_name)
        except (ClientError, BotoCoreError) as error:
            note(f"could not read the function's REPLAY_COUNT_ATTRIBUTE ({error_code(error)})")
        else:
            if env.get("REPLAY_COUNT_ATTRIBUTE"):
                return env["REPLAY_COUNT_ATTRIBUTE"]
    return os.environ.get("REPLAY_COUNT_ATTRIBUTE") or DEFAULT_COUNT_ATTRIBUTE


def operator_command(run: Run) -> Run:
    """Turn the logic's refusals (OpsError) into the CLI's one-line errors."""

    @functools.wraps(run)
    def wrapper(args: argparse.Namespace) -> int:
        require_local_extra("rich")
        try:
            return run(args)
        except ops.OpsError as error:
            raise CommandError(str(error), EXIT_USAGE if error.usage else EXIT_FAILED) from None
        except (ClientError, BotoCoreError) as error:
            message, code = one_line(error)
            if _queue_not_found(error):
                message += region_hint(args)
            raise CommandError(message, code) from None

    return wrapper


def require_local_extra(module: str) -> None:
    """Stop with one line, before anything is received or sent, when the `local` extra (moto,
    rich) is missing: a plain `pip install sqs-dlq-replay` has only the Lambda side."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise CommandError(
            f"this command needs {module}, from the package's `local` extra: "
            "pip install 'sqs-dlq-replay[local]'",
            EXIT_FAILED,
        ) from None


# The region an AWS queue URL names: https://sqs.<region>.amazonaws.com[.cn]/<account>/<name>.
_URL_REGION = re.compile(r"^https://sqs\.([a-z0-9-]+)\.amazonaws\.com")


def _queue_not_found(error: Exception) -> bool:
    code = error.response.get("Error", {}).get("Code", "") if isinstance(error, ClientError) else ""
    return "NonExistentQueue" in str(code) or code == "QueueDoesNotExist"


def region_hint(args: argparse.Namespace) -> str:
    """When a queue URL of the command names another region than the client's, say so: SQS
    answers such a request with a plain "queue does not exist"."""
    client_region = args.region or boto3.Session(profile_name=args.profile).region_name
    named = [
        getattr(args, name, None)
        for name in (
            "queue",
            "main_queue_url",
            "dlq_url",
            "operator_queue_url",
            "source",
            "destination",
        )
    ]
    for url in named:
        found = _URL_REGION.match(url) if isinstance(url, str) else None
        if found and found.group(1) != client_region:
            return (
                f" (the URL {url} names region {found.group(1)}, the command used "
                f"{client_region}: pass --region {found.group(1)})"
            )
    return ""
