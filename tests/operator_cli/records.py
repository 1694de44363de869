"""Records as each serverless service writes them to its DLQ (AWS's documented shapes), for the
operator commands' tests: an EventBridge rule target's DLQ, a Lambda function's asynchronous
invocation DLQ, and a Lambda OnFailure destination that is an SQS queue."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import boto3

from .support import ACCOUNT, REGION, string

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

RULE_ARN = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/orders-rule"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders"
LAMBDA_REQUEST_ID = "7e4a1a2c-5b0e-4f51-9d3f-0a1b2c3d4e5f"
DESTINATION_REQUEST_ID = "e4b46cbf-b738-xmpl-8880-a18cdf61200e"
EVENT = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "detail-type": "OrderPlaced",
    "source": "shop.orders",
    "account": ACCOUNT,
    "time": "2026-11-27T08:00:00Z",
    "region": REGION,
    "resources": [],
    "detail": {"order": 1},
}


def listed_by_the_rule(target_arn: str) -> None:
    """The rule the records name lists `target_arn` as a target, as EventBridge's own record
    implies (the replay reads the rule's target: its input settings, a FIFO queue's group)."""
    events = boto3.client("events", region_name=REGION)
    rule = RULE_ARN.rsplit("/", 1)[1]
    try:
        listed = events.list_targets_by_rule(Rule=rule)["Targets"]
    except events.exceptions.ResourceNotFoundException:
        events.put_rule(Name=rule, EventPattern='{"source": ["shop.orders"]}')
        listed = []
    if target_arn not in {target["Arn"] for target in listed}:
        events.put_targets(Rule=rule, Targets=[{"Id": f"t{len(listed)}", "Arn": target_arn}])


def send_eventbridge(sqs: SQSClient, url: str, target_arn: str, body: str | None = None) -> str:
    """A rule target's failed event: the event as the body, the rule and target named in
    attributes, with the error the target returned."""
    listed_by_the_rule(target_arn)
    values: dict[str, MessageAttributeValueTypeDef] = {
        "RULE_ARN": string(RULE_ARN),
        "TARGET_ARN": string(target_arn),
        "ERROR_CODE": string("SDK_CLIENT_ERROR"),
        "ERROR_MESSAGE": string("Unable to invoke target: rate exceeded"),
        "EXHAUSTED_RETRY_CONDITION": string("MaximumRetryAttempts"),
        "RETRY_ATTEMPTS": string("185"),
    }
    sent = sqs.send_message(
        QueueUrl=url, MessageBody=body or json.dumps(EVENT), MessageAttributes=values
    )
    return sent["MessageId"]


def send_lambda(sqs: SQSClient, url: str) -> str:
    """A function's asynchronous-invocation DLQ record: the event unchanged as the body,
    RequestID, ErrorCode (a Number) and ErrorMessage as attributes; no function named."""
    values: dict[str, MessageAttributeValueTypeDef] = {
        "RequestID": string(LAMBDA_REQUEST_ID),
        "ErrorCode": string("200", "Number"),
        "ErrorMessage": string("Task timed out after 3.00 seconds"),
    }
    sent = sqs.send_message(QueueUrl=url, MessageBody='{"order": 2}', MessageAttributes=values)
    return sent["MessageId"]


def destination_body() -> str:
    """An OnFailure invocation record (Lambda's documented example, the payload ours)."""
    return json.dumps(
        {
            "version": "1.0",
            "timestamp": "2026-11-27T08:00:05.568Z",
            "requestContext": {
                "requestId": DESTINATION_REQUEST_ID,
                "functionArn": f"{FUNCTION_ARN}:$LATEST",
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 3,
            },
            "requestPayload": {"order": 3},
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": "Unhandled",
            },
            "responsePayload": {
                "errorType": "ValueError",
                "errorMessage": "order 3 has no lines",
            },
        }
    )


def send_destination(sqs: SQSClient, url: str) -> str:
    return sqs.send_message(QueueUrl=url, MessageBody=destination_body())["MessageId"]
