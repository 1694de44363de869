"""`dlq-replay worker`: the Lambda function without Lambda, its `LambdaReplay` handler fed by the
local event source, once every queue it may replay to is checked (`StartError`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.breaker.evidence import QueueTotals, dlq_depth, dlq_time_left, main_queue_timing
from dlq_replay.breaker.function import longest_delay
from dlq_replay.breaker.worker_side import worker_breaker
from dlq_replay.core.kinds import RecordKind
from dlq_replay.core.log import Log
from dlq_replay.core.queues import Arn, is_fifo_url
from dlq_replay.core.settings import Settings
from dlq_replay.engine.replayer import Replayer
from dlq_replay.local.eventsource import (
    DEFAULT_WAIT_SECONDS,
    START_UP_PATIENCE_SECONDS,
    LocalEventSource,
    Polling,
    PollStats,
    can_heal,
    queue_arn_when_reachable,
    run_pollers,
)
from dlq_replay.notify.sns import SnsClient
from dlq_replay.sqs.sources import dead_letter_sources
from dlq_replay.targets.ledger import MemoryLedger

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.follow.replay_side import ReplayFollow
    from dlq_replay.targets.deliverer import Deliverer


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    dlq_url: str
    pollers: int = 1
    batch_size: int = 10
    wait_seconds: int = DEFAULT_WAIT_SECONDS
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
    stats: PollStats | None = None,
    cloudwatch: Callable[[], Any] | None = None,
    probe: SQSClient | None = None,
    deliverer: Deliverer | None = None,
    follow: ReplayFollow | None = None,
    on_started: Callable[[], None] | None = None,
) -> int:
    """Run pollers on the DLQ until `stop` is set (a batch in hand is finished); the exit code.
    `cloudwatch`: the breaker's retention bound's client; `probe`: the start checks' client, one
    that does not retry, so `options.start_up_patience` alone says how long start-up waits."""
    log = logger or logging.getLogger("dlq_replay.local.worker_loop")
    stop = stop or threading.Event()
    probe = probe or sqs
    # Start-up rides out throttling and outages as polls do; a missing queue ends it.
    queue_arn = start_checks(probe, settings, options, stop=stop, log=log)
    if queue_arn is None or stop.is_set():
        log.info("worker stopped before it started", extra={"dlq_url": options.dlq_url})
        return 0
    settings = with_main_queue(probe, settings, options, log)
    breaker, gate = (None, None)
    if settings.outage_breaker:  # OUTAGE_BREAKER=off or --no-breaker: none
        main = settings.main_queue_url
        breaker, gate = worker_breaker(
            logger=log,
            count_attribute=settings.count_attribute,
            sns=sns,
            topic_arn=settings.park_notification_topic_arn,
            source=options.dlq_url,
            depth=dlq_depth(sqs, options.dlq_url),
            time_left=(
                dlq_time_left(sqs, cloudwatch, options.dlq_url) if cloudwatch is not None else None
            ),
            timing=(lambda: main_queue_timing(sqs, main)) if main else None,
            delay_seconds=longest_delay(settings),
            max_attempts=settings.max_attempts,
            totals=QueueTotals(
                sqs, [url for url in (main, options.dlq_url, settings.operator_queue_url) if url]
            ),
        )
    ledger = MemoryLedger() if delivers(settings) else None
    replayer = Replayer(
        settings,
        sqs,
        logger=log,
        sns=sns,
        deliverer=deliverer,
        ledger=ledger,
    )
    handler = LambdaReplay(replayer, breaker, follow)
    source = LocalEventSource(
        sqs,
        options.dlq_url,
        handler,
        Polling(batch_size=options.batch_size, wait_seconds=options.wait_seconds),
        logger=log,
        queue_arn=queue_arn,
        gate=gate,
        stats=stats,
    )
    log.info(
        "worker started",
        extra={
            "dlq_url": options.dlq_url,
            "queue_arn": source.queue_arn,
            "pollers": options.pollers,
        },
    )
    if on_started is not None:
        on_started()
    threads = run_pollers(source, options.pollers, stop)
    for thread in threads:
        thread.join()
    stats = source.stats
    log.info(
        "worker stopped",
        extra={
            "received": stats.received,
            "deleted": stats.deleted,
            "left_for_retry": stats.failed,
            "delete_errors": stats.delete_errors,
            "poll_errors": stats.poll_errors,
            "released": stats.released,
        },
    )
    return 0


def delivers(settings: Settings) -> bool:
    return not settings.accepted_kinds <= {RecordKind.SQS}


class StartError(Exception):
    """A queue the worker would replay to is missing or of the wrong kind; `usage`: exit 2."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


