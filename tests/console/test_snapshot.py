"""The snapshot reads what anyone who can send to a queue wrote: property tests of what the
console builds on it. A record goes back to the message SQS returned (what the plan hands
`ops.plan_copy`) unchanged, and the text filter finds exactly the bodies that hold the text."""

from __future__ import annotations

import time
from pathlib import Path
from tempfile import TemporaryDirectory

from dlq_replay.cli.console.snapshot import Filter, Snapshot, message_of
from dlq_replay.core.attributes import Attribute
from dlq_replay.ops.archive import ArchiveRecord, from_message
from dlq_replay.ops.queueinfo import QueueInfo
from hypothesis import given, settings
from hypothesis import strategies as st

names = st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=12)
values = st.one_of(
    st.builds(Attribute, st.just("String"), st.text(min_size=1, max_size=40)),
    st.builds(Attribute, st.just("Number"), st.integers().map(str)),
    st.builds(Attribute, st.just("Binary.gzip"), st.none(), st.binary(min_size=1, max_size=20)),
)
records = st.builds(
    ArchiveRecord,
    message_id=st.uuids().map(str),
    body=st.text(min_size=1, max_size=200),
    attributes=st.dictionaries(names, values, max_size=5),
    message_group_id=st.none() | st.text(min_size=1, max_size=10),
    source_arn=st.none() | st.just("arn:aws:sqs:us-east-1:123456789012:orders"),
    receive_count=st.integers(1, 99),
    sent_timestamp=st.integers(1_600_000_000_000, 1_800_000_000_000),
    kind=st.just("sqs"),
)

QUEUE = QueueInfo("http://q/orders-operator", "arn:aws:sqs:us-east-1:1:orders-operator",
                      fifo=False, visibility_timeout=30, redrive=None)  # fmt: skip


@given(records)
def test_a_record_is_the_message_sqs_returned(record: ArchiveRecord) -> None:
    again = from_message(message_of(record))
    assert isinstance(again, ArchiveRecord)
    assert again.body == record.body
    assert dict(again.attributes) == dict(record.attributes)
    assert again.message_group_id == record.message_group_id
    assert again.source_arn == record.source_arn
    assert again.sent_timestamp == record.sent_timestamp


@settings(max_examples=40, deadline=None)
@given(
    st.lists(records, min_size=1, max_size=12, unique_by=lambda r: r.message_id),
    st.text(max_size=3),
)
def test_the_text_filter_finds_exactly_the_bodies_that_hold_it(
    chosen: list[ArchiveRecord], text: str
) -> None:
    with TemporaryDirectory() as folder:
        snapshot = Snapshot(Path(folder), QUEUE)
        archive = Path(folder) / "read.jsonl"
        archive.write_text("".join(record.to_line() for record in chosen), "utf-8")
        snapshot._load(archive)
        now = time.time()
        found = set(snapshot.ids(Filter(text=text), now))
        assert found == {r.message_id for r in chosen if text in r.body}
        assert snapshot.count(Filter(), now) == len(chosen)
        shown = snapshot.rows(Filter(), now)
        assert {row.body for row in shown} == {r.body for r in chosen}
