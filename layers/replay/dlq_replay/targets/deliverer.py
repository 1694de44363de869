"""Deliver records to their targets by the call the target's service makes itself (Lambda
`Invoke`, SQS `SendMessage`, SNS `Publish`, `StartExecution`, `PutEvents`), up to `concurrency`
at once (a FIFO target's one at a time, in the batch's order); no delivery raises."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay import __version__
from dlq_replay.core.messages import in_order_per_key, run_tasks
from dlq_replay.core.queues import (
    Arn,
    TargetService,
    is_fifo_arn,
    is_target_arn,
    rule_location,
    target_service,
)
from dlq_replay.core.settings import SEND_CONCURRENCY_LIMIT
from dlq_replay.core.transform import NotApplied, TargetInput, target_payload
from dlq_replay.targets.delivery import Delivered, Delivery, DeliveryResult, RefusalCode, Refused

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_events.type_defs import PutEventsRequestEntryTypeDef, TargetOutputTypeDef
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageRequestTypeDef
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
        endpoint_url: Callable[[str], str | None] | None = None,
    ) -> None:
        self._session = session
        self._url_of = endpoint_url or (lambda _: None)
        self._clients: dict[tuple[str, str], Any] = {}
        # Making a client from a session is not thread-safe; deliveries run on a pool.
        self._lock = threading.Lock()

    # Typed per service, so that mypy checks each delivery's request.
    @overload
    def client(self, service: Literal["lambda"], region: str) -> LambdaClient: ...
    @overload
    def client(self, service: Literal["sqs"], region: str) -> SQSClient: ...
    @overload
    def client(self, service: Literal["sns"], region: str) -> SNSClient: ...
    @overload
    def client(self, service: Literal["stepfunctions"], region: str) -> SFNClient: ...
    @overload
    def client(self, service: Literal["events"], region: str) -> EventBridgeClient: ...

    def client(self, service: str, region: str) -> Any:
        """The client of `service` (a boto3 service name) in `region`."""
        with self._lock:
            if (service, region) not in self._clients:
                self._session = self._session or boto3.Session()
                self._clients[service, region] = self._session.client(
                    service,  # type: ignore[call-overload]
                    region,
                    config=TARGET_CLIENT_CONFIG,
                    endpoint_url=self._url_of(service),
                )
            return self._clients[service, region]


@dataclass(frozen=True, slots=True)
class RuleTarget:
    """A rule's configuration of the target, not in the record: read back from the rule."""

    group_id: str | None  # SqsParameters.MessageGroupId
    input: TargetInput