def with_main_queue(
    sqs: SQSClient, settings: Settings, options: WorkerOptions, log: Log
) -> Settings:
    """The settings, with the DLQ's one source queue as the main queue when none is given (nor
    allowed source queues), else records no source ARN routes would be parked `unknown-source`."""
    if settings.main_queue_url or settings.allowed_source_queue_arns:
        return settings
    if RecordKind.SQS not in settings.accepted_kinds:
        return settings
    sources = dead_letter_sources(sqs, options.dlq_url)
    if len(sources) == 1:
        (main,) = sources
        log.info(
            "no main queue given: replaying to the DLQ's only source queue",
            extra={"main_queue_url": main, "found_by": "ListDeadLetterSourceQueues"},
        )
        main_settings = replace(settings, main_queue_url=main)
        check_destinations(sqs, main_settings, options, stop=threading.Event(), log=log)
        return main_settings
    found = (
        f"{len(sources)} queues use it as their DLQ ({', '.join(sources)})"
        if sources
        else "no queue uses it as its DLQ (ListDeadLetterSourceQueues)"
    )
    raise StartError(
        f"no --main-queue-url (MAIN_QUEUE_URL) given and {found}: pass --main-queue-url URL, "
        "the queue replays go to, or --allowed-source-queue-arns to route by source",
        usage=True,
    )


def start_checks(
    sqs: SQSClient, settings: Settings, options: WorkerOptions, *, stop: threading.Event, log: Log
) -> str | None:
    """The DLQ's ARN, the destinations checked meanwhile; None when `stop` is set first. An error
    of the DLQ's is raised first, and ends the destinations' check too."""
    abandon = threading.Event()  # the destinations' check waits on this, not on `stop`
    with ThreadPoolExecutor(1, thread_name_prefix="start-check") as pool:
        checked = pool.submit(check_destinations, sqs, settings, options, stop=abandon, log=log)
        try:
            queue_arn = _reachable_arn(sqs, "DLQ", options.dlq_url, options, stop=stop, log=log)
            # Done the moment the check is; `stop` looked at every 50 ms meanwhile.
            while queue_arn is not None and not stop.is_set():
                if not futures.wait([checked], timeout=0.05).not_done:
                    break
        finally:
            abandon.set()  # the DLQ failed, or a stop came: a check waiting to retry gives up
        if queue_arn is None or stop.is_set():
            return None  # stopped before it started, whatever the check found
        checked.result()
    return queue_arn


def check_destinations(
    sqs: SQSClient, settings: Settings, options: WorkerOptions, *, stop: threading.Event, log: Log
) -> None:
    """Each destination exists and is FIFO exactly when the DLQ is: else StartError."""
    dlq_fifo = is_fifo_url(options.dlq_url)
    found = {"main queue": settings.main_queue_url} if settings.main_queue_url else {}
    for arn in sorted(settings.allowed_source_queue_arns):
        found[f"allowed source queue {arn}"] = Arn.queue(arn).url(settings.endpoint_url_sqs)
    for what, url in found.items():
        if is_fifo_url(url) != dlq_fifo:
            kind = "a FIFO queue" if is_fifo_url(url) else "a standard queue"
            dlq_kind = "FIFO" if dlq_fifo else "standard"
            raise StartError(f"the {what} {url} is {kind} and the DLQ is {dlq_kind}")
        if _reachable_arn(sqs, what, url, options, stop=stop, log=log) is None:
            return


def _reachable_arn(
    sqs: SQSClient, what: str, url: str, options: WorkerOptions, *, stop: threading.Event, log: Log
) -> str | None:
    """The queue's ARN once reachable; None when `stop` is set first; StartError naming `what`
    when the queue does not exist."""
    try:
        return queue_arn_when_reachable(sqs, url, stop, log, patience=options.start_up_patience)
    except (ClientError, BotoCoreError) as error:
        code = (
            str(error.response.get("Error", {}).get("Code", ""))
            if isinstance(error, ClientError)
            else ""
        )
        if "NonExistentQueue" in code or code == "QueueDoesNotExist":
            raise StartError(f"the {what} does not exist: {url}") from None
        if can_heal(error):
            raise StartError(
                f"gave up on the {what} {url} after --start-up-patience "
                f"{options.start_up_patience:g} s: {error}"
            ) from None
        raise
