"""One delivery by the call the target's service makes itself (Lambda `Invoke`, SQS
`SendMessage`, SNS `Publish`, `StartExecution`, `PutEvents`), its errors raised; a rule's
configuration of the target, not in the record, read back by `RuleTargets`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.queues import Arn, TargetService, is_fifo_arn, rule_location, target_service
from dlq_replay.core.transform import TargetInput
from dlq_replay.targets.clients import TargetClients
from dlq_replay.targets.delivery import Delivered, Delivery, DeliveryResult, RefusalCode, Refused

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_events.type_defs import PutEventsRequestEntryTypeDef, TargetOutputTypeDef
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageRequestTypeDef
    from mypy_boto3_stepfunctions import SFNClient


@dataclass(frozen=True, slots=True)
class RuleTarget:
    group_id: str | None  # SqsParameters.MessageGroupId
    input: TargetInput


class RuleTargets:
    """Each rule's targets, read once per rule and kept; a failed read is kept until
    `forget_failures`, so a throttled rule's thousand records make one read."""

    def __init__(self, clients: TargetClients) -> None:
        self._clients = clients
        self._by_rule: dict[str, Mapping[str, RuleTarget]] = {}
        self._failed: dict[str, ClientError | BotoCoreError] = {}
        # One read per rule even when its records are delivered concurrently.
        self._lock = threading.Lock()

    def forget_failures(self) -> None:
        with self._lock:
            self._failed.clear()

    def target(
        self, rule_arn: str, target_arn: str, home_account: str | None = None
    ) -> RuleTarget | None:
        """The rule's target `target_arn`, or None (another account's rule read by bus ARN)."""
        with self._lock:
            if rule_arn in self._failed:
                # A fresh traceback each time, or the one error would hold every record's frames.
                raise self._failed[rule_arn].with_traceback(None)
            targets = self._by_rule.get(rule_arn)
            if targets is None:
                try:
                    targets = self._read(rule_arn, home_account)
                except (ClientError, BotoCoreError) as error:
                    self._failed[rule_arn] = error
                    raise
                self._by_rule[rule_arn] = targets
        return targets.get(target_arn)

    def _read(self, rule_arn: str, home_account: str | None) -> dict[str, RuleTarget]:
        region, name, bus = rule_location(rule_arn)
        arn = Arn.parse(rule_arn)
        if home_account and arn.account and arn.account != home_account:
            bus = arn.sibling(f"event-bus/{bus or 'default'}")
        paginator = self._clients.events(region).get_paginator("list_targets_by_rule")
        pages = (
            paginator.paginate(Rule=name)
            if bus is None
            else paginator.paginate(Rule=name, EventBusName=bus)
        )
        return {
            target["Arn"]: _rule_target(target)
            for page in pages
            for target in page.get("Targets", [])
        }


def _rule_target(target: TargetOutputTypeDef) -> RuleTarget:
    transformer = target.get("InputTransformer", {})
    return RuleTarget(
        group_id=target.get("SqsParameters", {}).get("MessageGroupId") or None,
        input=TargetInput(
            input=target.get("Input"),
            input_path=target.get("InputPath"),
            paths=tuple(sorted(transformer.get("InputPathsMap", {}).items())),
            template=transformer.get("InputTemplate"),
        ),
    )


def call_target(
    clients: TargetClients, delivery: Delivery, rule: RuleTarget | None
) -> DeliveryResult:
    """`delivery` by its target's service, with its rule's configuration of the target."""
    region = Arn.parse(delivery.target_arn).region
    match target_service(delivery.target_arn):
        case TargetService.LAMBDA:
            return invoke_function(clients.lambda_client(region), delivery)
        case TargetService.SQS:
            return send_to_queue(clients.sqs(region), delivery, rule)
        case TargetService.SNS:
            return publish_to_topic(clients.sns(region), delivery)
        case TargetService.STATES:
            return start_execution(clients.stepfunctions(region), delivery)
        case TargetService.EVENTS:
            return put_event(clients.events(region), delivery)
    raise ValueError(f"no delivery to this target: {delivery.target_arn}")  # the deliverer's check


def invoke_function(client: LambdaClient, delivery: Delivery) -> DeliveryResult:
    response = client.invoke(
        FunctionName=delivery.target_arn,
        InvocationType="Event",
        Payload=delivery.payload.encode("utf-8"),
    )
    # An Event invocation's answer has an empty body; reading it hands the connection back to
    # the pool (unread, each Invoke opened a connection of its own: bench/bench_kinds.py).
    response["Payload"].read()
    return Delivered(delivery.record_id, response["ResponseMetadata"]["RequestId"])


