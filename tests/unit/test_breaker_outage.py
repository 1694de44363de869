"""The outage breaker through a whole outage, on a simulated clock: the demo's timing (its
policy, backoff 1-4 s, 3 attempts), a DLQ and a main queue kept as lists, a consumer that
fails everything until the outage ends and nothing after. The real controller, store, rule
and give-back decide; only the queues and the clock are simulated.

The outage's end is swept across the probe schedule: wherever it falls (before a probe,
during one, just after), no message may park, as every failure was the outage's. On real
timing the demo's last probe comes within a second or so of its 60 s outage's end, which a
loaded machine moves one way and an idle one the other.

Before the rule decides, a message drawing short delays can fail every attempt while most
first replays sent with it are not back (the rule waits for nearly all of a stretch, their
longest delays included): its last attempt is held back while the outage is suspected.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass, field

import pytest
from dlq_replay.breaker.controller import Breaker
from dlq_replay.breaker.rule import QueueTiming, observe
from dlq_replay.breaker.worker_side import MemoryStore, PollerSwitch
from dlq_replay.core import attributes
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.messages import InboundMessage
from dlq_replay.demo.scenario import DEMO_BREAKER_POLICY

COUNT = "sqs-dlq-replay-nb"
MAX_ATTEMPTS = 3
STEP = 0.1  # seconds of simulated time per step
START = 1_000_000.0


@dataclass(order=True)
class Copy:
    visible: float  # when it can be received
    count: int | None = field(compare=False)  # the count attribute (None: a first arrival)
    sent: float = field(compare=False)  # its SentTimestamp
    bad: bool = field(default=False, compare=False)  # poison: fails every delivery


@dataclass
class World:
    outage_end: float
    rng: random.Random
    consumer_per_step: int  # copies the consumer handles per step
    replay_per_step: int  # records the replay receives per step
    max_attempts: int
    now: float = START
    dlq: list[Copy] = field(default_factory=list)
    main: list[Copy] = field(default_factory=list)
    processed: int = 0
    parked: int = 0
    poison: int = 0  # the first `poison` messages fail every delivery, outage or not
    deleted_at: list[float] = field(default_factory=list)  # when the consumer deleted one

    def deleting(self, start: float, enough: int) -> bool:
        """The second signal, as the worker's queue totals give it: deletions since `start`."""
        return sum(1 for at in self.deleted_at if at >= start) >= enough


def record(copy: Copy, index: int) -> InboundMessage:
    attrs = {} if copy.count is None else {COUNT: attributes.number(copy.count)}
    return InboundMessage(
        message_id=f"m{index}",
        receipt_handle="r",
        body="{}",
        attributes=attrs,
        queue_arn="arn",
        sent_ms=int(copy.sent * 1000),
    )


def replay_step(world: World, breaker: Breaker) -> None:
    """The pollers: ask the breaker, receive a batch, decide it (the give-back first), send."""
    if not breaker.step().receiving:
        return
    world.dlq.sort()
    due = [c for c in world.dlq if c.visible <= world.now][: world.replay_per_step]
    if not due:
        return
    for copy in due:
        world.dlq.remove(copy)
    received = [record(copy, i) for i, copy in enumerate(due)]
    due_bad = {id(message): copy.bad for message, copy in zip(received, due, strict=True)}
    decided = breaker.give_back(received)
    sent_at = world.now
    handled = []
    for came, message in zip(received, decided, strict=True):
        count = attributes.parse_count(message.attributes.get(COUNT))
        assert count is not None
        attempt = count + 1
        if attempt > world.max_attempts:
            world.parked += 1
            handled.append((came, Decision(Action.PARK, "op", attempt), True))
            continue
        ceiling = min(4, 2 ** (attempt - 1))
        delay = world.rng.randint(0, ceiling)
        world.main.append(Copy(world.now + delay, attempt, world.now, bad=due_bad[id(came)]))
        handled.append((came, Decision(Action.REPLAY, "q", attempt, delay=delay), True))
    breaker.record(observe(handled, COUNT, sent_at))


def consumer_step(world: World) -> None:
    """Fails every copy before the outage's end (back in the DLQ at once: visibility 0,
    maxReceiveCount 1), processes every copy after it."""
    world.main.sort()
    due = [c for c in world.main if c.visible <= world.now][: world.consumer_per_step]
    for copy in due:
        world.main.remove(copy)
        if world.now < world.outage_end or copy.bad:
            world.dlq.append(Copy(world.now + STEP, copy.count, copy.sent, copy.bad))
        else:
            world.processed += 1
            world.deleted_at.append(world.now)


def run(
    outage_seconds: float,
    seed: int,
    *,
    consumer: int = 15,
    replay: int = 10,
    max_attempts: int = MAX_ATTEMPTS,
    poison: int = 0,
) -> World:
    world = World(START + outage_seconds, random.Random(seed), consumer, replay, max_attempts)
    world.dlq = [Copy(START, None, START, bad=n < poison) for n in range(300)]
    breaker = Breaker(
        MemoryStore.for_policy(DEMO_BREAKER_POLICY, timing=True),
        PollerSwitch(),
        logger=logging.getLogger("test.breaker.outage"),
        count_attribute=COUNT,
        policy=DEMO_BREAKER_POLICY,
        clock=lambda: world.now,
        max_attempts=max_attempts,
        depth=lambda: len(world.dlq),
        timing=lambda: QueueTiming(visibility_seconds=5, max_receive_count=1),
        delay_seconds=4.0,
        deleting=world.deleting,
    )
    for _ in range(math.ceil(200 / STEP)):
        replay_step(world, breaker)
        consumer_step(world)
        world.now += STEP
        if world.processed + world.parked == 300:
            break
    return world


@pytest.mark.parametrize("outage_seconds", range(55, 71))
def test_no_message_parks_wherever_the_outage_ends_against_the_probes(
    outage_seconds: int,
) -> None:
    # Two attempts: a message that spent one before the breaker opened has one left, and the
    # last probe (here about 63 s in) must not spend it. Before the outage was known until the
    # close, an end at 64-65.5 s parked 2-5 messages.
    world = run(outage_seconds, seed=outage_seconds, max_attempts=2)
    assert (world.processed, world.parked) == (300, 0)


@pytest.mark.parametrize(("consumer", "replay"), [(5, 10), (15, 10), (15, 30), (40, 40), (5, 60)])
def test_no_message_parks_whatever_the_pace_of_consumer_and_replay(
    consumer: int, replay: int
) -> None:
    world = run(61.0, seed=consumer * replay, consumer=consumer, replay=replay)
    assert (world.processed, world.parked) == (300, 0)


@pytest.mark.parametrize("outage_seconds", [0.0, 30.0])
def test_poison_still_parks_when_the_consumer_deletes_the_others(outage_seconds: float) -> None:
    # 30 poison messages among 270 good ones: the consumer's deletions tell them from an
    # outage, so their last attempts are not held back for long; they end parked, the others
    # processed.
    world = run(outage_seconds, seed=3, poison=30)
    assert (world.processed, world.parked) == (270, 30)
