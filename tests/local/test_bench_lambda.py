"""The benchmarks' in-memory Lambda (bench/lambda_http.py) answers boto3's `Invoke` as Lambda
accepts an asynchronous invocation, and refuses any other invocation type."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.exceptions import ClientError

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from lambda_http import FakeLambda  # noqa: E402

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:bench-target"


@pytest.fixture
def server() -> Iterator[FakeLambda]:
    fake = FakeLambda(latency=0)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def client(server: FakeLambda) -> LambdaClient:
    return boto3.client(
        "lambda",
        endpoint_url=server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )


def test_an_event_invocation_is_accepted_with_a_request_id(server: FakeLambda) -> None:
    lambda_ = client(server)

    first = lambda_.invoke(FunctionName=FUNCTION, InvocationType="Event", Payload=b'{"n":1}')
    second = lambda_.invoke(FunctionName=f"{FUNCTION}:live", InvocationType="Event", Payload=b"{}")

    assert first["StatusCode"] == 202
    ids = {answer["ResponseMetadata"]["RequestId"] for answer in (first, second)}
    assert len(ids) == 2
    assert server.invocations == {FUNCTION: 1, f"{FUNCTION}:live": 1}
    assert server.payload_bytes == len(b'{"n":1}') + 2


def test_a_synchronous_invocation_is_refused(server: FakeLambda) -> None:
    with pytest.raises(ClientError) as refused:
        client(server).invoke(FunctionName=FUNCTION, Payload=b"{}")

    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert server.invocations == {}
