"""The embedded SQS emulator (moto's server on 127.0.0.1) and the demo's three queues, wired
as the template's create-everything mode wires them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3

from dlq_replay.sqs.client import SQS_CLIENT_CONFIG

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


REGION = "us-east-1"
MAIN_MAX_RECEIVE_COUNT = 1
SAFETY_NET_MAX_RECEIVE_COUNT = 20


@contextmanager
def emulator() -> Iterator[str]:
    """moto's SQS server on 127.0.0.1 at a free port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    # moto's receive is not atomic across threads: two concurrent receives can race over a
    # message being dead-lettered, and one of them answers HTTP 500 (boto3 retries it; the
    # message is redelivered, never lost). The server would print a traceback for each.
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def emulator_client(endpoint_url: str) -> SQSClient:
    session = boto3.Session(
        aws_access_key_id="demo",
        aws_secret_access_key="demo",  # noqa: S106 - the emulator accepts any key
        region_name=REGION,
    )
    return session.client("sqs", endpoint_url=endpoint_url, config=SQS_CLIENT_CONFIG)


@dataclass(frozen=True, slots=True)
class Queues:
    main: str
    dlq: str
    operator: str


def create_queues(sqs: SQSClient, prefix: str = "demo") -> Queues:
    """Main → DLQ → operator, wired like the template's create-everything mode."""

    def arn(url: str) -> str:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return attributes["Attributes"]["QueueArn"]

    def redrive(target: str, count: int) -> str:
        return json.dumps({"deadLetterTargetArn": arn(target), "maxReceiveCount": count})

    operator = sqs.create_queue(QueueName=f"{prefix}-operator")["QueueUrl"]
    dlq = sqs.create_queue(
        QueueName=f"{prefix}-dlq",
        Attributes={
            "VisibilityTimeout": "10",
            "RedrivePolicy": redrive(operator, SAFETY_NET_MAX_RECEIVE_COUNT),
        },
    )["QueueUrl"]
    main = sqs.create_queue(
        QueueName=f"{prefix}-main",
        Attributes={
            "VisibilityTimeout": "5",
            "RedrivePolicy": redrive(dlq, MAIN_MAX_RECEIVE_COUNT),
        },
    )["QueueUrl"]
    return Queues(main=main, dlq=dlq, operator=operator)
