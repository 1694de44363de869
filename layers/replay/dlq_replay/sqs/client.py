"""The SQS client the replay uses everywhere (Lambda, worker, demo, CLI): one configuration,
botocore's own, set through its public `Config`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from dlq_replay import __version__
from dlq_replay.core.settings import SEND_CONCURRENCY_LIMIT

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# Names the tool in the SDK's User-Agent (`app/...`), so SQS's side (CloudTrail) can tell it.
APP_ID = Config(user_agent_extra=f"app/sqs-dlq-replay#{__version__}")
# Standard retry mode retries throttling and 5xx with backoff; the timeouts keep one slow call
# from eating the function's whole timeout; a connection for each concurrent send.
SQS_CLIENT_CONFIG = APP_ID.merge(
    Config(
        retries={"mode": "standard", "max_attempts": 5},
        connect_timeout=5,
        read_timeout=15,
        max_pool_connections=SEND_CONCURRENCY_LIMIT,
    )
)


def sqs_client(
    endpoint_url: str | None = None,
    region_name: str | None = None,
    session: boto3.Session | None = None,
    config: Config = SQS_CLIENT_CONFIG,
) -> SQSClient:
    """The SQS client: by default the patient one (the Lambda and the worker must ride out a
    network blip); interactive commands pass a config that fails fast."""
    make = session.client if session is not None else boto3.client
    return make("sqs", endpoint_url=endpoint_url, region_name=region_name, config=config)
