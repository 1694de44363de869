"""A small CloudFormation template for moto with template.yaml's output names.

moto does not run the SAM transform, so this stands in for a deployed sqs-dlq-replay stack: the
three queues wired as in create-everything mode, a function with the settings environment, its
event source mapping on the DLQ, the table of the audit trail, and the outputs the operator
commands read. The operator CLI's tests deploy it, and so do the docs' samples
(tools/doc_scenarios.py), with fixed names.
"""

from __future__ import annotations

from typing import Any

from dlq_replay.audit.store import TABLE_KEYS

FUNCTION_ENVIRONMENT = {
    "MAX_ATTEMPTS": "4",
    "BACKOFF_BASE_SECONDS": "30",
    "BACKOFF_MULTIPLIER": "3",
    "BACKOFF_CAP_SECONDS": "1800",
    "JITTER": "equal",
    "REPLAY_COUNT_ATTRIBUTE": "orders-replays",
}


def template(*, create_main: bool = True, prefix: str | None = None) -> dict[str, Any]:
    """Create-everything mode; without `create_main`, no MainQueueUrl output (a shared DLQ).
    With `prefix`, the queues are `<prefix>-main`, `-dlq`, `-operator` and the function
    `<prefix>-replay`, else CloudFormation names them."""

    def named(name: str) -> dict[str, Any]:
        return {"QueueName": f"{prefix}-{name}"} if prefix else {}

    def redrive(target: str, count: int) -> dict[str, Any]:
        return {"deadLetterTargetArn": {"Fn::GetAtt": [target, "Arn"]}, "maxReceiveCount": count}

    function: dict[str, Any] = {
        "Runtime": "python3.13",
        "Handler": "app.handler",
        "Role": {"Fn::GetAtt": ["ReplayRole", "Arn"]},
        "Code": {"ZipFile": "def handler(event, context):\n    return {}\n"},
        "Environment": {
            "Variables": {**FUNCTION_ENVIRONMENT, "OPERATOR_QUEUE_URL": {"Ref": "OperatorQueue"}}
        },
    }
    if prefix:
        function["FunctionName"] = f"{prefix}-replay"
    resources: dict[str, Any] = {
        "OperatorQueue": {"Type": "AWS::SQS::Queue", "Properties": named("operator")},
        "DeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {**named("dlq"), "RedrivePolicy": redrive("OperatorQueue", 50)},
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
        "ReplayFunction": {"Type": "AWS::Lambda::Function", "Properties": function},
        # The stack's table: the operators' audit trail (and the breaker's state).
        "OutageBreakerTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                **TABLE_KEYS,
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
        "AuditTableName": {"Value": {"Ref": "OutageBreakerTable"}},
    }
    if create_main:
        resources["MainQueue"] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {**named("main"), "RedrivePolicy": redrive("DeadLetterQueue", 5)},
        }
        function["Environment"]["Variables"]["MAIN_QUEUE_URL"] = {"Ref": "MainQueue"}
        outputs["MainQueueUrl"] = {"Value": {"Ref": "MainQueue"}}
        outputs["MainQueueArn"] = {"Value": {"Fn::GetAtt": ["MainQueue", "Arn"]}}
    return {"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources, "Outputs": outputs}
