"""What Lambda's outage breaker pulls: the function's own event source mapping on the DLQ (the
one `dlq-replay pause` turns off), and the EventBridge rule that probes while it is open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dlq_replay.breaker.breaker_state import BreakerState, Phase

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


class ProbeRule:
    """The EventBridge rule that ticks the breaker; on only while it is open or half-open."""

    def __init__(self, events: Callable[[], Any], name: str) -> None:
        """`events` makes the EventBridge client, at the first opening."""
        self._events = events
        self.name = name

    def follow(self, state: BreakerState) -> None:
        if state.phase is Phase.OPEN:
            self._events().enable_rule(Name=self.name)
        elif state.phase is Phase.CLOSED:
            self._events().disable_rule(Name=self.name)


class MappingSwitch:
    """The replay function's event source mapping on the DLQ: off to open, on to probe.

    The mapping is found by listing the function's mappings on the DLQ (its UUID is not known
    to the function: the template cannot hand it over without a dependency cycle); the
    function may update exactly that mapping.
    """

    def __init__(
        self, lam: Callable[[], LambdaClient], function_name: str, dlq_arn: str | None = None
    ) -> None:
        """`lam` makes the Lambda client, at the first look at the mapping."""
        self._make_lam = lam
        self._function = function_name
        self._dlq_arn = dlq_arn
        self._uuid: str | None = None

    def uuid(self) -> str:
        """The mapping's UUID: the function's mapping on the DLQ (its only SQS mapping when
        the DLQ is not known, as in a probe)."""
        if self._uuid is None:
            listed = (
                self._make_lam().list_event_source_mappings(
                    FunctionName=self._function, EventSourceArn=self._dlq_arn
                )
                if self._dlq_arn
                else self._make_lam().list_event_source_mappings(FunctionName=self._function)
            )
            mappings = [
                m
                for m in listed.get("EventSourceMappings", [])
                if ":sqs:" in str(m.get("EventSourceArn", ""))
            ]
            if not mappings:
                raise LookupError(f"{self._function} has no event source mapping on the DLQ")
            self._uuid = str(mappings[0]["UUID"])
            self._dlq_arn = str(mappings[0]["EventSourceArn"])
        return self._uuid

    def dlq_arn(self) -> str:
        self.uuid()
        return str(self._dlq_arn)

    def state(self) -> str:
        return str(self._make_lam().get_event_source_mapping(UUID=self.uuid()).get("State", ""))

    def pause(self) -> None:
        self._make_lam().update_event_source_mapping(UUID=self.uuid(), Enabled=False)

    def resume(self) -> None:
        self._make_lam().update_event_source_mapping(UUID=self.uuid(), Enabled=True)

    def resumed_by_someone_else(self) -> bool:
        """While open the mapping stays off; on (or turning on) means an operator, the console
        or a stack update turned it on: the breaker then steps aside."""
        return self.state() in ("Enabled", "Enabling")
