"""Run `dlq-replay demo --kind eventbridge`: the bus, the rule and its target on the emulator,
the target's DLQ replayed by the local event source and the replayer (DLQ_KIND=eventbridge),
until every event is delivered or parked."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.settings import Settings
from dlq_replay.demo.emulator import (
    SqsEmulator,
    emulator_client,
    emulator_session,
    sqs_emulator,
)
from dlq_replay.demo.eventbridge_world import (
    Fate,
    consume_target,
    create_wiring,
    event_id_of,
    plan_events,
    publish,
)
from dlq_replay.demo.run import quiet_logger, wait_until_settled
from dlq_replay.demo.scenario import (
    DemoOptions,
    OutcomeCounter,
    Tally,
    drain_parked,
    settle_timeout,
    watch_depths,
)
from dlq_replay.demo.view import DemoView, exit_code, park_reasons, status_words
from dlq_replay.engine.replayer import Collaborators, Replayer
from dlq_replay.local.eventsource import LocalEventSource, Polling, run_pollers
from dlq_replay.targets.clients import TargetClients
from dlq_replay.targets.deliverer import Deliverer
from dlq_replay.targets.ledger import MemoryLedger

EVENTBRIDGE_VIEW = DemoView(
    queues=("target", "dlq", "operator"),
    settled=("target", "dlq"),
    attempts=False,
    processed="delivered to the target's consumer",
    labels={
        "replay": "delivered by the replay at once",
        "release": "delivered by the replay after a wait",
        "defer": "waiting copy written to the DLQ",
        "hold": "waiting copy hidden again until due",
        "fail": "not replayed: unusable record",
        "failed": "not replayed yet: a call failed",
    },
)
STAGING_NOTE = (
    "moto delivers the bus's events but never fails a delivery nor writes a target's DLQ: the "
    "demo writes {staged} DLQ records itself, in EventBridge's documented shape (the event as "
    "body; RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION, "
    "RETRY_ATTEMPTS)"
)


@dataclass(frozen=True, slots=True)
class EventBridgeResult:
    """Where every event ended: delivered to the target, parked, still in a queue (not yet
    done) or nowhere (lost); the four add up to `sent`."""

    sent: int
    delivered: int
    by_eventbridge: int  # of `delivered`: put on the bus and delivered by moto's EventBridge
    parked: int
    not_yet_done: int
    lost: int
    parked_by_reason: dict[str, int]
    staged: int  # DLQ records the demo wrote in EventBridge's place
    seconds: float
    completed: bool
    interrupted: bool = False
    timeout_seconds: float = 0.0


def run_eventbridge_demo(options: DemoOptions) -> int:
    """Run it; exit code 0 when every event is delivered or parked, 130 after Ctrl-C, 1
    otherwise."""
    result = eventbridge_demo(options)
    print(f"\n{summary(result)}")
    return exit_code(result)


def eventbridge_demo(
    options: DemoOptions,
    serve: Callable[[], AbstractContextManager[SqsEmulator]] = sqs_emulator,
) -> EventBridgeResult:
    """Run it on the emulator `serve` starts; the rates of `options` choose each event's fate
    (demo/eventbridge_world.py's `plan_events`)."""
    rng = random.Random(options.seed)  # noqa: S311 - demo data, not cryptography
    tally = Tally()
    timeout = settle_timeout(options)
    started = time.monotonic()
    with serve() as running:
        session = emulator_session()
        sqs = emulator_client(running.endpoint_url)
        events = session.client("events", endpoint_url=running.endpoint_url)
        wiring = create_wiring(sqs, events)
        settings = Settings(
            operator_queue_url=wiring.operator_url,
            max_attempts=options.max_attempts,
            backoff=BackoffPolicy(
                options.base_seconds,
                options.multiplier,
                options.cap_seconds,
                Jitter(options.jitter),
            ),
            dlq_kind="eventbridge",
            replay_target_arns=wiring.replay_targets,
            endpoint_url_sqs=running.endpoint_url,
        )
        replayer = Replayer(
            settings,
            sqs,
            logger=quiet_logger("dlq_replay.demo.replay"),
            rng=rng,
            on_outcome=OutcomeCounter(tally),
            collaborators=Collaborators(
                deliverer=Deliverer(
                    TargetClients(session, endpoint_url=lambda _service: running.endpoint_url)
                ),
                ledger=MemoryLedger(),
            ),
        )
        source = LocalEventSource(
            sqs, wiring.dlq_url, LambdaReplay(replayer), Polling(wait_seconds=1)
        )
        plan = plan_events(options, rng)
        tally.expected = set(plan)
        staged = publish(sqs, events, wiring, plan)
        print(STAGING_NOTE.format(staged=staged), flush=True)
        stop = threading.Event()
        threads = run_pollers(source, options.pollers, stop)
        queues = {
            "target": wiring.target_url,
            "dlq": wiring.dlq_url,
            "operator": wiring.operator_url,
        }
        threads += [
            threading.Thread(
                target=consume_target, args=(sqs, wiring.target_url, tally, stop), daemon=True
            ),
            threading.Thread(target=watch_depths, args=(sqs, queues, tally, stop), daemon=True),
        ]
        for thread in threads[options.pollers :]:
            thread.start()
        completed = interrupted = False
        try:
            completed = wait_until_settled(tally, options.live, started + timeout, EVENTBRIDGE_VIEW)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        parked = drain_parked(sqs, wiring.operator_url, event_id_of)
        waiting = {
            event_id_of(body)
            for url in (wiring.target_url, wiring.dlq_url)
            for body in running.bodies(url)
        }
    with tally.lock:
        delivered = tally.processed & tally.expected
        parked_ids = (set(parked) & tally.expected) - delivered
        not_yet_done = (waiting & tally.expected) - delivered - parked_ids
        return EventBridgeResult(
            sent=len(tally.expected),
            delivered=len(delivered),
            by_eventbridge=sum(1 for id_ in delivered if plan[id_] == Fate.DELIVERED),
            parked=len(parked_ids),
            not_yet_done=len(not_yet_done),
            lost=len(tally.expected - delivered - parked_ids - not_yet_done),
            parked_by_reason=dict(Counter(parked[id_] for id_ in parked_ids)),
            staged=staged,
            seconds=round(time.monotonic() - started, 1),
            completed=completed,
            interrupted=interrupted,
            timeout_seconds=timeout,
        )


def summary(result: EventBridgeResult) -> str:
    """The closing lines, as the SQS demo's: where every event ended (the four counts add up
    to `sent`), then who delivered what."""
    by_replay = result.delivered - result.by_eventbridge
    return (
        f"eventbridge demo {status_words(result)} in {result.seconds} s: sent {result.sent}, "
        f"delivered {result.delivered}, parked {result.parked} ({park_reasons(result)}), "
        f"not yet done {result.not_yet_done}, lost {result.lost}\n"
        f"delivered by EventBridge {result.by_eventbridge}, by the replay {by_replay}; "
        f"the demo staged {result.staged} DLQ records (moto writes none)"
    )
