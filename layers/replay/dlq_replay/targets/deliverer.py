"""Deliver records to their targets, several at once, each answered `Delivered` or `Refused`.

A batch of DLQ records is up to 10,000 deliveries, each one API call: one after another they
take as many round trips, so up to `concurrency` run at once (a pool per call, as the SQS
sends do: no thread outlives the invocation). Deliveries to one FIFO queue or topic go one at
a time in the batch's order, as SQS keeps a group's order only as messages are sent.

An EventBridge record (one that names its rule) first gets its target's configuration from
the rule (`rules`, one `ListTargetsByRule` per rule): the target's `Input`, `InputPath` or
`InputTransformer` is applied to the event (core/transform.py), as EventBridge would have
before its delivery failed. A rule that cannot be read, a target the rule no longer has, or a
transformation that cannot be applied is the record's refusal: nothing is sent.

No delivery raises: every error of a target's API, after botocore's retries (throttling and
5xx), is the record's `Refused(code, message)`, and the replay decides what it means.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.queues import Arn
from dlq_replay.core.transform import NotApplied, target_payload
from dlq_replay.targets.clients import TargetClients
from dlq_replay.targets.delivery import Delivery, DeliveryResult, Refused, service_error
from dlq_replay.targets.rule_targets import RuleLookupError, RuleTarget, RuleTargets, rule_location
from dlq_replay.targets.services import sender


class Deliverer:
    """Sends each `Delivery` by its target's service (`services`), with clients from
    `clients`; keeps the rules' targets it read for its own lifetime (a failed read for the
    rest of one `deliver`)."""

    def __init__(self, clients: TargetClients, *, concurrency: int = 8) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._clients = clients
        self._concurrency = concurrency
        self._rules = RuleTargets(clients)

    def deliver(self, deliveries: Sequence[Delivery]) -> dict[str, DeliveryResult]:
        """Deliver them all; the result maps each record id to what came of it."""
        self._rules.forget_failures()
        tasks = _in_order_per_fifo_target(deliveries)
        outcomes: dict[str, DeliveryResult] = {}
        workers = min(self._concurrency, len(tasks))
        if workers <= 1:
            for task in tasks:
                outcomes.update(self._deliver_in_order(task))
            return outcomes
        with ThreadPoolExecutor(workers, thread_name_prefix="deliver") as pool:
            for result in pool.map(self._deliver_in_order, tasks):
                outcomes.update(result)
        return outcomes

    def _deliver_in_order(self, task: Sequence[Delivery]) -> dict[str, DeliveryResult]:
        return {delivery.record_id: self._deliver_one(delivery) for delivery in task}

    def _deliver_one(self, delivery: Delivery) -> DeliveryResult:
        """One delivery; every error it meets is its refusal."""
        try:
            return self._send(delivery)
        except (ClientError, BotoCoreError) as error:
            return Refused(delivery.record_id, *service_error(error))
        except RuleLookupError as error:
            return Refused(delivery.record_id, error.code, error.message)
        except ValueError as error:
            # A malformed target or rule ARN (a forged record that still passed the checks).
            return Refused(delivery.record_id, "InvalidTarget", str(error))
        except Exception as error:  # an answer we cannot read: this record's refusal alone
            return Refused(delivery.record_id, type(error).__name__, str(error))

    def _send(self, delivery: Delivery) -> DeliveryResult:
        """The delivery by its target's service, the rule's configuration applied first."""
        send = sender(delivery.target_arn)
        if send is None:
            return Refused(
                delivery.record_id,
                "UnsupportedTarget",
                f"no delivery to this target: {delivery.target_arn}",
            )
        arn = Arn.parse(delivery.target_arn)
        if delivery.rule_arn is None:
            return send(self._clients, delivery, arn, None)
        rule = self._rules.target(delivery.rule_arn, delivery.target_arn, delivery.account)
        if rule is None:
            return Refused(
                delivery.record_id,
                "TargetNotInRule",
                f"rule {delivery.rule_arn} has no target {delivery.target_arn}: what it "
                "would be given is unknown",
            )
        transformed = _as_the_rule_gives_it(delivery, rule)
        if isinstance(transformed, Refused):
            return transformed
        return send(self._clients, transformed, arn, rule)


def _as_the_rule_gives_it(delivery: Delivery, rule: RuleTarget) -> Delivery | Refused:
    """The delivery with the payload the rule's target is given: the event transformed by the
    target's input settings, or the refusal that says why it cannot be."""
    if not rule.input.transforms:
        return delivery
    rule_arn = delivery.rule_arn or ""
    payload = target_payload(
        delivery.payload, rule.input, rule_arn=rule_arn, rule_name=rule_location(rule_arn)[1]
    )
    if isinstance(payload, NotApplied):
        return Refused(delivery.record_id, "TransformNotApplied", payload.reason)
    return replace(delivery, payload=payload)


def _in_order_per_fifo_target(deliveries: Sequence[Delivery]) -> list[list[Delivery]]:
    """Tasks for the pool: one per delivery, but a FIFO target's deliveries all in one task, in
    the batch's order."""
    tasks: list[list[Delivery]] = []
    fifo: dict[str, list[Delivery]] = {}
    for delivery in deliveries:
        if delivery.target_arn.endswith(".fifo"):
            if delivery.target_arn not in fifo:
                fifo[delivery.target_arn] = []
                tasks.append(fifo[delivery.target_arn])
            fifo[delivery.target_arn].append(delivery)
        else:
            tasks.append([delivery])
    return tasks
