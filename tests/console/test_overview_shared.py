"""The overview is one read shared by every open page: pages asking at the same moment cause
one read, pages polling cause no read of their own (a refresher reads every OVERVIEW_SECONDS
while a page asked within OVERVIEW_IDLE_SECONDS), and a read is ListQueues once plus one
GetQueueAttributes per queue. The SQS requests are counted on the console's own client, with
botocore's event hooks (before-send, once per HTTP request)."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import EndpointConnectionError
from dlq_replay.cli.console import state
from dlq_replay.demo.emulator import create_queues

from .support import Browser, Served, park, served

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator
PAGES = 10
REFRESHER = "overview-refresher"  # the thread name the console gives its refresher


class Calls:
    """Every SQS request the console's client sends, by operation."""

    def __init__(self, console: Served) -> None:
        self.counts: Counter[str] = Counter()
        self.listed_by: list[str] = []  # the thread of each ListQueues (the reading one)
        self._lock = threading.Lock()
        self.down = False  # True: each request fails as an unreachable endpoint would
        console.console.connection.sqs.meta.events.register("before-send.sqs", self._sent)

    def _sent(self, event_name: str, request: Any, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.counts[operation] += 1
            if operation == "ListQueues":
                self.listed_by.append(threading.current_thread().name)
        if self.down:
            raise EndpointConnectionError(endpoint_url=str(request.url))

    def __getitem__(self, operation: str) -> int:
        with self._lock:
            return self.counts[operation]

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    def between_reads(self, per_read: int) -> Counter[str]:
        """The counts at a moment no read is under way (each read made all its calls)."""
        deadline = time.monotonic() + 10
        while True:
            with self._lock:
                now = Counter(self.counts)
            if now["GetQueueAttributes"] == now["ListQueues"] * per_read:
                return now
            assert time.monotonic() < deadline, now
            time.sleep(0.01)


@pytest.fixture
def console(endpoint: str, client: SQSClient) -> Iterator[tuple[Served, list[str]]]:
    """A console on two wirings of main -> DLQ -> operator queue, and every queue URL its
    region lists (the module's emulator may hold other tests' queues too)."""
    prefix = f"ov{uuid.uuid4().hex[:6]}"
    first = create_queues(client, prefix=f"{prefix}a")
    create_queues(client, prefix=f"{prefix}b")
    park(client, first.operator, ["parked"] * 3)
    with served(endpoint, first) as running:
        pages = client.get_paginator("list_queues").paginate()
        yield running, [url for page in pages for url in page.get("QueueUrls", [])]


def failed(view: dict[str, Any]) -> bool:
    return any(str(note).startswith("refresh failed") for note in view["notes"])


def ask_at_once(console: Served, path: str, pages: int = PAGES) -> list[int]:
    """`pages` browsers ask `path` at the same moment; their statuses."""
    start = threading.Barrier(pages)
    statuses: list[int] = []

    def page() -> None:
        browser = Browser(console.url)
        start.wait()
        statuses.append(browser.request(path).status)

    threads = [threading.Thread(target=page) for _ in range(pages)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return statuses


def poll(console: Served, path: str, *, pages: int, seconds: float) -> int:
    """`pages` browsers each ask `path` over and over for `seconds`; how many answers were
    200 (every one must be)."""
    answers: list[int] = []
    end = time.monotonic() + seconds

    def page() -> None:
        browser = Browser(console.url)
        while time.monotonic() < end:
            answers.append(browser.request(path).status)
            time.sleep(0.02)

    threads = [threading.Thread(target=page) for _ in range(pages)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    assert set(answers) == {200}
    return len(answers)


def test_pages_asking_at_once_cause_one_read(
    console: tuple[Served, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    served_console, listed = console
    monkeypatch.setattr(state, "OVERVIEW_SECONDS", 3600.0)  # no refresh within the test
    calls = Calls(served_console)

    statuses = ask_at_once(served_console, "/api/overview")
    statuses += ask_at_once(served_console, "/")

    assert statuses == [200] * (2 * PAGES)
    assert calls["ListQueues"] == 1
    assert calls["GetQueueAttributes"] == len(listed)  # each queue once, counters included
    assert calls.total() == 1 + len(listed)


def test_polling_pages_share_the_refresher(
    console: tuple[Served, list[str]], client: SQSClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    served_console, listed = console
    monkeypatch.setattr(state, "OVERVIEW_SECONDS", 0.5)
    calls = Calls(served_console)
    browser = Browser(served_console.url)
    # This test's own operator queue (the module's emulator holds other tests' queues too).
    operator = served_console.console.connection.deployment.operator
    assert operator in listed
    name = operator.rsplit("/", 1)[-1]

    def backlog() -> int:
        rows = browser.json("/api/overview")["rows"]
        return int(next(row["visible"] for row in rows if row["name"] == name))

    assert backlog() == 3
    started = time.monotonic()
    asked = poll(served_console, "/api/overview", pages=5, seconds=3.0)
    elapsed = time.monotonic() - started
    # Each read is ListQueues and one GetQueueAttributes per queue, nothing else.
    counts = calls.between_reads(len(listed))
    assert set(counts) == {"ListQueues", "GetQueueAttributes"}, counts
    reads = counts["ListQueues"]
    # The first read, then one per 0.5 s at most: never one per page's request.
    assert 2 <= reads <= 3 + elapsed / 0.5, (reads, elapsed)
    assert asked >= 10 * reads
    # Only the first request read; every later read was the console's refresher thread's.
    first, *later = calls.listed_by
    assert first != REFRESHER
    assert set(later) == {REFRESHER}, calls.listed_by

    # What changes shows within a refresh or two, without any page reading it.
    park(client, operator, ["one more"])
    deadline = time.monotonic() + 10
    while backlog() != 4:
        assert time.monotonic() < deadline, "the refresher never showed the new message"
        time.sleep(0.1)


def test_the_refresher_rests_when_no_page_asks_and_a_failed_refresh_is_a_note(
    console: tuple[Served, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    served_console, _ = console
    monkeypatch.setattr(state, "OVERVIEW_SECONDS", 0.2)
    calls = Calls(served_console)
    browser = Browser(served_console.url)
    first = browser.json("/api/overview")
    # With no page asking (within the idle minute), the refresher reads on by itself.
    deadline = time.monotonic() + 10
    while calls["ListQueues"] < 2:
        assert time.monotonic() < deadline, "the refresher never read"
        time.sleep(0.05)
    assert set(calls.listed_by[1:]) == {REFRESHER}

    # Unreachable SQS: the pages keep the last overview, saying since when.
    calls.down = True
    down_at = time.time()
    deadline = time.monotonic() + 10
    while not failed(view := browser.json("/api/overview")):
        assert time.monotonic() < deadline, view
        time.sleep(0.1)
    assert view["rows"] == first["rows"]
    assert view["read_at"] <= down_at + 1
    assert "EndpointConnectionError" in " ".join(view["notes"])
    time.sleep(0.5)  # more refreshes fail: still the last overview read, one note
    later = browser.json("/api/overview")
    assert later["read_at"] == view["read_at"]
    assert later["rows"] == first["rows"]
    assert sum(1 for note in later["notes"] if note.startswith("refresh failed")) == 1
    calls.down = False

    # Nobody asks for a while (a second here): the refresher stops reading (a read under way,
    # waiting out its retries, ends first). Running, it would read every 0.2 s.
    monkeypatch.setattr(state, "OVERVIEW_IDLE_SECONDS", 1.0)
    deadline = time.monotonic() + 30
    before, quiet_since = calls.total(), time.monotonic()
    while time.monotonic() - quiet_since < 1.5:
        assert time.monotonic() < deadline, "the refresher never rested"
        time.sleep(0.05)
        if calls.total() != before:
            before, quiet_since = calls.total(), time.monotonic()

    # A page comes back: it reads at once (it is the first again), and the notes are fresh.
    again = browser.json("/api/overview")
    assert calls["ListQueues"] >= 1
    assert calls.total() > before
    assert again["read_at"] > first["read_at"]
    assert not failed(again)
