"""The local event source: Lambda's SQS event source mapping, outside Lambda.

In-process moto; moto serves visibility timeouts in real time, so the queues that must hand a
failure back use a 1 s visibility timeout.
"""

from __future__ import annotations

import base64
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import EndpointConnectionError
from dlq_replay.local.eventsource import LocalEventSource, Polling, run_pollers
from emulation import eventually
from integration.harness import REGION, Outgoing, Sqs, binary, number, string

from .support import RecordingHandler, depth, id_of, send_ids

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


RAW = b"\x00\xff\xfe\x80(not utf-8"


def test_deletes_only_the_records_not_in_batch_item_failures(sqs: Sqs) -> None:
    queue = sqs.create_queue("work", {"VisibilityTimeout": "1"})
    ids = [f"m{index}" for index in range(10)]
    send_ids(sqs.client, queue.url, ids)
    failing = {"m2", "m5", "m7"}
    handler = RecordingHandler(fail_ids=failing)
    source = LocalEventSource(sqs.client, queue.url, handler, Polling(wait_seconds=0))

    received = 0
    while received < len(ids):
        got = source.poll_once()
        assert got, "a message went missing before the first delivery"
        received += got

    assert sorted(handler.calls) == sorted(ids)
    assert source.stats.received == 10
    assert source.stats.deleted == 7
    assert source.stats.failed == 3
    # The failures were neither deleted nor handed back at once: in flight until their
    # visibility timeout, like Lambda leaves them.
    assert depth(sqs.client, queue.url) == {"visible": 0, "in_flight": 3, "delayed": 0}
    assert source.poll_once() == 0

    eventually(  # the 1 s visibility timeout
        lambda: depth(sqs.client, queue.url)["visible"] == len(failing),
        "the failures became visible again",
        after=1.1,
    )
    again = RecordingHandler()
    retry = LocalEventSource(sqs.client, queue.url, again, Polling(wait_seconds=0))
    while retry.poll_once():
        pass
    assert set(again.calls) == failing
    assert all(count == 1 for count in again.calls.values())
    for event in again.events:
        for record in event["Records"]:
            assert record["attributes"]["ApproximateReceiveCount"] == "2"
    assert depth(sqs.client, queue.url) == {"visible": 0, "in_flight": 0, "delayed": 0}


def test_a_batch_that_fails_whole_is_left_whole(sqs: Sqs) -> None:
    queue = sqs.create_queue("all-fail", {"VisibilityTimeout": "1"})
    ids = [f"m{index}" for index in range(4)]
    send_ids(sqs.client, queue.url, ids)
    source = LocalEventSource(sqs.client, queue.url, RecordingHandler(ids), Polling(wait_seconds=0))
    while source.poll_once():
        pass
    assert source.stats.deleted == 0
    assert depth(sqs.client, queue.url)["in_flight"] == 4


def test_passes_every_message_and_system_attribute(sqs: Sqs) -> None:
    queue = sqs.create_queue("attrs")
    trace = "Root=1-6741a1b2-0123456789abcdef01234567;Sampled=1"
    attributes = {
        "text": string("héllo"),
        "count": number(3, "Number.int"),
        "raw": binary(RAW),
        "tag": string("x", "String.custom"),
    }
    sqs.send(queue, Outgoing('{"id": "only"}', attributes, trace_header=trace))
    handler = RecordingHandler()
    source = LocalEventSource(sqs.client, queue.url, handler, Polling(wait_seconds=0))

    assert source.poll_once() == 1

    (event,) = handler.events
    (record,) = event["Records"]
    assert record["eventSourceARN"] == queue.arn
    assert record["awsRegion"] == REGION
    assert source.queue_arn == queue.arn
    assert record["attributes"]["AWSTraceHeader"] == trace
    assert {"ApproximateReceiveCount", "SentTimestamp", "SenderId"} <= set(record["attributes"])
    assert set(record["messageAttributes"]) == set(attributes)
    assert record["messageAttributes"]["text"]["stringValue"] == "héllo"
    assert record["messageAttributes"]["count"]["dataType"] == "Number.int"
    assert base64.b64decode(record["messageAttributes"]["raw"]["binaryValue"]) == RAW
    assert record["messageAttributes"]["tag"]["dataType"] == "String.custom"


