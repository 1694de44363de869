"""Deliver records to their targets, several at once, each answered `Delivered` or `Refused`.

A batch of DLQ records is up to 10,000 deliveries, each one API call: one after another they
take as many round trips, so up to `concurrency` run at once (a pool per call, as the SQS
sends do: no thread outlives the invocation). Deliveries to one FIFO queue or topic go one at
a time in the batch's order, as SQS keeps a group's order only as messages are sent.

No delivery raises: every error of a target's API, after botocore's retries (throttling and
5xx), is the record's `Refused(code, message)`, and the replay decides what it means.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.targets.clients import TargetArn, TargetClients
from dlq_replay.targets.delivery import Delivery, Outcome, Refused, service_error
from dlq_replay.targets.groups import GroupIds, GroupLookupError
from dlq_replay.targets.services import sender


class Deliverer:
    """Sends each `Delivery` by its target's service (`services`), with clients from
    `clients`; keeps the FIFO group ids it read per rule for its own lifetime (a failed read
    for the rest of one `deliver`)."""

    def __init__(self, clients: TargetClients, *, concurrency: int = 8) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._clients = clients
        self._concurrency = concurrency
        self._groups = GroupIds(clients)

    def deliver(self, deliveries: Sequence[Delivery]) -> dict[str, Outcome]:
        """Deliver them all; the result maps each record id to what came of it."""
        self._groups.forget_failures()
        tasks = _in_order_per_fifo_target(deliveries)
        outcomes: dict[str, Outcome] = {}
        workers = min(self._concurrency, len(tasks))
        if workers <= 1:
            for task in tasks:
                outcomes.update(self._deliver_in_order(task))
            return outcomes
        with ThreadPoolExecutor(workers, thread_name_prefix="deliver") as pool:
            for result in pool.map(self._deliver_in_order, tasks):
                outcomes.update(result)
        return outcomes

    def _deliver_in_order(self, task: Sequence[Delivery]) -> dict[str, Outcome]:
        return {delivery.record_id: self._deliver_one(delivery) for delivery in task}

    def _deliver_one(self, delivery: Delivery) -> Outcome:
        try:
            send = sender(delivery.target_arn)
            if send is None:
                return Refused(
                    delivery.record_id,
                    "UnsupportedTarget",
                    f"no delivery to this target: {delivery.target_arn}",
                )
            return send(self._clients, self._groups, delivery, TargetArn.parse(delivery.target_arn))
        except (ClientError, BotoCoreError) as error:
            return Refused(delivery.record_id, *service_error(error))
        except GroupLookupError as error:
            return Refused(delivery.record_id, error.code, error.message)
        except ValueError as error:
            # A malformed target or rule ARN (a forged record that still passed the checks).
            return Refused(delivery.record_id, "InvalidTarget", str(error))


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
