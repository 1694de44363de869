"""Run the demo: emulator, queues, consumer and replay until every message is accounted for."""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.breaker.controller import Breaker
from dlq_replay.breaker.evidence import QueueTotals, dlq_depth, main_queue_timing
from dlq_replay.breaker.function import longest_delay
from dlq_replay.breaker.worker_side import BreakerGate, BreakerStats, worker_breaker
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
        breaker = None
        if options.breaker:
            tally.breaker = stats
            breaker = worker_breaker(
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
        consumer = Consumer(
            queues.main,
            ConsumerSettings(backoff, operator_queue_url=queues.operator),
            backoff=options.consumer_backoff,
            logger=quiet_logger("dlq_replay.demo.consumer"),
            outage_until=time.monotonic() + options.outage_seconds,
        )
        tally.expected = send_messages(sqs, queues.main, options, rng)
        replayer = Replayer(settings, sqs, logger=replay_log, rng=rng, on_outcome=tally.on_outcome)
        done, accounting = replay_until_settled(
            running,
            replayer,
            queues.dlq,
            options,
            tally,
            started=started,
            urls=(queues.main, queues.dlq, queues.operator),
            workers=[functools.partial(consume, sqs, consumer, tally)] * options.consumers,
            breaker=breaker,
        )
    return DemoResult(
        **accounting,
        processed=len(done),
        deliveries_by_attempt=dict(sorted(tally.deliveries_by_attempt.items())),
        replays=tally.replay_outcomes[Action.REPLAY] + tally.replay_outcomes[Action.RELEASE],
        consumer_backoffs=tally.consumer_backoffs,
        seconds=round(time.monotonic() - started, 1),
        breaker=options.breaker,
        breaker_openings=stats.openings,
        breaker_open_seconds=round(stats.seconds_open(time.time()), 1),
        outage_seconds=options.outage_seconds,
    )


def replay_until_settled(
    running: SqsEmulator,
    replayer: Replayer,
    dlq_url: str,
    options: DemoOptions,
    tally: Tally,
    *,
    started: float,
    urls: Sequence[str],
    workers: Sequence[Callable[[threading.Event], None]] = (),
    breaker: tuple[Breaker, BreakerGate] | None = None,
    view: DemoView = SQS_VIEW,
    id_of: Callable[[str], str] = message_id_of,
) -> tuple[set[str], dict[str, Any]]:
    """The replay's pollers on the DLQ, the `workers` and a watch on the view's queues (`urls`,
    the operator queue last) until every message is settled or the time limit from `started`;
    then they all stop. The messages done, and the `Accounting` of every message but `seconds`
    (not yet done: still in a queue)."""
    sqs = emulator_client(running.endpoint_url)
    handler = LambdaReplay(replayer, breaker[0] if breaker else None)
    gate = breaker[1] if breaker else None
    source = LocalEventSource(sqs, dlq_url, handler, Polling(wait_seconds=1), gate=gate)
    queues = dict(zip(view.queues, urls, strict=True))
    stop = threading.Event()
    threads = run_pollers(source, options.pollers, stop)
    watch: Callable[[threading.Event], None] = functools.partial(watch_depths, sqs, queues, tally)
    for work in [*workers, watch]:
        threads.append(threading.Thread(target=work, args=(stop,), daemon=True))
        threads[-1].start()
    timeout = settle_timeout(options)
    completed = interrupted = False
    try:
        completed = wait_until_settled(tally, options.live, started + timeout, view)
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
    return done, {
        "sent": len(tally.expected),
        "parked": len(parked_ids),
        "not_yet_done": len(waiting & left),
        "lost": len(left - waiting),
        "parked_by_reason": dict(Counter(parked[id_] for id_ in parked_ids)),
        "completed": completed,
        "interrupted": interrupted,
        "timeout_seconds": timeout,
    }


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
    """Until every message is processed or parked and the view's settled queues are empty: shown
    live, or plain (CI logs): a start line, then a progress line now and then, never silent."""
    from rich.live import Live

    started = shown = time.monotonic()
    live_view = Live(render(tally, started, view)) if live else None
    if live_view is None:
        print(
            f"demo: started with {len(tally.expected)} messages; time limit "
            f"{deadline - started:.0f} s; progress every {PLAIN_PROGRESS_SECONDS:g} s",
            flush=True,
        )
    with live_view or nullcontext():
        while time.monotonic() < deadline:
            if live_view is not None:
                live_view.update(render(tally, started, view))
            with tally.lock:
                parked = sum(tally.parked_by_reason.values())
                if len(tally.processed) + parked >= len(tally.expected) and all(
                    q in tally.depths and tally.depths[q].total == 0 for q in view.settled
                ):
                    return True
            time.sleep(0.25)
            if live_view is None and time.monotonic() - shown >= PLAIN_PROGRESS_SECONDS:
                shown = time.monotonic()
                print(progress_line(tally, shown - started), flush=True)
    return False
