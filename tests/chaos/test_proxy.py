"""The chaos proxy injects each fault as botocore sees it from SQS, and never alters a success.

Each fault goes through our SQS client (botocore's HTTP layer): it must surface as the
exception class botocore raises for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from dlq_replay.sqs.client import SQS_CLIENT_CONFIG, sqs_client

from tools.chaos import ChaosProxy, Faults

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

NO_RETRIES = Config(retries={"mode": "standard", "max_attempts": 1})


def client(endpoint: str) -> SQSClient:
    session = boto3.Session(aws_access_key_id="chaos", aws_secret_access_key="chaos")
    config = SQS_CLIENT_CONFIG.merge(NO_RETRIES)
    return sqs_client(endpoint, "us-east-1", session=session, config=config)


@pytest.fixture
def direct(moto_endpoint: str) -> SQSClient:
    return client(moto_endpoint)


@contextmanager
def through(moto_endpoint: str, faults: Faults) -> Iterator[tuple[ChaosProxy, SQSClient]]:
    """A proxy with `faults` in front of moto, and a client through it; stopped on the way out."""
    proxy = ChaosProxy(moto_endpoint, faults, seed=1, max_seconds=60)
    try:
        yield proxy, client(proxy.start())
    finally:
        proxy.stop()


def test_successes_pass_through_unaltered(moto_endpoint: str) -> None:
    with through(moto_endpoint, Faults()) as (proxy, sqs):
        url = sqs.create_queue(QueueName="calm")["QueueUrl"]
        sqs.send_message(
            QueueUrl=url,
            MessageBody="é\x01 body",
            MessageAttributes={"b": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}},
        )
        (message,) = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert message["Body"] == "é\x01 body"
    assert message["MessageAttributes"]["b"]["BinaryValue"] == b"\x00\xff"
    assert proxy.injected == {}


@pytest.mark.parametrize(
    ("faults", "code"),
    [(Faults(throttle=1), "RequestThrottled"), (Faults(server_error=1), "InternalError")],
)
def test_errors_have_sqs_shape_and_do_not_reach_the_emulator(
    moto_endpoint: str, direct: SQSClient, faults: Faults, code: str
) -> None:
    url = direct.create_queue(QueueName="errors")["QueueUrl"]
    with (
        through(moto_endpoint, faults) as (_proxy, sqs),
        pytest.raises(ClientError) as raised,
    ):
        sqs.send_message(QueueUrl=url, MessageBody="never")
    assert raised.value.response["Error"]["Code"] == code
    assert "Messages" not in direct.receive_message(QueueUrl=url)


@pytest.mark.parametrize(
    ("faults", "written"), [(Faults(reset_before=1), False), (Faults(reset_after=1), True)]
)
def test_a_reset_after_forwarding_is_the_ambiguous_failure(
    moto_endpoint: str, direct: SQSClient, faults: Faults, written: bool
) -> None:
    url = direct.create_queue(QueueName=f"resets-{written}")["QueueUrl"]
    with (
        through(moto_endpoint, faults) as (_proxy, sqs),
        pytest.raises(ConnectionClosedError),
    ):
        sqs.send_message(QueueUrl=url, MessageBody="maybe")
    received = direct.receive_message(QueueUrl=url).get("Messages", [])
    assert [m["Body"] for m in received] == (["maybe"] if written else [])


def test_the_proxy_stops_itself(moto_endpoint: str) -> None:
    proxy = ChaosProxy(moto_endpoint, Faults(), seed=1, max_seconds=0.2)
    endpoint = proxy.start()
    proxy._stopped.wait(5)
    with pytest.raises(EndpointConnectionError):
        client(endpoint).list_queues()