class Deliverer:
    """Keeps each rule's targets it read; a failed read for the rest of one `deliver`, so a
    throttled rule's thousand records make one read."""

    def __init__(self, clients: TargetClients, *, concurrency: int = 8) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._clients = clients
        self._concurrency = concurrency
        self._by_rule: dict[str, Mapping[str, RuleTarget]] = {}
        self._failed: dict[str, ClientError | BotoCoreError] = {}
        # One read per rule even when its records are delivered concurrently.
        self._lock = threading.Lock()

    def deliver(self, deliveries: Sequence[Delivery]) -> dict[str, DeliveryResult]:
        with self._lock:
            self._failed.clear()
        # One task per delivery, a FIFO target's all in one, in the batch's order.
        tasks = in_order_per_key(deliveries, attrgetter("target_arn"))
        done = run_tasks(self._deliver_in_order, tasks, self._concurrency, "deliver")
        return {result.record_id: result for results in done for result in results}

    def _deliver_in_order(self, task: Sequence[Delivery]) -> list[DeliveryResult]:
        return [self._deliver_one(delivery) for delivery in task]

    def _deliver_one(self, delivery: Delivery) -> DeliveryResult:
        try:
            return self._send(delivery)
        except Exception as error:  # whatever it is, this record's refusal alone
            return _refusal(delivery.record_id, error)

    def _send(self, delivery: Delivery) -> DeliveryResult:
        if not is_target_arn(delivery.target_arn):
            why = f"no delivery to this target: {delivery.target_arn}"
            return Refused(delivery.record_id, RefusalCode.UNSUPPORTED_TARGET, why)
        if delivery.rule_arn is None:
            return self._call(delivery, None)
        rule = self._rule_target(delivery.rule_arn, delivery.target_arn, delivery.account)
        if rule is None:
            return Refused(
                delivery.record_id,
                RefusalCode.TARGET_NOT_IN_RULE,
                f"rule {delivery.rule_arn} has no target {delivery.target_arn}: what it "
                "would be given is unknown",
            )
        payload = target_payload(
            delivery.payload,
            rule.input,
            rule_arn=delivery.rule_arn,
            rule_name=rule_location(delivery.rule_arn)[1],
        )
        if isinstance(payload, NotApplied):
            return Refused(delivery.record_id, RefusalCode.TRANSFORM_NOT_APPLIED, payload.reason)
        return self._call(replace(delivery, payload=payload), rule)

    def _rule_target(
        self, rule_arn: str, target_arn: str, home_account: str | None
    ) -> RuleTarget | None:
        """The rule's target `target_arn`, or None (another account's rule read by bus ARN)."""
        with self._lock:
            if rule_arn in self._failed:
                # A fresh traceback each time, or the one error would hold every record's frames.
                raise self._failed[rule_arn].with_traceback(None)
            targets = self._by_rule.get(rule_arn)
            if targets is None:
                try:
                    targets = self._read_rule(rule_arn, home_account)
                except (ClientError, BotoCoreError) as error:
                    self._failed[rule_arn] = error
                    raise
                self._by_rule[rule_arn] = targets
        return targets.get(target_arn)

    def _read_rule(self, rule_arn: str, home_account: str | None) -> dict[str, RuleTarget]:
        region, name, bus = rule_location(rule_arn)
        arn = Arn.parse(rule_arn)
        if home_account and arn.account and arn.account != home_account:
            bus = arn.sibling(f"event-bus/{bus or 'default'}")
        paginator = self._clients.client("events", region).get_paginator("list_targets_by_rule")
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

    def _call(self, delivery: Delivery, rule: RuleTarget | None) -> DeliveryResult:
        """`delivery` by its target's service, with its rule's configuration of the target."""
        target, record_id = delivery.target_arn, delivery.record_id
        region = Arn.parse(target).region
        match target_service(target):
            case TargetService.LAMBDA:
                response = self._clients.client("lambda", region).invoke(
                    FunctionName=target, InvocationType="Event", Payload=delivery.payload.encode()
                )
                # An Event invocation's answer has an empty body; reading it hands the
                # connection back to the pool (unread, each Invoke opened a connection of its
                # own: bench/bench_kinds.py).
                response["Payload"].read()
                return Delivered(record_id, response["ResponseMetadata"]["RequestId"])
            case TargetService.SQS:
                return _send_to_queue(self._clients.client("sqs", region), delivery, rule)
            case TargetService.SNS:
                if is_fifo_arn(target):
                    why = "an EventBridge target names no group id for a FIFO topic"
                    return _no_group(delivery, why)
                self._clients.client("sns", region).publish(
                    TopicArn=target, Message=delivery.payload
                )
                return Delivered(record_id, None)
            case TargetService.STATES:
                client = self._clients.client("stepfunctions", region)
                # ExecutionAlreadyExists: this record's attempt started it already (a retry).
                with contextlib.suppress(client.exceptions.ExecutionAlreadyExists):
                    client.start_execution(
                        stateMachineArn=target,
                        input=delivery.payload,
                        name=execution_name(delivery.dedup_id or record_id),
                    )
                return Delivered(record_id, None)
            case TargetService.EVENTS:
                return _put_event(self._clients.client("events", region), delivery)
        raise ValueError(f"no delivery to this target: {target}")  # `_send`'s check


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


def _send_to_queue(sqs: SQSClient, delivery: Delivery, rule: RuleTarget | None) -> DeliveryResult:
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


def _put_event(client: EventBridgeClient, delivery: Delivery) -> DeliveryResult:
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


def execution_name(key: str) -> str:
    """A Step Functions execution name (75 of [a-z0-9-]), the same for a retried request."""
    return f"dlq-replay-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()}"


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


def _refusal(record_id: str, error: Exception) -> Refused:
    """The service's code and message; `InvalidTarget` for a bad ARN; else the exception's."""
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        code, message = info.get("Code") or RefusalCode.CLIENT_ERROR, info.get("Message") or error
        return Refused(record_id, str(code), str(message))
    if isinstance(error, ValueError) and not isinstance(error, BotoCoreError):
        return Refused(record_id, RefusalCode.INVALID_TARGET, str(error))
    return Refused(record_id, type(error).__name__, str(error))