def test_batches_never_exceed_ten_or_the_configured_size(sqs: Sqs) -> None:
    queue = sqs.create_queue("batches")
    ids = [f"m{index:02d}" for index in range(25)]
    send_ids(sqs.client, queue.url, ids)
    handler = RecordingHandler()
    source = LocalEventSource(sqs.client, queue.url, handler, Polling(wait_seconds=0))
    while source.poll_once():
        pass
    assert sorted(handler.calls) == ids
    assert max(handler.batch_sizes) == 10
    assert sum(handler.batch_sizes) == 25

    send_ids(sqs.client, queue.url, ids[:7])
    small = RecordingHandler()
    three = LocalEventSource(sqs.client, queue.url, small, Polling(batch_size=3, wait_seconds=0))
    while three.poll_once():
        pass
    assert sorted(small.calls) == ids[:7]
    assert max(small.batch_sizes) == 3

    for size in (0, 11):
        with pytest.raises(ValueError, match="batch_size"):
            LocalEventSource(sqs.client, queue.url, small, Polling(batch_size=size))


@pytest.mark.usefixtures("atomic_receive")
def test_concurrent_pollers_handle_each_message_exactly_once(sqs: Sqs) -> None:
    queue = sqs.create_queue("concurrent")
    ids = [f"m{index:02d}" for index in range(50)]
    send_ids(sqs.client, queue.url, ids)
    stop = threading.Event()

    class SlowHandler(RecordingHandler):
        """Holds each batch a moment, so the pollers overlap; stops them once all are done."""

        def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
            time.sleep(0.05)
            response = super().__call__(event, context)
            with self.lock:
                if sum(self.calls.values()) >= len(ids):
                    stop.set()
            return response

    handler = SlowHandler()
    source = LocalEventSource(sqs.client, queue.url, handler, Polling(wait_seconds=1))
    threads = run_pollers(source, 3, stop)
    assert len(threads) == 3
    assert stop.wait(20), f"only {sum(handler.calls.values())} of 50 handled"
    for thread in threads:
        thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)

    assert sorted(handler.calls) == ids
    assert handler.calls.most_common(1)[0][1] == 1, "a message was handled twice"
    assert len(handler.threads) > 1, "the pollers did not run side by side"
    assert max(handler.batch_sizes) <= 10
    assert source.stats.received == 50
    assert source.stats.deleted == 50
    assert depth(sqs.client, queue.url) == {"visible": 0, "in_flight": 0, "delayed": 0}


def test_run_returns_at_once_when_stopped_and_finishes_the_batch_in_hand(
    setup_client: SQSClient, sqs: Sqs
) -> None:
    queue = sqs.create_queue("stop-in-batch", {"VisibilityTimeout": "30"})
    ids = [f"m{index:02d}" for index in range(25)]
    send_ids(setup_client, queue.url, ids)
    stop = threading.Event()

    class StopInside(RecordingHandler):
        def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
            stop.set()  # a stop request arrives while this batch is in hand
            return super().__call__(event, context)

    handler = StopInside()
    source = LocalEventSource(setup_client, queue.url, handler, Polling(wait_seconds=1))
    started = time.monotonic()
    source.run(stop)
    assert time.monotonic() - started < 5

    assert handler.batch_sizes == [10], "polled again after the stop request"
    assert source.stats.deleted == 10
    left: list[str] = []
    while batch := setup_client.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=10).get(
        "Messages", []
    ):
        left.extend(id_of(m["Body"]) for m in batch)
    assert sorted(left + list(handler.calls)) == ids


