"""The AWS options several commands share, and the clients they make."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from dlq_replay.cli.errors import EXIT_USAGE, CommandError
from dlq_replay.cli.parsing import ENDPOINT_FORM, endpoint_problem, endpoint_url, region_name
from dlq_replay.local.answers import refuse_foreign_answers
from dlq_replay.sqs import client as sqs_clients

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.targets.deliverer import Deliverer


# Interactive commands (status, peek, redrive, plan) fail fast when the endpoint is down or
# never answers: 2 attempts of at most 2 s to connect and 10 s to answer (plus the long poll of
# a command that receives, `sqs_client`), about 20 s in all (docs/operator-commands.md); the
# worker keeps the patient retries of the Lambda (dlq_replay.sqs.client). The clients of other
# services take INTERACTIVE as it is (deployment.lookup_config), SQS's with the app's id.
INTERACTIVE_CONNECT_TIMEOUT = 2
INTERACTIVE = Config(
    retries={"mode": "standard", "total_max_attempts": 2},
    connect_timeout=INTERACTIVE_CONNECT_TIMEOUT,
    read_timeout=10,
)
INTERACTIVE_CONFIG = sqs_clients.APP_ID.merge(INTERACTIVE)
# The console's one SQS client of every page, read and action: connections for the overview's
# readers, a snapshot's receivers and an action at once.
CONSOLE_CONNECTIONS = 32
MAX_POLLERS = 64  # threads in one process (worker, demo); run more processes for more


def command_sqs_config(command: str) -> Config | None:
    """A command that makes thousands of calls a run: `sqs.client.lean` (botocore's per-call
    work is the run's CPU), a connection for each request in flight; else None."""
    if command == "redrive":
        from dlq_replay.ops.redrive import MAX_CONCURRENCY  # batches of 10 in flight

        connections = MAX_CONCURRENCY
    elif command == "export":
        from dlq_replay.ops.receiving import RECEIVERS  # receives, releases and deletes

        connections = RECEIVERS
    elif command == "console":
        connections = CONSOLE_CONNECTIONS
    else:
        return None
    return sqs_clients.lean(INTERACTIVE_CONFIG).merge(Config(max_pool_connections=connections))


def aws_session(args: argparse.Namespace) -> boto3.Session:
    """The command's one boto3 session: a new one reads botocore's data files again (40-90 ms),
    a second client of the same one costs a few milliseconds."""
    session: boto3.Session | None = getattr(args, "_aws_session", None)
    if session is None:
        session = boto3.Session(profile_name=args.profile, region_name=args.region)
        refuse_foreign_answers(session)
        args._aws_session = session
    return session


def make_deliverer(args: argparse.Namespace, concurrency: int = 8) -> Deliverer:
    """The `Deliverer` of records of serverless kinds (worker, redrive --to source)."""
    from dlq_replay.targets.deliverer import Deliverer, TargetClients

    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    refuse_foreign_answers(session)
    clients = TargetClients(session, endpoint_url=lambda service: endpoint(args, service))
    return Deliverer(clients, concurrency=concurrency)


def sqs_client(
    args: argparse.Namespace, *, patient: bool = False, config: Config | None = None
) -> SQSClient:
    """Fast to fail for a person waiting, patient for the worker (or `config`); the long poll
    (--wait-seconds) comes on top of the read timeout, as SQS holds a receive that long."""
    session = aws_session(args)
    if config is None:
        config = command_sqs_config(args.command) or (
            sqs_clients.SQS_CLIENT_CONFIG if patient else INTERACTIVE_CONFIG
        )
    wait = getattr(args, "wait_seconds", None)
    read_timeout = getattr(config, "read_timeout", None)  # public, though not in the stubs
    if isinstance(wait, int) and wait > 0 and isinstance(read_timeout, int | float):
        config = config.merge(Config(read_timeout=read_timeout + wait))
    return sqs_clients.sqs_client(endpoint(args), session=session, config=config)


def probe_config(patience: float) -> Config:
    """The worker's start checks: one attempt a call, a connect timeout within the patience,
    so the patience alone says how long start-up waits (botocore's own retries of the patient
    client took ~20 s per call against an unreachable endpoint, whatever the patience)."""
    return INTERACTIVE_CONFIG.merge(
        Config(
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=min(INTERACTIVE_CONNECT_TIMEOUT, max(1.0, patience)),
        )
    )


def endpoint(args: argparse.Namespace, service: str = "sqs") -> str | None:
    """AWS_ENDPOINT_URL_<SERVICE> (not SQS), else --endpoint-url, else AWS_ENDPOINT_URL_SQS,
    else AWS_ENDPOINT_URL, else None (AWS's own); a variable checked as the option is."""
    own = f"AWS_ENDPOINT_URL_{service.upper()}"
    if service != "sqs" and own in os.environ:
        return _checked(own)
    if args.endpoint_url:
        return str(args.endpoint_url)
    for name in ("AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL"):
        if name in os.environ:
            return _checked(name)
    return None


def _checked(variable: str) -> str:
    """Set but empty is refused: read as unset, it would send an emulator's command to AWS."""
    value = os.environ[variable]
    if not value.strip():
        raise CommandError(
            f"{variable} is set but empty: unset it to use AWS's own endpoints, or set it to "
            f"an endpoint URL ({ENDPOINT_FORM})",
            EXIT_USAGE,
        )
    problem = endpoint_problem(value)
    if problem is not None:
        raise CommandError(
            f"{variable}={value!r} is not an endpoint URL: it {problem} (expected {ENDPOINT_FORM})",
            EXIT_USAGE,
        )
    return value


# The AWS services each command may call, as --endpoint-url's help names them (an emulator
# must serve them all on the one endpoint). A command without a row fails at registration.
_AUDIT = ("DynamoDB", "STS")  # the audit trail's table, and who the caller is
_TARGETS = ("SNS", "Step Functions", "EventBridge")  # records of serverless kinds delivered
SERVICES_CALLED: dict[str, tuple[str, ...]] = {
    "worker": ("SQS", "Lambda", *_TARGETS, "CloudWatch", "CloudFormation", "DynamoDB"),
    "status": ("SQS", "CloudFormation", "Lambda", "CloudWatch", "DynamoDB"),
    "pause": ("SQS", "CloudFormation", "Lambda", *_AUDIT),
    "resume": ("SQS", "CloudFormation", "Lambda", *_AUDIT),
    "peek": ("SQS", "CloudFormation", "Lambda"),
    "redrive": ("SQS", "CloudFormation", "Lambda", *_TARGETS, *_AUDIT),
    "export": ("SQS", "CloudFormation", "Lambda", "S3", *_AUDIT),
    "import": ("SQS", "CloudFormation", "Lambda", *_AUDIT),
    "purge": ("SQS", "CloudFormation", "Lambda", *_AUDIT),
    "delete": ("SQS", "CloudFormation", "Lambda", *_AUDIT),
    "audit": ("DynamoDB", "CloudFormation"),
    "console": ("SQS", "CloudFormation", "Lambda", "CloudWatch", *_TARGETS, *_AUDIT),
    "plan": ("SQS", "CloudFormation", "Lambda"),
}


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    services = SERVICES_CALLED[parser.prog.rsplit(" ", 1)[-1]]
    group = parser.add_argument_group("AWS")
    group.add_argument(
        "--region", type=region_name, help="AWS region (default: from the environment/profile)"
    )
    group.add_argument("--profile", help="named profile from the AWS config files")
    group.add_argument(
        "--endpoint-url",
        type=endpoint_url,
        metavar="URL",
        help=f"endpoint of every service the command calls ({', '.join(services)}): an "
        "emulator or SQS-compatible broker; AWS_ENDPOINT_URL_<SERVICE> still wins for one "
        "service (default: AWS_ENDPOINT_URL_SQS, else AWS_ENDPOINT_URL, else AWS's own "
        "endpoints)",
    )


BUDGET_HELP = (
    "Every receive raises a message's receive count, and SQS moves a message on past its "
    "queue's maxReceiveCount: the command keeps --reserve receives for each message, refuses "
    "or stops before that (see "
    "docs/operator-inspect.md#the-receive-count-rule-why-peek-and-redrive-may-refuse)."
)
