"""`pause` / `resume`: turn the replay's event source on the DLQ off and on.

While paused, SQS keeps the messages in the DLQ (until its retention) and nothing replays
them: the way to stop the replay while the consumer is still broken, without deleting or
moving anything. Lambda changes a mapping's state asynchronously (Disabling -> Disabled), so
`set_event_source` returns at once and `wait_for_state` follows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.status import EventSourceStatus, event_source_status

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


@dataclass(frozen=True, slots=True)
class PauseResult:
    function_name: str
    uuid: str
    before: str  # the mapping's state before the command
    after: str  # its state after (Disabling/Enabling until Lambda is done)
    changed: bool  # False: it already was as asked

    @property
    def enabled(self) -> bool:
        return self.after in ("Enabled", "Enabling")


def set_event_source(
    lam: LambdaClient, function_name: str, dlq_arn: str | None, *, enabled: bool
) -> PauseResult:
    """Enable or disable the function's event source mapping on the DLQ (the first mapping
    when the DLQ is not known); a mapping already in (or going to) that state is left alone."""
    found = _mapping(lam, function_name, dlq_arn)
    uuid, state = str(found.uuid), found.state or "unknown"
    wanted = ("Enabled", "Enabling") if enabled else ("Disabled", "Disabling")
    if state in wanted:
        return PauseResult(function_name, uuid, state, state, changed=False)
    response = lam.update_event_source_mapping(UUID=uuid, Enabled=enabled)
    return PauseResult(function_name, uuid, state, str(response.get("State", "")), changed=True)


def wait_for_state(
    lam: LambdaClient,
    uuid: str,
    state: str,
    *,
    timeout: float,
    poll_seconds: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Poll the mapping until it reaches `state` (Enabled or Disabled); OpsError on timeout."""
    deadline = clock() + timeout
    while True:
        current = str(lam.get_event_source_mapping(UUID=uuid).get("State", ""))
        if current == state:
            return current
        if clock() >= deadline:
            raise OpsError(f"event source {uuid} is still {current} after {timeout:g}s")
        sleep(poll_seconds)


def _mapping(lam: LambdaClient, function_name: str, dlq_arn: str | None) -> EventSourceStatus:
    found = event_source_status(lam, function_name, dlq_arn)
    if found.function_missing:
        raise OpsError(f"no such function: {function_name}")
    if not found.found or not found.uuid:
        where = "on the DLQ" if dlq_arn else "at all"
        raise OpsError(f"{function_name} has no event source mapping {where}")
    return found
