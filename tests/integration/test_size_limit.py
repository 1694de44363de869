"""The 1 MiB limit counts attribute bytes (name, data type and value of each), not the body alone:
a copy the count attribute would push over it is parked with `attribute-limit` instead of being
refused by SQS, and one that lands exactly on it is replayed.

moto ignores attribute bytes; LocalStack counts them as SQS does, which is what the first test
shows and why the other matters.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from integration.harness import (
    COUNT,
    Outgoing,
    RecordingLog,
    ReplayFactory,
    ReplayQueues,
    Sqs,
    attributes_of,
    number,
    string,
)

pytestmark = pytest.mark.emulator

LIMIT = 1_048_576
TAG = {"tag": string("x")}  # 3 + 6 + 1 = 10 bytes


def attribute_bytes(name: str, data_type: str, value: str) -> int:
    return len(name.encode()) + len(data_type.encode()) + len(value.encode())


TAG_BYTES = attribute_bytes("tag", "String", "x")
COUNT_1_BYTES = attribute_bytes(COUNT, "Number", "1")


@pytest.mark.localstack_only(reason="moto does not count attribute bytes against 1 MiB")
def test_sqs_refuses_a_message_whose_attributes_take_it_past_1_mib(
    sqs: Sqs, queues: ReplayQueues
) -> None:
    body = "b" * (LIMIT - TAG_BYTES - COUNT_1_BYTES)  # well under 1 MiB on its own
    with_count = {**TAG, COUNT: number(1)}

    sqs.send(queues.main, Outgoing(body, with_count))  # exactly 1 MiB: accepted
    with pytest.raises(ClientError) as refused:
        sqs.send(queues.main, Outgoing(body + "b", with_count))  # one byte more

    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert sqs.total(queues.main) == 1


def test_a_copy_the_count_would_push_past_1_mib_is_parked_and_one_at_the_limit_replayed(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_log: RecordingLog
) -> None:
    at_limit = "a" * (LIMIT - TAG_BYTES - COUNT_1_BYTES)
    over = "o" * (LIMIT - TAG_BYTES - COUNT_1_BYTES + 1)
    event = sqs.dead_letter_event(queues, [Outgoing(at_limit, TAG), Outgoing(over, TAG)])
    over_id = event["Records"][1]["messageId"]

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    (replayed,) = sqs.drain(queues.main)
    assert replayed["Body"] == at_limit
    assert attributes_of(replayed) == {**TAG, COUNT: {"DataType": "Number", "StringValue": "1"}}
    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == over
    # No room for the park reason either: the copy is the original, attribute for attribute.
    assert attributes_of(parked) == TAG
    (line,) = replay_log.for_message(over_id)
    assert (line.extra["outcome"], line.extra["reason"]) == ("park", "attribute-limit")
