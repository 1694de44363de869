"""`pause` / `resume`: turn the replay's event source on the DLQ off and on (Lambda changes a
mapping's state asynchronously: `wait_for_state` follows it), and the outage breaker they take
over from, which the function's environment names (OUTAGE_BREAKER_TABLE). An operator's `pause`
or `resume` closes an open breaker, so that it never turns the event source back on by itself:
the operator's pause stands until the operator resumes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.breaker.breaker_state import BreakerState, Cause, by_operator
from dlq_replay.breaker.function import TABLE_VARIABLE, DynamoBreakerStore
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.stack import function_environment
from dlq_replay.ops.status import event_source_status

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


@dataclass(frozen=True, slots=True)
class PauseResult:
    function_name: str
    uuid: str
    before: str  # the mapping's state before the command
    after: str  # its state after (Disabling/Enabling until Lambda is done)
    changed: bool  # False: it already was as asked


def set_event_source(
    lam: LambdaClient, function_name: str, dlq_arn: str | None, *, enabled: bool
) -> PauseResult:
    """Enable or disable the function's event source mapping on the DLQ (the first mapping
    when the DLQ is not known); a mapping already in (or going to) that state is left alone."""
    found = event_source_status(lam, function_name, dlq_arn)
    if found.function_missing:
        raise OpsError(f"no such function: {function_name}")
    if not found.found or not found.uuid:
        where = "on the DLQ" if dlq_arn else "at all"
        raise OpsError(f"{function_name} has no event source mapping {where}")
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


@dataclass(frozen=True, slots=True)
class BreakerStatus:
    """The breaker as `status` shows it; `note` says why it could not be read."""

    table: str | None  # None: the function has no breaker (OutageBreaker=off)
    state: BreakerState | None = None
    note: str | None = None

    @property
    def phase(self) -> str:
        if self.table is None:
            return "off"
        return self.state.phase.value if self.state else "unknown"


def breaker_table(lam: LambdaClient, function_name: str) -> str | None:
    return function_environment(lam, function_name).get(TABLE_VARIABLE) or None


def breaker_status(lam: LambdaClient, dynamodb: Any, function_name: str) -> BreakerStatus:
    """The breaker's state; a failure to read it is a note, not an error (status goes on)."""
    try:
        table = breaker_table(lam, function_name)
        if table is None:
            return BreakerStatus(None)
        return BreakerStatus(table, DynamoBreakerStore(lambda: dynamodb, table).load())
    except ClientError as error:
        reason = str(error.response.get("Error", {}).get("Code", "error"))
    except BotoCoreError as error:
        reason = type(error).__name__
    return BreakerStatus("?", note=f"outage breaker unreadable: {reason}")


def operator_took_over(
    lam: LambdaClient, dynamodb: Any, function_name: str, *, paused: bool, now: float | None = None
) -> BreakerState | None:
    """Close an open (or half-open) breaker after the operator's `pause` or `resume`; the new
    state, or None when there was nothing to close (no breaker, or closed already)."""
    table = breaker_table(lam, function_name)
    if table is None:
        return None
    store = DynamoBreakerStore(lambda: dynamodb, table)
    state = store.load()
    cause = Cause.OPERATOR_PAUSE if paused else Cause.OPERATOR_RESUME
    closed = by_operator(state, time.time() if now is None else now, cause)
    return closed if closed is not None and store.save(closed, state.version) else None
