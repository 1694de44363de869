"""Deliver records to their targets, up to `concurrency` at once (a FIFO target's one at a time,
in the batch's order); no delivery raises."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.queues import is_fifo_arn, is_target_arn, rule_location
from dlq_replay.core.transform import NotApplied, target_payload
from dlq_replay.targets.clients import TargetClients
from dlq_replay.targets.delivery import Delivery, DeliveryResult, RefusalCode, Refused
from dlq_replay.targets.services import RuleTargets, call_target


class Deliverer:
    """Keeps the rules' targets it read (a failed read for the rest of one `deliver`)."""

    def __init__(self, clients: TargetClients, *, concurrency: int = 8) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._clients = clients
        self._concurrency = concurrency
        self._rules = RuleTargets(clients)

    def deliver(self, deliveries: Sequence[Delivery]) -> dict[str, DeliveryResult]:
        self._rules.forget_failures()
        tasks = _in_order_per_fifo_target(deliveries)
        workers = min(self._concurrency, len(tasks))
        if workers <= 1:
            return _by_record(map(self._deliver_in_order, tasks))
        with ThreadPoolExecutor(workers, thread_name_prefix="deliver") as pool:
            return _by_record(pool.map(self._deliver_in_order, tasks))

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
            return call_target(self._clients, delivery, None)
        rule = self._rules.target(delivery.rule_arn, delivery.target_arn, delivery.account)
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
        return call_target(self._clients, replace(delivery, payload=payload), rule)


def _refusal(record_id: str, error: Exception) -> Refused:
    """The service's code and message; `InvalidTarget` for a bad ARN; else the exception's."""
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        code, message = info.get("Code") or RefusalCode.CLIENT_ERROR, info.get("Message") or error
        return Refused(record_id, str(code), str(message))
    if isinstance(error, ValueError) and not isinstance(error, BotoCoreError):
        return Refused(record_id, RefusalCode.INVALID_TARGET, str(error))
    return Refused(record_id, type(error).__name__, str(error))


def _by_record(done: Iterable[list[DeliveryResult]]) -> dict[str, DeliveryResult]:
    return {result.record_id: result for results in done for result in results}


def _in_order_per_fifo_target(deliveries: Sequence[Delivery]) -> list[list[Delivery]]:
    """Tasks for the pool: one per delivery, a FIFO target's all in one, in the batch's order."""
    tasks: dict[str | int, list[Delivery]] = {}
    for index, delivery in enumerate(deliveries):
        fifo = is_fifo_arn(delivery.target_arn)
        tasks.setdefault(delivery.target_arn if fifo else index, []).append(delivery)
    return list(tasks.values())
