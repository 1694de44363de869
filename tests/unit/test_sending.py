"""Packing copies into SendMessageBatch requests: ≤ 10 entries, ≤ 1 MiB, order kept."""

from __future__ import annotations

from dlq_replay.core.attributes import Attribute
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.sqs.sending import MAX_BATCH_BYTES, MAX_BATCH_ENTRIES, pack

from ._support import MAIN

KIB = 1024


def outbound(record_id: str, body_bytes: int, **attrs: Attribute) -> OutboundMessage:
    return OutboundMessage(
        record_id=record_id, queue_url=MAIN, body="b" * body_bytes, attributes=attrs
    )


def ids(requests: list[list[OutboundMessage]]) -> list[list[str]]:
    return [[m.record_id for m in request] for request in requests]


def test_limits_are_the_sqs_ones() -> None:
    assert MAX_BATCH_ENTRIES == 10
    assert MAX_BATCH_BYTES == 1_048_576


def test_at_most_ten_entries_per_request_in_order() -> None:
    messages = [outbound(f"m{i:02}", 100) for i in range(25)]
    requests = list(pack(messages))
    assert [len(r) for r in requests] == [10, 10, 5]
    assert [m.record_id for r in requests for m in r] == [f"m{i:02}" for i in range(25)]


def test_exactly_ten_is_one_request() -> None:
    assert [len(r) for r in pack([outbound(str(i), 1) for i in range(10)])] == [10]
    assert [len(r) for r in pack([outbound(str(i), 1) for i in range(11)])] == [10, 1]


def test_three_messages_of_400_kib_need_two_requests() -> None:
    messages = [outbound(name, 400 * KIB) for name in ("a", "b", "c")]
    assert ids(list(pack(messages))) == [["a", "b"], ["c"]]


def test_one_mib_in_total_fits_one_request() -> None:
    half = MAX_BATCH_BYTES // 2
    assert ids(list(pack([outbound("a", half), outbound("b", half)]))) == [["a", "b"]]
    assert ids(list(pack([outbound("a", half), outbound("b", half + 1)]))) == [["a"], ["b"]]


def test_attributes_count_towards_the_request_size() -> None:
    half = MAX_BATCH_BYTES // 2
    tagged = outbound("b", half - 10, n=Attribute("Number", "12345"))  # 1 + 6 + 5 = 12 bytes
    assert tagged.size_bytes == half + 2
    assert ids(list(pack([outbound("a", half), tagged]))) == [["a"], ["b"]]


def test_oversized_message_goes_alone() -> None:
    messages = [
        outbound("s1", 10),
        outbound("s2", 10),
        outbound("big", MAX_BATCH_BYTES + 1),
        outbound("s3", 10),
    ]
    assert ids(list(pack(messages))) == [["s1", "s2"], ["big"], ["s3"]]
    assert ids(list(pack([outbound("big", 2 * MAX_BATCH_BYTES)]))) == [["big"]]


def test_full_size_messages_one_per_request() -> None:
    messages = [outbound(str(i), MAX_BATCH_BYTES) for i in range(3)]
    assert ids(list(pack(messages))) == [["0"], ["1"], ["2"]]


def test_size_and_count_limits_together() -> None:
    # 12 messages of 100 KiB: 10 fit by size (1000 KiB), so the count limit splits first.
    small = [outbound(f"a{i}", 100 * KIB) for i in range(12)]
    assert [len(r) for r in pack(small)] == [10, 2]
    # 12 messages of 150 KiB: 6 fit by size (900 KiB), a 7th would pass 1 MiB.
    bigger = [outbound(f"b{i}", 150 * KIB) for i in range(12)]
    assert [len(r) for r in pack(bigger)] == [6, 6]
    for request in pack(bigger):
        assert sum(m.size_bytes for m in request) <= MAX_BATCH_BYTES


def test_nothing_to_pack() -> None:
    assert list(pack([])) == []
