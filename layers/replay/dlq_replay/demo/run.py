"""Run the demo: emulator, queues, consumer and replay until every message is accounted for."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.breaker.evidence import QueueTotals, dlq_depth, main_queue_timing
from dlq_replay.breaker.function import longest_delay
from dlq_replay.breaker.worker_side import BreakerStats, worker_breaker
from dlq_replay.consumer import ConsumerSettings
from dlq_replay.core.decision import Action
from dlq_replay.core.settings import Settings
from dlq_replay.demo.emulator import SqsEmulator, create_queues, emulator_client, sqs_emulator
from dlq_replay.demo.scenario import (
    DEMO_BREAKER_POLICY,
    Consumer,
    DemoOptions,
    DemoResult,
    Tally,
    consume,
    drain_parked,
    main_max_receive_count,
    message_id_of,
    send_messages,
    settle_timeout,
    watch_depths,
)
from dlq_replay.demo.view import SQS_VIEW, DemoView, breaker_progress_of, exit_code, render, summary
from dlq_replay.engine.replayer import Replayer
from dlq_replay.local.eventsource import LocalEventSource, Polling, run_pollers


def run_demo(options: DemoOptions) -> int:
    result = demo(options)
    print(f"\n{summary(result)}")
    return exit_code(result)


def demo(
    options: DemoOptions, serve: Callable[[], AbstractContextManager[SqsEmulator]] = sqs_emulator
) -> DemoResult:
    """Run the demo on the emulator `serve` starts (the benchmark compares two)."""
    rng = random.Random(options.seed)  # noqa: S311 - demo data, not cryptography
    tally = Tally()
    timeout = settle_timeout(options)
    started = time.monotonic()
    with serve() as running:
        sqs = emulator_client(running.endpoint_url)
        queues = create_queues(sqs, main_max_receive_count=main_max_receive_count(options))
        backoff = options.backoff
        settings = Settings(
            main_queue_url=queues.main,
            operator_queue_url=queues.operator,
            max_attempts=options.max_attempts,
            backoff=backoff,
            endpoint_url_sqs=running.endpoint_url,
        )
        replay_log = quiet_logger("dlq_replay.demo.replay")
        stats = BreakerStats()
        breaker, gate = (None, None)
        if options.breaker:
            tally.breaker = stats
            breaker, gate = worker_breaker(
                logger=replay_log,
                policy=DEMO_BREAKER_POLICY,
                count_attribute=settings.count_attribute,
                stats=stats,
                depth=dlq_depth(sqs, queues.dlq),
                timing=lambda: main_queue_timing(sqs, queues.main),
                totals=QueueTotals(sqs, [queues.main, queues.dlq, queues.operator]),
                delay_seconds=longest_delay(settings),
                max_attempts=settings.max_attempts,
            )
        replayer = Replayer(settings, sqs, logger=replay_log, rng=rng, on_outcome=tally.on_outcome)
        handler = LambdaReplay(replayer, breaker)
        source = LocalEventSource(sqs, queues.dlq, handler, Polling(wait_seconds=1), gate=gate)
        consumer = Consumer(
            queues.main,
            ConsumerSettings(backoff, operator_queue_url=queues.operator),
            backoff=options.consumer_backoff,
            logger=quiet_logger("dlq_replay.demo.consumer"),
            outage_until=time.monotonic() + options.outage_seconds,
        )
        tally.expected = send_messages(sqs, queues.main, options, rng)
        stop = threading.Event()
        threads = run_pollers(source, options.pollers, stop)
        threads += [daemon(consume, sqs, consumer, tally, stop) for _ in range(options.consumers)]
        urls = (queues.main, queues.dlq, queues.operator)
        deadline = started + timeout
        end = settle(running, tally, stop, threads, urls=urls, live=options.live, deadline=deadline)
    return DemoResult(
        sent=len(tally.expected),
        processed=len(end.done),
        parked=len(end.parked),
        not_yet_done=end.not_yet_done,
        lost=end.lost,
        parked_by_reason=dict(Counter(end.parked.values())),
        deliveries_by_attempt=dict(sorted(tally.deliveries_by_attempt.items())),
        replays=tally.replay_outcomes[Action.REPLAY] + tally.replay_outcomes[Action.RELEASE],
        consumer_backoffs=tally.consumer_backoffs,
        seconds=round(time.monotonic() - started, 1),
        completed=end.completed,
        interrupted=end.interrupted,
        timeout_seconds=timeout,
        breaker=options.breaker,
        breaker_openings=stats.openings,
        breaker_open_seconds=round(stats.seconds_open(time.time()), 1),
        outage_seconds=options.outage_seconds,
    )


def daemon(target: Callable[..., None], *args: object) -> threading.Thread:
    return threading.Thread(target=target, args=args, daemon=True)


@dataclass(frozen=True, slots=True)
class Ending:
    """Where the expected messages ended (they add up); not yet done: still in a queue."""

    done: set[str]
    parked: dict[str, str]
    not_yet_done: int
    lost: int
    completed: bool
    interrupted: bool


def settle(
    running: SqsEmulator,
    tally: Tally,
    stop: threading.Event,
    threads: list[threading.Thread],
    *,
    urls: Sequence[str],
    live: bool,
    deadline: float,
    view: DemoView = SQS_VIEW,
    id_of: Callable[[str], str] = message_id_of,
) -> Ending:
    """Start the threads (and a watch on the view's queues, `urls`, the operator queue last), wait
    until every message is settled or the deadline, stop them all and account for each message."""
    sqs = emulator_client(running.endpoint_url)
    queues = dict(zip(view.queues, urls, strict=True))
    threads.append(daemon(watch_depths, sqs, queues, tally, stop))
    for thread in threads:
        if thread.ident is None:
            thread.start()
    completed = interrupted = False
    try:
        completed = wait_until_settled(tally, live, deadline, view)
    except KeyboardInterrupt:
        # Ctrl-C: stop the threads, finish the batches in hand, and still account.
        interrupted = True
    finally:
        stop.set()
        running.app.end_waits()
        for thread in threads:
            thread.join()
    parked = drain_parked(sqs, urls[-1], id_of)
    waiting = {id_of(body) for label in view.settled for body in running.bodies(queues[label])}
    with tally.lock:
        done = tally.processed & tally.expected
        parked_ids = (set(parked) & tally.expected) - done
        left = tally.expected - done - parked_ids
    return Ending(
        done=done,
        parked={id_: parked[id_] for id_ in parked_ids},
        not_yet_done=len(waiting & left),
        lost=len(left - waiting),
        completed=completed,
        interrupted=interrupted,
    )


PLAIN_PROGRESS_SECONDS = 5.0


def progress_line(tally: Tally, elapsed: float) -> str:
    """The plain mode's progress line: the counts, the queues, and the breaker unless closed."""
    with tally.lock:
        parked = sum(tally.parked_by_reason.values())
        processed = len(tally.processed & tally.expected)
        waiting = {q: d.total for q, d in tally.depths.items()}
        breaker = breaker_progress_of(tally, elapsed)
    depths = ", ".join(f"{q} {n}" for q, n in sorted(waiting.items()))
    return (
        f"demo: {elapsed:.0f} s: {processed} processed, {parked} parked of "
        f"{len(tally.expected)}"
        + (f"; in the queues: {depths}" if depths else "")
        + (f"; {breaker}" if breaker else "")
    )


def quiet_logger(name: str) -> logging.Logger:
    """A logger writing nowhere (the view says it all); without a handler Python prints warnings."""
    logger = logging.getLogger(name)
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def wait_until_settled(tally: Tally, live: bool, deadline: float, view: DemoView) -> bool:
    """Until every message is processed or parked and the view's settled queues are empty."""

    def finished() -> bool:
        with tally.lock:
            parked = sum(tally.parked_by_reason.values())
            return len(tally.processed) + parked >= len(tally.expected) and all(
                q in tally.depths and tally.depths[q].total == 0 for q in view.settled
            )

    started = time.monotonic()
    if not live:
        # Plain (CI logs): a start line, then a progress line now and then, never silent.
        print(
            f"demo: started with {len(tally.expected)} messages; time limit "
            f"{deadline - started:.0f} s; progress every {PLAIN_PROGRESS_SECONDS:g} s",
            flush=True,
        )
        shown = started
        while time.monotonic() < deadline:
            if finished():
                return True
            time.sleep(0.25)
            if time.monotonic() - shown >= PLAIN_PROGRESS_SECONDS:
                shown = time.monotonic()
                print(progress_line(tally, shown - started), flush=True)
        return False
    from rich.live import Live

    with Live(render(tally, started, view), refresh_per_second=4, transient=False) as live_view:
        while time.monotonic() < deadline:
            live_view.update(render(tally, started, view))
            if finished():
                return True
            time.sleep(0.25)
    return False
