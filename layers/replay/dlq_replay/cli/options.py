"""The options several commands share: the AWS connection (and the clients it makes), the
replay settings and the queue URLs, with the argparse types of cli.parsing."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from dlq_replay.sqs import client as sqs_clients

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


# Interactive commands (status, peek, redrive, plan) fail fast when the endpoint is down; the
# worker keeps the patient retries of the Lambda (dlq_replay.sqs.client). The read timeout
# leaves room for a 20 s long poll.
INTERACTIVE_ATTEMPTS = 2
INTERACTIVE_CONNECT_TIMEOUT = 2
INTERACTIVE_CONFIG = sqs_clients.APP_ID.merge(
    Config(
        retries={"mode": "standard", "total_max_attempts": INTERACTIVE_ATTEMPTS},
        connect_timeout=INTERACTIVE_CONNECT_TIMEOUT,
        read_timeout=30,
    )
)
MAX_POLLERS = 64  # threads in one process (worker, demo); run more processes for more


def aws_session(args: argparse.Namespace) -> boto3.Session:
    """The command's one boto3 session, from the AWS CLI-style options (profile, region).

    Every client of a command comes from it: a new session reads botocore's data files again
    (the endpoints, the defaults; 40-90 ms before its first client), where a second client of
    the same session costs a few milliseconds."""
    session: boto3.Session | None = getattr(args, "_aws_session", None)
    if session is None:
        session = boto3.Session(profile_name=args.profile, region_name=args.region)
        args._aws_session = session
    return session


def sqs_client(args: argparse.Namespace, *, patient: bool = False) -> SQSClient:
    """An SQS client from the AWS CLI-style options (profile, region, endpoint): fast to fail
    for a person waiting at a prompt, patient for the long-running worker."""
    session = aws_session(args)
    config = sqs_clients.SQS_CLIENT_CONFIG if patient else INTERACTIVE_CONFIG
    return sqs_clients.sqs_client(args.endpoint_url, session=session, config=config)


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
