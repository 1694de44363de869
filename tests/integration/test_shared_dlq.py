"""One DLQ shared by several queues: each record goes back where it came from, routed by the
`DeadLetterQueueSourceArn` SQS puts on a dead-lettered message (LocalStack sets it; on moto, which
does not, the test adds it to the record)."""

from __future__ import annotations

from typing import Any

import pytest
from dlq_replay.local.eventsource import lambda_event
from emulation import Emulator

from integration.harness import (
    COUNT,
    PARK_REASON,
    REGION,
    Outgoing,
    Queue,
    ReplayFactory,
    ReplayQueues,
    Sqs,
    attributes_of,
    failed_ids,
)

pytestmark = pytest.mark.emulator


class SharedDlq:
    """billing, shipping and legacy all dead-letter into the replay queues' DLQ."""

    def __init__(self, sqs: Sqs, queues: ReplayQueues, *, sets_source: bool) -> None:
        self.sqs = sqs
        self.queues = queues
        self.sets_source = sets_source
        self.billing = sqs.create_source_queue("billing", queues.dlq)
        self.shipping = sqs.create_source_queue("shipping", queues.dlq)
        self.legacy = sqs.create_source_queue("legacy", queues.dlq)

    def record_from(self, source: Queue | None, body: str) -> dict[str, Any]:
        """Dead-letter `body` from `source` (the main queue when None) for real. Where the
        emulator does not set DeadLetterQueueSourceArn, add it as SQS would (None: a record that
        names no source, as from an older producer's tooling)."""
        origin = source or self.queues.main
        (dead,) = self.sqs.dead_letter(origin, self.queues.dlq, [Outgoing(body)])
        record: dict[str, Any]
        (record,) = lambda_event([dead], self.queues.dlq.arn, REGION)["Records"]
        if self.sets_source:
            assert record["attributes"]["DeadLetterQueueSourceArn"] == origin.arn
        elif source is not None:
            record["attributes"]["DeadLetterQueueSourceArn"] = source.arn
        return record


@pytest.fixture
def shared(sqs: Sqs, queues: ReplayQueues, emulator: Emulator) -> SharedDlq:
    return SharedDlq(sqs, queues, sets_source=emulator.sets_dead_letter_source)


def test_records_go_back_to_their_own_allowed_source_queue(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, shared: SharedDlq
) -> None:
    event = {
        "Records": [
            shared.record_from(shared.billing, "invoice"),
            shared.record_from(shared.shipping, "parcel"),
            shared.record_from(shared.legacy, "old"),  # a source that is not allowed
            shared.record_from(None, "no source named"),
        ]
    }
    allowed = f" {shared.billing.arn} ,{shared.shipping.arn}"
    replay = make_replay(queues, {"ALLOWED_SOURCE_QUEUE_ARNS": allowed})

    assert replay(event) == {"batchItemFailures": []}

    assert [m["Body"] for m in sqs.drain(shared.billing)] == ["invoice"]
    assert [m["Body"] for m in sqs.drain(shared.shipping)] == ["parcel"]
    assert sorted(m["Body"] for m in sqs.drain(queues.main)) == ["no source named", "old"]
    assert sqs.drain(shared.legacy) == []
    assert sqs.drain(queues.operator) == []


def test_without_a_main_queue_an_unlisted_source_is_parked_as_unknown_source(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, shared: SharedDlq
) -> None:
    event = {
        "Records": [
            shared.record_from(shared.billing, "invoice"),
            shared.record_from(shared.legacy, "old"),
            shared.record_from(None, "no source named"),
        ]
    }
    replay = make_replay(
        queues, {"MAIN_QUEUE_URL": None, "ALLOWED_SOURCE_QUEUE_ARNS": shared.billing.arn}
    )

    response = replay(event)

    assert failed_ids(response) == []
    (back,) = sqs.drain(shared.billing)
    assert back["Body"] == "invoice"
    assert attributes_of(back) == {COUNT: {"DataType": "Number", "StringValue": "1"}}
    parked = sqs.drain(queues.operator)
    assert sorted(m["Body"] for m in parked) == ["no source named", "old"]
    assert {attributes_of(m)[PARK_REASON]["StringValue"] for m in parked} == {"unknown-source"}
    assert sqs.total(queues.main) == 0
    assert sqs.drain(shared.legacy) == []