def test_a_poll_that_raises_is_logged_and_retried_without_ending_the_poller(
    sqs: Sqs, caplog: pytest.LogCaptureFixture
) -> None:
    """The endpoint fails one receive (after boto3's retries): the poll is retried. (A handler
    that raises fails its record alone: test_a_record_the_handler_raises_on_fails_alone.)"""
    queue = sqs.create_queue("flaky-endpoint", {"VisibilityTimeout": "1"})
    send_ids(sqs.client, queue.url, ["m0"])
    calls: list[str] = []
    refused: list[str] = []
    stop = threading.Event()

    def refuse_once(**kwargs: Any) -> None:
        del kwargs
        if not refused:
            refused.append("receive")
            raise EndpointConnectionError(endpoint_url=queue.url)

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        del context
        calls.append(id_of(event["Records"][0]["body"]))
        stop.set()
        return {"batchItemFailures": []}

    sqs.client.meta.events.register("before-call.sqs.ReceiveMessage", refuse_once)
    try:
        source = LocalEventSource(sqs.client, queue.url, handler, Polling(wait_seconds=0))
        poller = threading.Thread(target=source.run, args=(stop,), daemon=True)
        poller.start()
        poller.join(timeout=15)
        stop.set()
    finally:
        sqs.client.meta.events.unregister("before-call.sqs.ReceiveMessage", refuse_once)

    assert not poller.is_alive()
    assert calls == ["m0"]  # received on the retried poll, handled once
    assert source.stats.poll_errors == 1
    assert source.stats.deleted == 1
    assert "poll failed; retrying" in caplog.text
    assert depth(sqs.client, queue.url) == {"visible": 0, "in_flight": 0, "delayed": 0}


def test_what_is_under_way_is_counted_while_it_is_and_nothing_after(sqs: Sqs) -> None:
    """The worker's shutdown says what it leaves from these counts (cli worker `left`)."""
    queue = sqs.create_queue("under-way", {"VisibilityTimeout": "30"})
    send_ids(sqs.client, queue.url, ["m0", "m1", "m2"])
    seen: list[tuple[int, int]] = []
    source: LocalEventSource

    def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
        seen.append(source.stats.under_way())
        return {"batchItemFailures": []}

    polling: list[tuple[int, int]] = []
    source = LocalEventSource(sqs.client, queue.url, handler, Polling(wait_seconds=0))
    sqs.client.meta.events.register(
        "before-call.sqs.ReceiveMessage", lambda **_: polling.append(source.stats.under_way())
    )
    received = 0
    while received < 3:
        received += source.poll_once()
    assert polling[0] == (1, 0)  # a receive waiting, nothing in hand yet
    assert sum(in_hand for _, in_hand in seen) == 3  # every message in hand while handled
    assert all(waiting == 0 for waiting, _ in seen)
    assert source.stats.under_way() == (0, 0)


class RaisesOnPoison:
    """A handler that raises for any batch holding the poison record, as a handler bug
    triggered by one record would."""

    def __init__(self) -> None:
        self.handled: list[str] = []

    def __call__(self, event: dict[str, Any], context: object) -> dict[str, Any]:
        ids = [id_of(record["body"]) for record in event["Records"]]
        if "poison" in ids:
            raise RecursionError("maximum recursion depth exceeded")
        self.handled.extend(ids)
        return {"batchItemFailures": []}


def test_a_record_the_handler_raises_on_fails_alone(sqs: Sqs) -> None:
    queue = sqs.create_queue("poisoned", {"VisibilityTimeout": "30"})
    ids = [f"m{index}" for index in range(9)] + ["poison"]
    send_ids(sqs.client, queue.url, ids)
    handler = RaisesOnPoison()
    source = LocalEventSource(
        sqs.client, queue.url, handler, Polling(wait_seconds=0, batch_size=10)
    )
    received = 0
    while received < len(ids):
        got = source.poll_once()  # never raises for one record
        assert got
        received += got
    assert sorted(handler.handled) == sorted(ids[:-1])
    assert (source.stats.deleted, source.stats.failed) == (9, 1)
    assert depth(sqs.client, queue.url) == {"visible": 0, "in_flight": 1, "delayed": 0}
