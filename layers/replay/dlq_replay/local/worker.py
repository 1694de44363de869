"""`dlq-replay worker`: the replay as a long-lived process, for queues outside Lambda.

The worker is the Lambda function without Lambda: the same settings (environment or options),
the same `LambdaReplay` handler, fed by the local event source. SIGINT/SIGTERM stop the
polling; every batch in hand is finished (copies written, successes deleted) before exit.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.log import Log
from dlq_replay.core.settings import Settings
from dlq_replay.local.eventsource import (
    START_UP_PATIENCE_SECONDS,
    LocalEventSource,
    queue_arn_when_reachable,
    run_pollers,
)
from dlq_replay.notify.sns import SnsClient
from dlq_replay.sqs.replayer import Replayer

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    dlq_url: str
    pollers: int = 1
    batch_size: int = 10
    wait_seconds: int = 5
    start_up_patience: float = START_UP_PATIENCE_SECONDS


def settings_from(env: Mapping[str, str], overrides: Mapping[str, str | None]) -> Settings:
    """Settings from the environment with command-line values on top (same names, same rules)."""
    merged = dict(env)
    merged.update({name: value for name, value in overrides.items() if value is not None})
    return Settings.from_env(merged)


def run_worker(
    sqs: SQSClient,
    settings: Settings,
    options: WorkerOptions,
    *,
    logger: Log | None = None,
    stop: threading.Event | None = None,
    sns: SnsClient | None = None,
) -> int:
    """Run pollers on the DLQ until `stop` is set (or a signal arrives); returns the exit code.

    `sns` publishes park notices; required when the settings name a topic.
    """
    log = logger or logging.getLogger("dlq_replay.local.worker")
    stop = stop or threading.Event()
    handler = LambdaReplay(Replayer(settings, sqs, logger=log, sns=sns))
    restore = _stop_on_signals(stop)
    try:
        # Start-up rides out throttling and outages as polls do; a missing queue ends it.
        queue_arn = queue_arn_when_reachable(
            sqs, options.dlq_url, stop, log, patience=options.start_up_patience
        )
        if queue_arn is None:
            log.info("worker stopped before it started", extra={"dlq_url": options.dlq_url})
            return 0
        source = LocalEventSource(
            sqs,
            options.dlq_url,
            handler,
            batch_size=options.batch_size,
            wait_seconds=options.wait_seconds,
            logger=log,
            queue_arn=queue_arn,
        )
        log.info(
            "worker started",
            extra={
                "dlq_url": options.dlq_url,
                "queue_arn": source.queue_arn,
                "pollers": options.pollers,
            },
        )
        threads = run_pollers(source, options.pollers, stop)
        for thread in threads:
            thread.join()
    finally:
        restore()
    stats = source.stats
    log.info(
        "worker stopped",
        extra={
            "received": stats.received,
            "deleted": stats.deleted,
            "left_for_retry": stats.failed,
            "delete_errors": stats.delete_errors,
            "poll_errors": stats.poll_errors,
        },
    )
    return 0


def _stop_on_signals(stop: threading.Event) -> Callable[[], None]:
    """Route SIGINT/SIGTERM to `stop` (main thread only); returns how to undo it."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def request_stop(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
