"""The clients a delivery uses: one per service and region (the target's), made when needed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.config import Config

from dlq_replay import __version__
from dlq_replay.core.settings import SEND_CONCURRENCY_LIMIT

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

# As the SQS client's (sqs/client.py, which this layer may not import).
TARGET_CLIENT_CONFIG = Config(
    user_agent_extra=f"app/sqs-dlq-replay#{__version__}",
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=15,
    max_pool_connections=SEND_CONCURRENCY_LIMIT,
)


class TargetClients:
    """One boto3 client per (service, region); `endpoint_url` may name a service's endpoint."""

    def __init__(
        self,
        session: boto3.Session | None = None,
        *,
        config: Config | None = None,
        endpoint_url: Callable[[str], str | None] | None = None,
    ) -> None:
        self._session = session
        self._config = config or TARGET_CLIENT_CONFIG
        self._url_of = endpoint_url or (lambda _: None)
        self._clients: dict[tuple[str, str], Any] = {}
        # Making a client from a session is not thread-safe; deliveries run on a pool.
        self._lock = threading.Lock()

    def lambda_client(self, region: str) -> LambdaClient:
        return cast("LambdaClient", self._client("lambda", region))

    def sqs(self, region: str) -> SQSClient:
        return cast("SQSClient", self._client("sqs", region))

    def sns(self, region: str) -> SNSClient:
        return cast("SNSClient", self._client("sns", region))

    def stepfunctions(self, region: str) -> SFNClient:
        return cast("SFNClient", self._client("stepfunctions", region))

    def events(self, region: str) -> EventBridgeClient:
        return cast("EventBridgeClient", self._client("events", region))

    def _client(self, service: str, region: str) -> Any:
        with self._lock:
            if (service, region) not in self._clients:
                self._session = self._session or boto3.Session()
                self._clients[service, region] = self._session.client(
                    service,  # type: ignore[call-overload]
                    region,
                    config=self._config,
                    endpoint_url=self._url_of(service),
                )
            return self._clients[service, region]
