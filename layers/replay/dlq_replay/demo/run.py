"""Run the demo: emulator, queues, consumer and replay side by side until every message is
accounted for."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter

from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.settings import Settings
from dlq_replay.demo.emulator import create_queues, emulator, emulator_client
from dlq_replay.demo.scenario import (
    DemoOptions,
    DemoResult,
    OutcomeCounter,
    Tally,
    consume,
    drain_parked,
    send_messages,
    watch_depths,
)
from dlq_replay.demo.view import print_summary, render
from dlq_replay.local.eventsource import LocalEventSource, run_pollers
from dlq_replay.sqs.replayer import Replayer


def run_demo(options: DemoOptions) -> int:
    """Run the demo; exit code 0 when every message is accounted for, 1 otherwise."""
    result = demo(options)
    print_summary(result, options)
    if result.interrupted:
        return 130
    return 0 if result.lost == 0 and result.completed else 1


def demo(options: DemoOptions) -> DemoResult:
    rng = random.Random(options.seed)  # noqa: S311 - demo data, not cryptography
    tally = Tally()
    started = time.monotonic()
    with emulator() as endpoint_url:
        sqs = emulator_client(endpoint_url)
        queues = create_queues(sqs)
        settings = Settings(
            main_queue_url=queues.main,
            operator_queue_url=queues.operator,
            max_attempts=options.max_attempts,
            backoff=BackoffPolicy(
                options.base_seconds,
                options.multiplier,
                options.cap_seconds,
                Jitter(options.jitter),
            ),
            sqs_endpoint_url=endpoint_url,
        )
        replay_log = logging.getLogger("dlq_replay.demo.replay")
        replay_log.propagate = False
        replay_log.setLevel(logging.INFO)
        counter = OutcomeCounter(tally)
        replay_log.addHandler(counter)
        handler = LambdaReplay(Replayer(settings, sqs, logger=replay_log, rng=rng))
        source = LocalEventSource(sqs, queues.dlq, handler, wait_seconds=1)
        tally.expected = send_messages(sqs, queues.main, options, rng)
        stop = threading.Event()
        threads = run_pollers(source, options.pollers, stop)
        threads += [
            threading.Thread(target=consume, args=(sqs, queues.main, tally, stop), daemon=True)
            for _ in range(options.consumers)
        ]
        threads.append(
            threading.Thread(target=watch_depths, args=(sqs, queues, tally, stop), daemon=True)
        )
        for thread in threads[options.pollers :]:
            thread.start()
        completed = interrupted = False
        try:
            completed = _wait(tally, options, started, stop)
        except KeyboardInterrupt:
            # Ctrl-C: stop the threads, finish the batches in hand, and still account.
            interrupted = True
        finally:
            stop.set()
            for thread in threads:
                thread.join()
            replay_log.removeHandler(counter)
        parked = drain_parked(sqs, queues.operator)
    with tally.lock:
        accounted = tally.processed | set(parked)
        return DemoResult(
            sent=len(tally.expected),
            processed=len(tally.processed),
            parked=len(parked),
            lost=len(tally.expected - accounted),
            parked_by_reason=dict(Counter(parked.values())),
            deliveries_by_attempt=dict(sorted(tally.deliveries_by_attempt.items())),
            seconds=round(time.monotonic() - started, 1),
            completed=completed,
            interrupted=interrupted,
        )


def _wait(tally: Tally, options: DemoOptions, started: float, stop: threading.Event) -> bool:
    """Until every message is processed or parked (or the timeout); shows progress if live."""

    def finished() -> bool:
        with tally.lock:
            parked = sum(tally.parked_by_reason.values())
            return len(tally.processed) + parked >= len(tally.expected) and all(
                q in tally.depths and tally.depths[q].total == 0 for q in ("main", "dlq")
            )

    if not options.live:
        while time.monotonic() - started < options.timeout_seconds:
            if finished():
                return True
            time.sleep(0.5)
        return False
    from rich.live import Live

    with Live(render(tally, started), refresh_per_second=4, transient=False) as live:
        while time.monotonic() - started < options.timeout_seconds:
            live.update(render(tally, started))
            if finished():
                return True
            time.sleep(0.25)
    return False
