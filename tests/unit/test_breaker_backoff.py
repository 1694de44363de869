"""The outage breaker behind a consumer that backs off in the main queue (the consumer
toolkit, `--consumer-backoff` in the demo), on a simulated clock: every message is first
received from the main queue, a failure comes back after the consumer's backoff, and after
`maxReceiveCount` failed receives SQS moves it to the DLQ. The real controller, store, rule
and give-back decide; only the queues and the clock are simulated.

Behind such a consumer only the poison reaches the DLQ, after the good messages sent with
it are done: its first replays all come back while nothing is left to delete. That is no
outage, and the breaker must not open; a consumer that is down must still open it.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass, field

import pytest
from dlq_replay.breaker.breaker_state import BreakerState, Phase
from dlq_replay.breaker.controller import Breaker
from dlq_replay.breaker.rule import QueueTiming, observe
from dlq_replay.breaker.worker_side import MemoryStore, PollerSwitch
from dlq_replay.core import attributes
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.messages import InboundMessage
from dlq_replay.demo.scenario import DEMO_BREAKER_POLICY

COUNT = "sqs-dlq-replay-nb"
MAX_ATTEMPTS = 3
RECEIVES = 3  # the main queue's maxReceiveCount, as the demo's with --consumer-backoff
VISIBILITY = 5.0  # the main queue's visibility timeout, as the demo's
STEP = 0.1
START = 1_000_000.0


@dataclass(order=True)
class Copy:
    visible: float
    count: int | None = field(compare=False)  # the count attribute (None: never replayed)
    sent: float = field(compare=False)  # its SentTimestamp
    bad: bool = field(default=False, compare=False)  # poison: fails every delivery
    receives: int = field(default=0, compare=False)  # failed receives in the main queue


@dataclass
class World:
    rng: random.Random
    outage: tuple[float, float]  # the consumer fails everything from, until
    now: float = START
    main: list[Copy] = field(default_factory=list)
    dlq: list[Copy] = field(default_factory=list)
    processed: int = 0
    parked: int = 0
    openings: int = 0
    deleted_at: list[float] = field(default_factory=list)

    def deleting(self, start: float, enough: int) -> bool:
        return sum(1 for at in self.deleted_at if at >= start) >= enough

    def opened(self, state: BreakerState) -> None:
        self.openings += state.phase is Phase.OPEN


def consumer_step(world: World, per_step: int = 15) -> None:
    """A failure backs off (full jitter, 1 s doubling, at most 2 s, as the demo's); the
    receive after the last allowed one moves the message to the DLQ, as SQS does."""
    world.main.sort()
    for copy in [c for c in world.main if c.visible <= world.now][:per_step]:
        world.main.remove(copy)
        if copy.receives >= RECEIVES:
            world.dlq.append(Copy(world.now, copy.count, copy.sent, copy.bad))
            continue
        if copy.bad or world.outage[0] <= world.now < world.outage[1]:
            copy.receives += 1
            delay = world.rng.uniform(0, min(2.0, 2.0 ** (copy.receives - 1)))
            world.main.append(copy)
            copy.visible = world.now + delay
        else:
            world.processed += 1
            world.deleted_at.append(world.now)


def replay_step(world: World, breaker: Breaker, per_step: int = 10) -> None:
    if not breaker.step().receiving:
        return
    world.dlq.sort()
    due = [c for c in world.dlq if c.visible <= world.now][:per_step]
    for copy in due:
        world.dlq.remove(copy)
    received = [
        InboundMessage(
            message_id=f"m{index}",
            receipt_handle="r",
            body="{}",
            attributes={} if copy.count is None else {COUNT: attributes.number(copy.count)},
            queue_arn="arn",
            sent_ms=int(copy.sent * 1000),
        )
        for index, copy in enumerate(due)
    ]
    decided = breaker.give_back(received)
    handled = []
    for came, message, copy in zip(received, decided, due, strict=True):
        attempt = (attributes.parse_count(message.attributes.get(COUNT)) or 0) + 1
        if attempt > MAX_ATTEMPTS:
            world.parked += 1
            handled.append((came, Decision(Action.PARK, "op", attempt), True))
            continue
        delay = world.rng.randint(0, min(2, 2 ** (attempt - 1)))
        world.main.append(Copy(world.now + delay, attempt, world.now, copy.bad))
        handled.append((came, Decision(Action.REPLAY, "q", attempt, delay=delay), True))
    if due:
        breaker.record(observe(handled, COUNT, world.now))


def run(
    *, poison: int, outage: tuple[float, float] = (0.0, 0.0), later: float = 0.0, seed: int = 1
) -> World:
    """300 messages, `poison` of them failing every delivery, sent at the start (the second
    half `later` seconds in); the consumer down over `outage` (seconds from the start)."""
    world = World(random.Random(seed), (START + outage[0], START + outage[1]))
    world.main = [
        Copy(START + later * (n >= 150), None, START + later * (n >= 150), bad=n < poison)
        for n in range(300)
    ]
    breaker = Breaker(
        MemoryStore.for_policy(DEMO_BREAKER_POLICY, timing=True),
        PollerSwitch(),
        logger=logging.getLogger("test.breaker.backoff"),
        count_attribute=COUNT,
        policy=DEMO_BREAKER_POLICY,
        clock=lambda: world.now,
        max_attempts=MAX_ATTEMPTS,
        depth=lambda: len(world.dlq),
        timing=lambda: QueueTiming(VISIBILITY, RECEIVES),
        delay_seconds=2.0,
        deleting=world.deleting,
        on_change=world.opened,
    )
    for _ in range(math.ceil(300 / STEP)):
        replay_step(world, breaker)
        consumer_step(world)
        world.now += STEP
        if world.processed + world.parked == 300:
            break
    return world


@pytest.mark.parametrize("seed", range(1, 6))
@pytest.mark.parametrize("poison", [22, 40, 80])
def test_poison_behind_a_backing_off_consumer_parks_and_never_opens_the_breaker(
    poison: int, seed: int
) -> None:
    # Before the veto looked back a redelivery, 40 poison messages opened it 4-7 times and
    # were held back (their attempts given back) until the run gave up.
    world = run(poison=poison, seed=seed)
    assert (world.processed, world.parked, world.openings) == (300 - poison, poison, 0)


@pytest.mark.parametrize("later", [0.0, 5.0, 20.0])
def test_a_consumer_that_is_down_still_opens_it_and_nothing_parks(later: float) -> None:
    # From the start, and after half of the messages was processed (the outage begins as the
    # second half is sent).
    world = run(poison=0, outage=(later, later + 60.0), later=later)
    assert (world.processed, world.parked) == (300, 0)
    assert world.openings >= 1
