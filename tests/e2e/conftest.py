"""The deployed stack of the end-to-end test: template.yaml, transformed by the SAM translator,
created in create-everything mode in moto's CloudFormation, on moto's server (127.0.0.1).

The stack is deployed once per session (moto's backends belong to the process, whichever
server answers) with fast replay settings. What the checks need of it (outputs, the function's
configuration, its event source mappings) is read right after the deployment; then moto's own
event source mappings are paused, because the worker, not moto, stands in for Lambda on the
DLQ (see tools/moto_stack.pause_event_source_mappings).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from dlq_replay.demo.emulator import emulator, emulator_client

ROOT = Path(__file__).resolve().parents[2]
# tools/ is a development package of the repository, not of the installed distribution.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.moto_stack import deploy_stack, pause_event_source_mappings  # noqa: E402

from .deployment import PARAMETERS, REGION, STACK_NAME, Deployment  # noqa: E402


@pytest.fixture(scope="session")
def deployment() -> Iterator[Deployment]:
    with emulator() as endpoint_url:
        session = boto3.Session(
            aws_access_key_id="e2e",
            aws_secret_access_key="e2e",
            region_name=REGION,
        )
        cloudformation = session.client("cloudformation", endpoint_url=endpoint_url)
        s3 = session.client(
            "s3", endpoint_url=endpoint_url, config=Config(s3={"addressing_style": "path"})
        )
        lambda_client = session.client("lambda", endpoint_url=endpoint_url)
        outputs = deploy_stack(cloudformation, s3, PARAMETERS, stack_name=STACK_NAME)
        function_name = outputs["ReplayFunctionName"]
        function = lambda_client.get_function_configuration(FunctionName=function_name)
        mappings = lambda_client.list_event_source_mappings(FunctionName=function_name)[
            "EventSourceMappings"
        ]
        pause_event_source_mappings(lambda_client, function_name)
        yield Deployment(
            endpoint_url=endpoint_url,
            outputs=outputs,
            function=function,
            mappings=mappings,
            sqs=emulator_client(endpoint_url),
        )
