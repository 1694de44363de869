"""The console's reads never move a message, and each says what it read.

The outside report, reproduced on moto: a DLQ with its own RedrivePolicy (maxReceiveCount 6,
messages arriving with one receive) read again and again from the console. Three reads are
whole; the fourth stops at its first message (1 receive left) and says it is partial, N of
about M; from then on the console offers no Re-read, refuses one asked for anyway (409) with
the line naming the message, and SQS never moves a message to the next queue. The console's
own redrive of that message gives the receive it kept back, and reads go on.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING

import pytest
from dlq_replay.cli.console.snapshot import Filter
from dlq_replay.cli.console.state import RefusedReadError
from dlq_replay.demo.emulator import Queues
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from werkzeug.datastructures import MultiDict

from .support import Browser, console_of, depth, served

if TYPE_CHECKING:
    from dlq_replay.cli.console.snapshot import Snapshot
    from dlq_replay.cli.console.state import Console
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

REFUSED = "a read now could move it"


def wired(client: SQSClient, messages: int) -> Queues:
    """main (maxReceiveCount 1) -> DLQ (6) -> operator, and `messages` failed on main: each
    arrives on the DLQ with one receive, as SQS moves it."""
    prefix = f"seen-{uuid.uuid4().hex[:8]}"

    def create(name: str, target: str | None, count: int) -> str:
        if target is None:
            return client.create_queue(QueueName=f"{prefix}-{name}")["QueueUrl"]
        arn = client.get_queue_attributes(QueueUrl=target, AttributeNames=["QueueArn"])
        policy = {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": count}
        return client.create_queue(
            QueueName=f"{prefix}-{name}", Attributes={"RedrivePolicy": json.dumps(policy)}
        )["QueueUrl"]

    operator = create("operator", None, 0)
    dlq = create("dlq", operator, 6)
    main = create("main", dlq, 1)
    for n in range(messages):
        client.send_message(QueueUrl=main, MessageBody=f'{{"order": {n}}}')
    while depth(client, main):
        client.receive_message(QueueUrl=main, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return Queues(main, dlq, operator)


def read(console: Console, info: QueueInfo) -> Snapshot:
    snapshot = console.snapshot(info, fresh=True)
    deadline = time.monotonic() + 60
    while snapshot.state == "reading":
        assert time.monotonic() < deadline, "the read never ended"
        time.sleep(0.05)
    return snapshot


def test_rereading_until_refused_moves_nothing_and_each_read_says_what_it_read(
    endpoint: str, client: SQSClient
) -> None:
    queues = wired(client, 5)
    with console_of(endpoint, queues) as console:
        info = queue_info(console.connection.sqs, queues.dlq)
        whole = [read(console, info) for _ in range(3)]
        assert [(s.state, s.examined, s.expected, s.partial) for s in whole] == [
            ("ready", 5, 5, None)
        ] * 3
        assert console.reread_refusal(info) is None

        fourth = read(console, info)

        assert fourth.state == "ready"
        assert (fourth.examined, fourth.expected) == (1, 5)
        assert fourth.partial is not None
        assert fourth.partial.startswith("stopped: a message has 1 or fewer receives left")
        (held,) = fourth.ids(Filter(), time.time())
        line = console.reread_refusal(info)
        assert line is not None
        assert line.startswith(f"{info.name}: message {held} has 1 receive left")
        assert REFUSED in line
        for _ in range(3):
            with pytest.raises(RefusedReadError) as refused:
                console.snapshot(info, fresh=True)
            assert str(refused.value) == line
            assert refused.value.status == 409
        assert console.snapshot(info) is fourth  # the page keeps showing the last read
        assert depth(client, queues.operator) == 0
        assert depth(client, queues.dlq) == 5


def test_the_page_offers_no_reread_and_the_server_refuses_one(
    endpoint: str, client: SQSClient
) -> None:
    queues = wired(client, 2)
    with served(endpoint, queues) as found:
        info = queue_info(found.console.connection.sqs, queues.dlq)
        for _ in range(4):  # 2, 3, 4 receives, then the 4th read's sample: 5 (1 left)
            read(found.console, info)
        assert found.console.reread_refusal(info) is not None
        browser = Browser(found.url)

        page = browser.request(f"/q/{info.name}")
        answer = browser.request(f"/q/{info.name}/reread", {"csrf": found.console.csrf})

        assert page.status == 200
        assert REFUSED in page.body
        assert 'id="reread"' not in page.body
        assert answer.status == 409
        assert REFUSED in answer.body
        assert depth(client, queues.operator) == 0


def test_the_consoles_redrive_of_the_message_lifts_the_refusal(
    endpoint: str, client: SQSClient
) -> None:
    queues = wired(client, 3)
    with console_of(endpoint, queues) as console:
        info = queue_info(console.connection.sqs, queues.dlq)
        snapshot = read(console, info)
        while snapshot.partial is None:
            snapshot = read(console, info)
        (held,) = snapshot.ids(Filter(), time.time())
        assert held in (console.reread_refusal(info) or "")

        order = console.order(info, MultiDict([("id", held), ("to", "main")]))
        job = console.start_redrive(order)
        deadline = time.monotonic() + 60
        while job.state == "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)

        assert job.state == "done", (job.error, job.rows)
        assert held not in (console.reread_refusal(info) or "")
        assert depth(client, queues.operator) == 0
