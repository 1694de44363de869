"""The outage breaker for the operator: what `status` shows, and how `pause`/`resume` take
over from it.

The function's environment names the breaker's table (OUTAGE_BREAKER_TABLE, set by the
template when OutageBreaker is on), so `--function-name` finds it as `--stack` does. An
operator's `pause` or `resume` closes an open breaker: it then never turns the event source
back on by itself (the operator's pause stands until the operator resumes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.breaker.breaker_state import BreakerState, Cause, by_operator
from dlq_replay.breaker.dynamo import TABLE_VARIABLE, DynamoBreakerStore
from dlq_replay.ops.stack import function_environment

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


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
    """The function's breaker table; None when it has none."""
    return function_environment(lam, function_name).get(TABLE_VARIABLE) or None


def breaker_status(lam: LambdaClient, dynamodb: Any, function_name: str) -> BreakerStatus:
    """The breaker's state; a failure to read it is a note, not an error (status goes on)."""
    try:
        table = breaker_table(lam, function_name)
        if table is None:
            return BreakerStatus(None)
        return BreakerStatus(table, DynamoBreakerStore(lambda: dynamodb, table).load())
    except (ClientError, BotoCoreError) as error:
        return BreakerStatus("?", note=f"outage breaker unreadable: {_reason(error)}")


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
    if closed is None or not store.save(closed, state.version):
        return None
    return closed


def _reason(error: Exception) -> str:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "error"))
    return type(error).__name__
