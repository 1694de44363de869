"""`dlq-replay-origin` (WRITE_ORIGIN_ATTRIBUTE=true): the first DLQ message id and the attempt on
every replayed copy, so a consumer can deduplicate by `origin_id` across replays; written only
when a slot is free, never at the cost of a park."""

from __future__ import annotations

import pytest
from dlq_replay.consumer import origin_id
from dlq_replay.core.attributes import ORIGIN_ATTRIBUTE

from integration.harness import (
    COUNT,
    Outgoing,
    ReplayFactory,
    ReplayQueues,
    Sqs,
    attributes_of,
    record_ids,
    string,
)

pytestmark = pytest.mark.emulator

ON = {"WRITE_ORIGIN_ATTRIBUTE": "true", "MAX_ATTEMPTS": "5"}


def test_the_origin_names_the_first_dlq_message_across_replays(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    replay = make_replay(queues, ON)
    event = sqs.dead_letter_event(queues, [Outgoing("order 7", {"kind": string("a")})])
    (first_id,) = record_ids(event)

    assert replay(event) == {"batchItemFailures": []}
    (first,) = sqs.drain(queues.main)
    assert attributes_of(first)[ORIGIN_ATTRIBUTE] == {
        "DataType": "String",
        "StringValue": f"{first_id}/1",
    }
    assert origin_id(first) == first_id

    # The copy fails again: a new DLQ message (its own id), the same origin, the next attempt.
    again = sqs.dead_letter_event(queues, [Outgoing(first["Body"], first["MessageAttributes"])])  # type: ignore[arg-type]
    assert replay(again) == {"batchItemFailures": []}
    (second,) = sqs.drain(queues.main)
    assert attributes_of(second)[ORIGIN_ATTRIBUTE]["StringValue"] == f"{first_id}/2"
    assert attributes_of(second)[COUNT]["StringValue"] == "2"
    assert attributes_of(second)["kind"] == {"DataType": "String", "StringValue": "a"}
    assert origin_id(second) == first_id
    # The Lambda record shape reads the same.
    assert (
        origin_id(
            sqs.dead_letter_event(
                queues, [Outgoing("x", {ORIGIN_ATTRIBUTE: string(f"{first_id}/2")})]
            )["Records"][0]
        )
        == first_id
    )


def test_off_by_default_and_without_origin_a_message_is_its_own(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    event = sqs.dead_letter_event(queues, [Outgoing("plain")])

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    (copy,) = sqs.drain(queues.main)
    assert ORIGIN_ATTRIBUTE not in attributes_of(copy)
    assert origin_id(copy) == copy["MessageId"]
    assert origin_id(event["Records"][0]) == event["Records"][0]["messageId"]


def test_no_free_slot_means_no_origin_and_still_a_replay(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    """Nine attributes and the count fill SQS's ten: the copy goes without an origin."""
    nine = {f"a{i}": string(str(i)) for i in range(9)}
    event = sqs.dead_letter_event(queues, [Outgoing("full", nine)])

    assert make_replay(queues, ON)(event) == {"batchItemFailures": []}

    (copy,) = sqs.drain(queues.main)
    assert set(attributes_of(copy)) == {*nine, COUNT}
    assert sqs.drain(queues.operator) == []
