"""A FIFO target's message group id, as the EventBridge rule's target configures it.

EventBridge sends to a FIFO queue with the group id of the rule's target
(`SqsParameters.MessageGroupId`); the DLQ record names the rule (`RULE_ARN`) and the target
(`TARGET_ARN`) but not the group, so it is read back with `ListTargetsByRule`, once per rule.
"""

from __future__ import annotations

import threading

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.targets.clients import TargetArn, TargetClients
from dlq_replay.targets.delivery import service_error

# A rule's ARN: `arn:<partition>:events:<region>:<account>:rule/[<bus name>/]<rule name>`; a
# bus name may hold slashes (a partner bus, `aws.partner/<saas>/<name>`), a rule name may not.
_RULE_PREFIX = "rule/"


def rule_location(rule_arn: str) -> tuple[str, str, str | None]:
    """(region, rule name, event bus name or None for the account's default bus)."""
    arn = TargetArn.parse(rule_arn)
    if arn.service != "events" or not arn.resource.startswith(_RULE_PREFIX):
        raise ValueError(f"not an EventBridge rule ARN: {rule_arn!r}")
    bus, _, name = arn.resource.removeprefix(_RULE_PREFIX).rpartition("/")
    if not name:
        raise ValueError(f"not an EventBridge rule ARN: {rule_arn!r}")
    return arn.region, name, bus or None


class GroupLookupError(Exception):
    """The rule's targets could not be read: the error, as a refusal reports it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class GroupIds:
    """Each rule's targets' message group ids, read once per rule and kept: a rule's target
    configuration seldom changes, and a batch of records from one rule's DLQ asks the same
    question many times. A failed read is kept until `forget_failures` (the next batch asks
    again): a thousand records of a rule whose read is throttled make one read, not a
    thousand in a row."""

    def __init__(self, clients: TargetClients) -> None:
        self._clients = clients
        self._by_rule: dict[str, dict[str, str]] = {}
        self._failed: dict[str, tuple[str, str]] = {}
        # One read per rule even when its records are delivered concurrently.
        self._lock = threading.Lock()

    def forget_failures(self) -> None:
        with self._lock:
            self._failed.clear()

    def group_id(self, rule_arn: str, target_arn: str) -> str | None:
        """The group id the rule's target `target_arn` sends with, or None (no such target,
        or no group id). Raises `GroupLookupError` when the rule's targets could not be read,
        ValueError for a malformed rule ARN."""
        with self._lock:
            if rule_arn in self._failed:
                raise GroupLookupError(*self._failed[rule_arn])
            groups = self._by_rule.get(rule_arn)
            if groups is None:
                try:
                    groups = self._read(rule_arn)
                except (ClientError, BotoCoreError) as error:
                    self._failed[rule_arn] = service_error(error)
                    raise GroupLookupError(*self._failed[rule_arn]) from error
                self._by_rule[rule_arn] = groups
        return groups.get(target_arn)

    def _read(self, rule_arn: str) -> dict[str, str]:
        region, name, bus = rule_location(rule_arn)
        paginator = self._clients.events(region).get_paginator("list_targets_by_rule")
        pages = (
            paginator.paginate(Rule=name)
            if bus is None
            else paginator.paginate(Rule=name, EventBusName=bus)
        )
        groups: dict[str, str] = {}
        for page in pages:
            for target in page.get("Targets", []):
                group = target.get("SqsParameters", {}).get("MessageGroupId")
                if group:
                    groups[target["Arn"]] = group
        return groups