def send_to_queue(sqs: SQSClient, delivery: Delivery, rule: RuleTarget | None) -> DeliveryResult:
    queue = Arn.queue(delivery.target_arn)
    # The URL on the client's own endpoint: AWS's, or an emulator's from AWS_ENDPOINT_URL.
    request: SendMessageRequestTypeDef = {
        "QueueUrl": queue.url(sqs.meta.endpoint_url),
        "MessageBody": delivery.payload,
    }
    group = rule.group_id if rule else None
    if queue.is_fifo and group is None:
        return _no_group(
            delivery,
            f"rule {delivery.rule_arn} has no group id for the target"
            if rule
            else "the record names no rule to read it from",
        )
    if group is not None:  # a FIFO queue's group, or a fair queue's tenant, as the rule says
        request["MessageGroupId"] = group
    if queue.is_fifo and delivery.dedup_id is not None:
        request["MessageDeduplicationId"] = delivery.dedup_id
    sqs.send_message(**request)
    return Delivered(delivery.record_id, None)


def publish_to_topic(sns: SNSClient, delivery: Delivery) -> DeliveryResult:
    if is_fifo_arn(delivery.target_arn):
        return _no_group(delivery, "an EventBridge target names no group id for a FIFO topic")
    sns.publish(TopicArn=delivery.target_arn, Message=delivery.payload)
    return Delivered(delivery.record_id, None)


def start_execution(client: SFNClient, delivery: Delivery) -> DeliveryResult:
    # ExecutionAlreadyExists: this record's attempt started it already (a retried request).
    with contextlib.suppress(client.exceptions.ExecutionAlreadyExists):
        client.start_execution(
            stateMachineArn=delivery.target_arn,
            input=delivery.payload,
            name=execution_name(delivery.dedup_id or delivery.record_id),
        )
    return Delivered(delivery.record_id, None)


def execution_name(key: str) -> str:
    """A Step Functions execution name (75 of [a-z0-9-]), the same for a retried request."""
    return f"dlq-replay-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"


def put_event(client: EventBridgeClient, delivery: Delivery) -> DeliveryResult:
    entry = event_entry(delivery.payload, delivery.target_arn)
    if isinstance(entry, str):
        return Refused(delivery.record_id, RefusalCode.NOT_AN_EVENT, entry)
    response = client.put_events(Entries=[entry])
    if response.get("FailedEntryCount", 0):
        failed = response["Entries"][0]
        return Refused(
            delivery.record_id,
            failed.get("ErrorCode", RefusalCode.FAILED_ENTRY),
            failed.get("ErrorMessage", "PutEvents did not accept the event"),
        )
    return Delivered(delivery.record_id, None)


def event_entry(payload: str, bus_arn: str) -> PutEventsRequestEntryTypeDef | str:
    """The `PutEvents` entry of the event in `payload`, or why it is not a whole event."""
    try:
        event = json.loads(payload)
    except (ValueError, RecursionError):
        return "the payload is not JSON (or nested past the parser's depth)"
    problem = _not_an_event(event)
    if problem is not None:
        return problem
    entry: PutEventsRequestEntryTypeDef = {
        "Source": event["source"],
        "DetailType": event["detail-type"],
        "Detail": json.dumps(event["detail"], ensure_ascii=False, separators=(",", ":")),
        "Resources": event.get("resources", []),
        "EventBusName": bus_arn,
    }
    if "time" in event:
        try:
            entry["Time"] = datetime.fromisoformat(event["time"])
        except (TypeError, ValueError):
            return "the payload's time is not an ISO 8601 time"
    return entry


def _not_an_event(event: Any) -> str | None:
    if not isinstance(event, dict):
        return "the payload is not a JSON object"
    if not isinstance(event.get("source"), str) or not isinstance(event.get("detail-type"), str):
        return "the payload has no source or detail-type"
    if not isinstance(event.get("detail"), dict):
        return "the payload's detail is not a JSON object"
    resources = event.get("resources", [])
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        return "the payload's resources are not a list of ARNs"
    return None


def _no_group(delivery: Delivery, why: str) -> Refused:
    why = f"FIFO target without a group id: {why}"
    return Refused(delivery.record_id, RefusalCode.MISSING_GROUP_ID, why)
