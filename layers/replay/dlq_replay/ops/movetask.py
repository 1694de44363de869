"""SQS's native move task (StartMessageMoveTask): it only takes a queue that is some queue's
DLQ as its source, and moves messages unchanged."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlq_replay.ops.opserror import OpsError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


MAX_MOVE_RATE = 500  # StartMessageMoveTask's MaxNumberOfMessagesPerSecond limit
_FINAL_MOVE_STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED"})


@dataclass(frozen=True, slots=True)
class MoveTask:
    status: str  # RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED
    moved: int
    to_move: int | None
    handle: str | None = None
    failure_reason: str | None = None
    source_arn: str | None = None
    destination_arn: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in _FINAL_MOVE_STATES

    @property
    def succeeded(self) -> bool:
        return self.status == "COMPLETED"


def start_move_task(
    sqs: SQSClient, source_arn: str, destination_arn: str | None, rate: float | None
) -> str:
    """Start SQS's own move task; returns its handle. No destination: back to the sources."""
    params: dict[str, Any] = {"SourceArn": source_arn}
    if destination_arn is not None:
        params["DestinationArn"] = destination_arn
    if rate is not None:
        params["MaxNumberOfMessagesPerSecond"] = max(1, min(MAX_MOVE_RATE, math.floor(rate)))
    return sqs.start_message_move_task(**params)["TaskHandle"]


def latest_move_task(sqs: SQSClient, source_arn: str) -> MoveTask | None:
    """The most recent move task of a source queue (only one can run at a time)."""
    results = sqs.list_message_move_tasks(SourceArn=source_arn, MaxResults=1).get("Results", [])
    if not results:
        return None
    entry = results[0]
    to_move = entry.get("ApproximateNumberOfMessagesToMove")
    return MoveTask(
        status=str(entry.get("Status", "UNKNOWN")),
        moved=int(entry.get("ApproximateNumberOfMessagesMoved", 0)),
        to_move=int(to_move) if to_move is not None else None,
        handle=entry.get("TaskHandle"),
        failure_reason=entry.get("FailureReason"),
        source_arn=entry.get("SourceArn"),
        destination_arn=entry.get("DestinationArn"),
    )


def wait_move_task(
    sqs: SQSClient,
    source_arn: str,
    *,
    poll_seconds: float = 5.0,
    on_progress: Callable[[MoveTask], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> MoveTask:
    """Poll ListMessageMoveTasks until the latest task of the source queue has finished."""
    while True:
        task = latest_move_task(sqs, source_arn)
        if task is None:
            raise OpsError(f"no message move task found for {source_arn}")
        if on_progress is not None:
            on_progress(task)
        if task.finished:
            return task
        sleep(poll_seconds)
