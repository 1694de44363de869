"""The SQS client the replay uses everywhere (Lambda, worker, demo, CLI): one configuration."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import boto3
import botocore.session
from botocore.config import Config
from botocore.loaders import Loader

from dlq_replay import __version__
from dlq_replay.core.settings import SEND_CONCURRENCY_LIMIT, SettingsError
from dlq_replay.sqs.transport import use_stdlib_http

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# What every call of our clients costs botocore, cut where botocore offers a switch
# (bench/bench_end_to_end.py, 2026-11: 1.32 -> 1.03 ms of CPU per SQS call):
# - parameter validation (~8%): our requests are typed (mypy against boto3-stubs) and SQS
#   checks them again;
# - the User-Agent header, otherwise rebuilt twice per call from a dozen parts, each
#   sanitised a character at a time (~15%): a fixed one, naming the SDK and us.
USER_AGENT = (
    f"Boto3/{boto3.__version__} md/Botocore#{botocore.__version__} ua/2.1 "
    f"lang/python#{'.'.join(map(str, sys.version_info[:3]))} app/sqs-dlq-replay#{__version__}"
)
LEAN_CALLS = Config(parameter_validation=False, user_agent=USER_AGENT)
# Standard retry mode retries throttling and 5xx with backoff; the timeouts keep one slow call
# from eating the function's whole timeout; a connection for each concurrent send.
SQS_CLIENT_CONFIG = LEAN_CALLS.merge(
    Config(
        retries={"mode": "standard", "max_attempts": 5},
        connect_timeout=5,
        read_timeout=15,
        max_pool_connections=SEND_CONCURRENCY_LIMIT,
    )
)


# Which HTTP layer the SQS client sends with: `stdlib` (sqs/transport.py, a fifth to a third
# less CPU a call) or `botocore` (urllib3, botocore's own), the way back should ours ever
# misbehave.
HTTP_VARIABLE = "DLQ_REPLAY_SQS_HTTP"
HTTP_LAYERS = ("stdlib", "botocore")


def sqs_client(
    endpoint_url: str | None = None,
    region_name: str | None = None,
    session: boto3.Session | None = None,
    config: Config = SQS_CLIENT_CONFIG,
    http: str | None = None,
) -> SQSClient:
    """The SQS client: by default the patient one (the Lambda and the worker must ride out a
    network blip); interactive commands pass a config that fails fast. `http` (default: the
    `DLQ_REPLAY_SQS_HTTP` variable, else `stdlib`) picks its HTTP layer."""
    layer = (http or os.environ.get(HTTP_VARIABLE) or "stdlib").strip().lower()
    if layer not in HTTP_LAYERS:
        raise SettingsError(HTTP_VARIABLE, layer, f"expected one of {', '.join(HTTP_LAYERS)}")
    make = session.client if session is not None else boto3.client
    client = make("sqs", endpoint_url=endpoint_url, region_name=region_name, config=config)
    if layer == "stdlib":
        use_stdlib_http(client)
    return client


class _KnownServicesLoader(Loader):
    """botocore's data loader, told which services its clients are for.

    Before it loads a service's model, botocore's loader lists every service it has data for
    (two walks over ~440 directories, about 12 ms of a cold start; bench/bench_cold_start.py)
    only to check the name. Our names are known, so the check is skipped; the files are still
    found on the same search paths (AWS_DATA_PATH included), and a missing one still raises
    botocore's DataNotFoundError.
    """

    def __init__(self, services: Iterable[str], extra_search_paths: list[str]) -> None:
        super().__init__(extra_search_paths=extra_search_paths)
        self._services = sorted(services)

    def list_available_services(self, type_name: str) -> list[str]:
        del type_name
        return list(self._services)


# The function's clients: SQS, SNS (notices) and, for the outage breaker, DynamoDB, Lambda,
# EventBridge and CloudWatch (made only when the breaker is on).
LAMBDA_SERVICES = ("cloudwatch", "dynamodb", "events", "lambda", "sns", "sqs")


def known_services_session(services: Iterable[str] = LAMBDA_SERVICES) -> boto3.Session:
    """A boto3 session for clients of `services` only, quicker to make a client from: what the
    Lambda function uses, where the client's creation is part of every cold start."""
    core = botocore.session.Session()
    # As botocore's own create_loader: AWS_DATA_PATH's entries, then the built-in data.
    data_path = core.get_config_variable("data_path")
    extra = [
        os.path.expanduser(os.path.expandvars(p)) for p in (data_path or "").split(os.pathsep) if p
    ]
    core.register_component("data_loader", _KnownServicesLoader(services, extra))
    return boto3.Session(botocore_session=core)
