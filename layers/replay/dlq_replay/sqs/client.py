"""The SQS client the replay uses everywhere (Lambda, worker, demo, CLI), one configuration."""

from __future__ import annotations

import platform
import re
from typing import TYPE_CHECKING

import boto3
import botocore
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


def lean(config: Config) -> Config:
    """`config` for a client of thousands of calls a run (the redrive): no parameter check (SQS
    still refuses a bad request), and a User-Agent written once (a tenth of a call's CPU)."""
    return config.merge(Config(parameter_validation=False, user_agent=_user_agent()))


def _user_agent() -> str:
    """botocore's own User-Agent, in its format, but for its per-call feature codes."""
    parts = (
        f"Boto3/{safe_component(boto3.__version__)}",
        f"md/Botocore#{safe_component(botocore.__version__)}",
        "ua/2.1",
        f"os/{safe_component(platform.system().lower())}#{safe_component(platform.release())}",
        f"md/arch#{safe_component(platform.machine().lower())}",
        f"lang/python#{safe_component(platform.python_version())}",
        f"md/pyimpl#{safe_component(platform.python_implementation())}",
    )
    return " ".join(parts)


_UNSAFE = re.compile(r"[^A-Za-z0-9!$%&'*+\-.^_`|~,]")


def safe_component(text: str) -> str:
    """`text` as a User-Agent value: every character botocore's rule refuses, a dash."""
    return _UNSAFE.sub("-", text)


def sqs_client(
    endpoint_url: str | None = None,
    region_name: str | None = None,
    session: boto3.Session | None = None,
    config: Config = SQS_CLIENT_CONFIG,
) -> SQSClient:
    """The SQS client: by default the patient one; interactive commands pass one that fails fast."""
    make = session.client if session is not None else boto3.client
    return make("sqs", endpoint_url=endpoint_url, region_name=region_name, config=config)
