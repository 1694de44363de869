"""A read says what it read (`ops.receiving.Receiving`): it receives with several receives at
once, each message once, and when it ends before the queue does it says why: a message it
holds shown again (its hide time ran out), its hide time nearly gone, the receive budget, or
a stop. Whatever way it ends, every message it received is given back.

The parallel receives (a read goes one receive at a time up to `sequential_up_to` messages,
here made small) take `atomic_receive`: moto's receives made atomic as SQS's are (moto 5 can
hand two concurrent receives the same message)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import pytest
from dlq_replay.ops.receiving import HIDE_MARGIN, INTERRUPTED, Receiving

from .support import Queues, depth, park

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

pytestmark = pytest.mark.emulator


def everything(message: MessageTypeDef) -> bool:
    del message
    return True


def read_all(receiving: Receiving) -> list[str]:
    try:
        return [m["MessageId"] for batch in receiving.batches(None, everything) for m in batch]
    finally:
        receiving.release()


MESSAGES = 140
SEQUENTIAL = 30  # the first 30 one receive at a time, the rest in parallel


@pytest.mark.usefixtures("atomic_receive")
def test_a_long_read_receives_each_message_once_and_gives_every_one_back(
    sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(MESSAGES)])
    receiving = Receiving(
        sqs, queues.operator, None, 60, 0, sequential_up_to=SEQUENTIAL, receivers=4
    )
    threads: set[str] = set()

    def noted(message: MessageTypeDef) -> bool:
        threads.add(threading.current_thread().name)
        return everything(message)

    try:
        seen = [m["MessageId"] for batch in receiving.batches(None, noted) for m in batch]
    finally:
        receiving.release()

    assert len(seen) == MESSAGES
    assert len(set(seen)) == MESSAGES
    assert "receive" in threads  # the receives after the first SEQUENTIAL, in parallel
    assert receiving.complete
    assert receiving.partial is None
    assert depth(sqs, queues.operator) == (MESSAGES, 0)


@pytest.mark.usefixtures("atomic_receive")
def test_a_limit_takes_exactly_that_many_with_receives_in_parallel(
    sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(MESSAGES)])
    park(sqs, queues.operator, [f"r{i}" for i in range(MESSAGES)], reason="rejected")
    receiving = Receiving(
        sqs, queues.operator, None, 60, 0, sequential_up_to=SEQUENTIAL, receivers=4
    )

    def rejected(message: MessageTypeDef) -> bool:
        return message.get("Body", "").startswith("r")

    try:
        chosen = [m["Body"] for batch in receiving.batches(97, rejected) for m in batch]
    finally:
        examined = len(receiving.handles)
        receiving.release()

    assert len(chosen) == 97
    assert all(body.startswith("r") for body in chosen)
    assert receiving.complete  # what was asked for: not a partial read
    assert examined >= 97
    assert depth(sqs, queues.operator) == (2 * MESSAGES, 0)


@pytest.mark.moto_only(reason="times a hide time of 1 s against the emulator's own clock")
def test_a_message_shown_again_ends_the_read_as_partial(sqs: SQSClient, queues: Queues) -> None:
    """The read outlasted its hide time (here a clock that never moves keeps the margin from
    stopping it first): SQS shows a message again, and the read stops there, partial."""
    park(sqs, queues.operator, [f"m{i}" for i in range(5)])
    receiving = Receiving(
        sqs, queues.operator, None, hide_seconds=1, wait_seconds=3, clock=lambda: 0.0
    )

    seen = read_all(receiving)

    assert len(set(seen)) == 5
    assert receiving.partial is not None
    assert receiving.partial.startswith("stopped: SQS showed again a message this read")
    assert not receiving.complete
    assert depth(sqs, queues.operator) == (5, 0)


def test_a_read_stops_before_its_hide_time_runs_out(sqs: SQSClient, queues: Queues) -> None:
    """A read that has used HIDE_MARGIN of its hide time stops before its next receive: the
    messages it hid first would show again."""
    park(sqs, queues.operator, [f"m{i}" for i in range(25)])
    receiving = Receiving(sqs, queues.operator, None, hide_seconds=2, wait_seconds=0)
    slow_once = threading.Event()

    def slowly(message: MessageTypeDef) -> bool:
        if not slow_once.is_set():
            slow_once.set()
            time.sleep(HIDE_MARGIN * 2 + 0.1)
        return everything(message)

    try:
        seen = [m["MessageId"] for batch in receiving.batches(None, slowly) for m in batch]
    finally:
        receiving.release()

    assert len(seen) == 10  # the first receive only
    assert receiving.partial is not None
    assert receiving.partial.startswith("stopped: the read took 2 s, near its hide time of 2 s")
    assert depth(sqs, queues.operator) == (25, 0)


def test_a_stopped_read_says_it_was_stopped(sqs: SQSClient, queues: Queues) -> None:
    park(sqs, queues.operator, ["m"])
    stop = threading.Event()
    stop.set()
    receiving = Receiving(sqs, queues.operator, None, wait_seconds=0, stop=stop)

    assert read_all(receiving) == []
    assert receiving.partial == INTERRUPTED
    assert depth(sqs, queues.operator) == (1, 0)
