"""A rule's target as the rule configures it: a FIFO queue's message group id and the input
the target is given (`Input`, `InputPath`, `InputTransformer`). The DLQ record names the rule
and the target but neither of these, so they are read back with `ListTargetsByRule`, once per
rule.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.queues import Arn, rule_location
from dlq_replay.core.transform import TargetInput
from dlq_replay.targets.clients import TargetClients

if TYPE_CHECKING:
    from mypy_boto3_events.type_defs import TargetOutputTypeDef


@dataclass(frozen=True, slots=True)
class RuleTarget:
    """What the rule says of one of its targets."""

    group_id: str | None  # SqsParameters.MessageGroupId
    input: TargetInput


class RuleTargets:
    """Each rule's targets, read once per rule and kept: a rule's target configuration seldom
    changes, and a batch of records from one rule's DLQ asks the same question many times. A
    failed read is kept until `forget_failures` (the next batch asks again): a thousand
    records of a rule whose read is throttled make one read, not a thousand in a row."""

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
        """The rule's target `target_arn`, or None when the rule has no such target; a rule of
        an account other than `home_account` (the DLQ's) is read on its bus by ARN. Raises
        botocore's error when the rule's targets could not be read, ValueError for a malformed
        rule ARN."""
        with self._lock:
            if rule_arn in self._failed:
                # Raised again for each of the rule's records: a fresh traceback each time, or
                # the one error would hold the frames of them all.
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
            # ListTargetsByRule takes the bus's ARN for a rule on another account's bus.
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
