"""MAX_MESSAGE_AGE_SECONDS against SQS: the replayed copy carries its first failure, and a copy
whose first failure is older than the limit is parked `max-age` instead of replayed."""

from __future__ import annotations

import time

from integration.harness import (
    COUNT,
    PARK_REASON,
    FakeClock,
    Outgoing,
    ReplayFactory,
    ReplayQueues,
    Sqs,
    attributes_of,
    number,
)

FIRST_FAILURE = "dlq-replay-first-failure"
HOUR = 3600


def test_a_replay_carries_the_first_failure_and_a_later_round_parks_it_max_age(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    env = {"MAX_MESSAGE_AGE_SECONDS": str(HOUR), "MAX_ATTEMPTS": "5"}
    clock = FakeClock(time.time())
    event = sqs.dead_letter_event(queues, [Outgoing("slow to fix")])
    first_receive = int(event["Records"][0]["attributes"]["ApproximateFirstReceiveTimestamp"])

    assert make_replay(queues, env, clock=clock)(event) == {"batchItemFailures": []}

    (replayed,) = sqs.drain(queues.main)
    assert attributes_of(replayed) == {
        COUNT: {"DataType": "Number", "StringValue": "1"},
        FIRST_FAILURE: {"DataType": "Number", "StringValue": str(first_receive // 1000)},
    }

    # The copy fails again; by now its first failure is more than an hour old.
    again = sqs.dead_letter_event(
        queues,
        [Outgoing("slow to fix", {COUNT: number(1), FIRST_FAILURE: number(first_receive // 1000)})],
    )
    clock.advance(HOUR + 1)

    assert make_replay(queues, env, clock=clock)(again) == {"batchItemFailures": []}

    assert sqs.drain(queues.main) == []
    (parked,) = sqs.drain(queues.operator)
    assert attributes_of(parked) == {
        COUNT: {"DataType": "Number", "StringValue": "1"},
        FIRST_FAILURE: {"DataType": "Number", "StringValue": str(first_receive // 1000)},
        PARK_REASON: {"DataType": "String", "StringValue": "max-age"},
    }


def test_off_by_default_the_copy_gets_no_first_failure(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    event = sqs.dead_letter_event(queues, [Outgoing("as before")])

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    (replayed,) = sqs.drain(queues.main)
    assert attributes_of(replayed) == {COUNT: {"DataType": "Number", "StringValue": "1"}}
