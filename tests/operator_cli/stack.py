"""A small CloudFormation stack for moto with template.yaml's output names.

moto does not run the SAM transform, so this stands in for a deployed sqs-dlq-replay stack: the
three queues wired as in create-everything mode, a function with the settings environment, its
event source mapping on the DLQ, and the outputs the operator commands read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient

ROOT = Path(__file__).resolve().parents[2]

FUNCTION_ENVIRONMENT = {
    "MAX_ATTEMPTS": "4",
    "BACKOFF_BASE_SECONDS": "30",
    "BACKOFF_MULTIPLIER": "3",
    "BACKOFF_CAP_SECONDS": "1800",
    "JITTER": "equal",
    "REPLAY_COUNT_ATTRIBUTE": "orders-replays",
}


def template(*, create_main: bool = True) -> dict[str, Any]:
    """Create-everything mode; without `create_main`, no MainQueueUrl output (a shared DLQ)."""

    def redrive(target: str, count: int) -> dict[str, Any]:
        return {"deadLetterTargetArn": {"Fn::GetAtt": [target, "Arn"]}, "maxReceiveCount": count}

    resources: dict[str, Any] = {
        "OperatorQueue": {"Type": "AWS::SQS::Queue"},
        "DeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {"RedrivePolicy": redrive("OperatorQueue", 50)},
        },
        "ReplayRole": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "lambda.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            },
        },
        "ReplayFunction": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.13",
                "Handler": "app.handler",
                "Role": {"Fn::GetAtt": ["ReplayRole", "Arn"]},
                "Code": {"ZipFile": "def handler(event, context):\n    return {}\n"},
                "Environment": {
                    "Variables": {
                        **FUNCTION_ENVIRONMENT,
                        "OPERATOR_QUEUE_URL": {"Ref": "OperatorQueue"},
                    }
                },
            },
        },
        "ReplayFunctionDeadLetterQueueEvent": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "FunctionName": {"Ref": "ReplayFunction"},
                "EventSourceArn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
                "Enabled": True,
                "BatchSize": 10,
            },
        },
    }
    outputs: dict[str, Any] = {
        "DeadLetterQueueUrl": {"Value": {"Ref": "DeadLetterQueue"}},
        "DeadLetterQueueArn": {"Value": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}},
        "OperatorQueueUrl": {"Value": {"Ref": "OperatorQueue"}},
        "OperatorQueueArn": {"Value": {"Fn::GetAtt": ["OperatorQueue", "Arn"]}},
        "ReplayFunctionName": {"Value": {"Ref": "ReplayFunction"}},
        "ReplayFunctionArn": {"Value": {"Fn::GetAtt": ["ReplayFunction", "Arn"]}},
    }
    if create_main:
        resources["MainQueue"] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {"RedrivePolicy": redrive("DeadLetterQueue", 5)},
        }
        function_env = resources["ReplayFunction"]["Properties"]["Environment"]["Variables"]
        function_env["MAIN_QUEUE_URL"] = {"Ref": "MainQueue"}
        outputs["MainQueueUrl"] = {"Value": {"Ref": "MainQueue"}}
        outputs["MainQueueArn"] = {"Value": {"Fn::GetAtt": ["MainQueue", "Arn"]}}
    return {"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources, "Outputs": outputs}


def deploy(cfn: CloudFormationClient, name: str, *, create_main: bool = True) -> dict[str, str]:
    """Create the stack; returns its outputs."""
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template(create_main=create_main)))
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def template_output_names() -> set[str]:
    """The output names of the real template.yaml (top-level keys of its Outputs section)."""
    text = (ROOT / "template.yaml").read_text()
    section = text.split("\nOutputs:\n", 1)[1]
    names: set[str] = set()
    for line in section.splitlines():
        if line and not line.startswith(" ") and not line.startswith("#"):
            break  # the next top-level section
        if match := re.fullmatch(r"  ([A-Za-z0-9]+):\s*", line):
            names.add(match.group(1))
    return names
