"""An in-memory SQS over HTTP for the end-to-end benchmarks: SQS's JSON protocol
(`X-Amz-Target: AmazonSQS.<Operation>`, what boto3 speaks to SQS), every request held a fixed
latency before it is answered, as through a network round trip.

It keeps what the tools depend on: long polls (`WaitTimeSeconds`, answered as soon as a message
is visible), visibility timeouts (a message not deleted in time comes back), `DelaySeconds`,
the three approximate counters, batch entries refused for an unknown receipt handle. Every
operation is O(1) or O(log n) per message, so the figures are the client's, not the fake's.
It also keeps the books a benchmark checks: every body that arrives in each queue (a message
moved twice shows up twice) and when a queue last became empty.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from fake_http import FakeRequest, FakeServer

REGION = "us-east-1"
ACCOUNT = "123456789012"
SQS_JSON = {"Content-Type": "application/x-amz-json-1.0"}
# STS's answer to GetCallerIdentity: a redrive (audited) asks it once, as against AWS.
CALLER_IDENTITY = (
    b'<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
    b"<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/bench</Arn>"
    b"<UserId>AIDABENCH</UserId><Account>123456789012</Account></GetCallerIdentityResult>"
    b"<ResponseMetadata><RequestId>bench</RequestId></ResponseMetadata>"
    b"</GetCallerIdentityResponse>"
)
# The operations besides ReceiveMessage, and the methods that answer them.
OPERATIONS = {
    "GetQueueAttributes": "_get_queue_attributes",
    "ListDeadLetterSourceQueues": "_list_dead_letter_source_queues",
    "GetQueueUrl": "_get_queue_url",
    "ListQueues": "_list_queues",
    "SendMessage": "_send_message",
    "SendMessageBatch": "_send_message_batch",
    "DeleteMessageBatch": "_delete_message_batch",
    "ChangeMessageVisibilityBatch": "_change_message_visibility_batch",
}


@dataclass(slots=True)
class Message:
    message_id: str
    body: str
    attributes: dict[str, Any]
    md5: str
    receive_count: int = 0
    handle: str | None = None  # the latest receipt handle while in flight


@dataclass(slots=True)
class Queue:
    name: str
    visible: deque[Message] = field(default_factory=deque)
    delayed: list[tuple[float, int, Message]] = field(default_factory=list)  # heap: ready at
    in_flight: dict[str, tuple[float, Message]] = field(default_factory=dict)  # handle ->
    expiries: list[tuple[float, str]] = field(default_factory=list)  # heap: (deadline, handle)
    arrived: list[str] = field(default_factory=list)  # every body sent to it, in order
    empty_at: float | None = None  # time.monotonic() when it last became empty

    @property
    def empty(self) -> bool:
        return not (self.visible or self.delayed or self.in_flight)

    def settle(self, now: float) -> None:
        """Delayed messages whose time came, and in-flight ones whose timeout ended, visible."""
        while self.delayed and self.delayed[0][0] <= now:
            self.visible.append(heapq.heappop(self.delayed)[2])
        while self.expiries and self.expiries[0][0] <= now:
            deadline, handle = heapq.heappop(self.expiries)
            held = self.in_flight.get(handle)
            if held is not None and held[0] == deadline:
                del self.in_flight[handle]
                held[1].handle = None
                self.visible.append(held[1])

    def next_change(self) -> float | None:
        times = [heap[0][0] for heap in (self.delayed, self.expiries) if heap]
        return min(times) if times else None


class FakeSqs(FakeServer):
    """The server: `queue(name)` makes a queue, `fill` puts messages in, the tools call it."""

    def __init__(self, latency: float) -> None:
        super().__init__(_Request, latency)
        self.changed = threading.Condition()
        self.queues: dict[str, Queue] = {}
        self.calls: dict[str, int] = {}
        self.first_receive_at: float | None = None
        self.first_request_at: float | None = None  # as it arrived, before the latency
        self.first_copy_at: float | None = None  # the first send's arrival
        self._ids = itertools.count()

    # -- set-up and books ---------------------------------------------------------------------

    def url(self, name: str) -> str:
        return f"{self.endpoint_url}/{ACCOUNT}/{name}"

    def queue(self, name: str) -> str:
        with self.changed:
            self.queues.setdefault(name, Queue(name))
        return self.url(name)

    def fill(self, name: str, bodies: list[str], attributes: dict[str, Any]) -> None:
        with self.changed:
            queue = self.queues[name]
            for body in bodies:
                queue.visible.append(self._message(body, attributes))
            queue.empty_at = None

    def _message(self, body: str, attributes: dict[str, Any]) -> Message:
        number = next(self._ids)
        md5 = hashlib.md5(body.encode()).hexdigest()
        return Message(f"m-{number:08d}", body, attributes, md5)

    def _queue_of(self, request: dict[str, Any]) -> Queue:
        return self.queues[str(request["QueueUrl"]).rsplit("/", 1)[1]]

    # -- the operations -----------------------------------------------------------------------

    def answer(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        with self.changed:
            self.calls[operation] = self.calls.get(operation, 0) + 1
        if operation == "ReceiveMessage":
            return self._receive(request)
        with self.changed:
            name = OPERATIONS.get(operation)
            if name is None:
                raise ValueError(f"the fake does not do {operation}")
            result: dict[str, Any] = getattr(self, name)(request)
            self.changed.notify_all()
            return result

    def _receive(self, request: dict[str, Any]) -> dict[str, Any]:
        wanted = int(request.get("MaxNumberOfMessages", 1))
        hide = float(request.get("VisibilityTimeout", 30))
        deadline = time.monotonic() + float(request.get("WaitTimeSeconds", 0))
        with self.changed:
            queue = self._queue_of(request)
            while True:
                now = time.monotonic()
                queue.settle(now)
                if queue.visible or now >= deadline:
                    break
                upcoming = queue.next_change()
                until = deadline if upcoming is None else min(deadline, upcoming)
                self.changed.wait(max(0.0, until - now))
            if self.first_receive_at is None and queue.visible:
                self.first_receive_at = now
            taken: list[dict[str, Any]] = []
            while queue.visible and len(taken) < wanted:
                message = queue.visible.popleft()
                message.receive_count += 1
                message.handle = f"h-{next(self._ids)}-{message.message_id}"
                queue.in_flight[message.handle] = (now + hide, message)
                heapq.heappush(queue.expiries, (now + hide, message.handle))
                taken.append(
                    {
                        "MessageId": message.message_id,
                        "ReceiptHandle": message.handle,
                        "MD5OfBody": message.md5,
                        "Body": message.body,
                        "Attributes": {
                            "ApproximateReceiveCount": str(message.receive_count),
                            "SentTimestamp": "1700000000000",
                        },
                        **({"MessageAttributes": message.attributes} if message.attributes else {}),
                    }
                )
        return {"Messages": taken} if taken else {}

    def _get_queue_attributes(self, request: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue_of(request)
        queue.settle(time.monotonic())
        return {
            "Attributes": {
                "QueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue.name}",
                "VisibilityTimeout": "30",
                "MessageRetentionPeriod": "1209600",
                "ApproximateNumberOfMessages": str(len(queue.visible)),
                "ApproximateNumberOfMessagesNotVisible": str(len(queue.in_flight)),
                "ApproximateNumberOfMessagesDelayed": str(len(queue.delayed)),
            }
        }

    def _list_dead_letter_source_queues(self, request: dict[str, Any]) -> dict[str, Any]:
        del request
        return {"queueUrls": []}

    def _get_queue_url(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"QueueUrl": self.url(request["QueueName"])}

    def _list_queues(self, request: dict[str, Any]) -> dict[str, Any]:
        prefix = str(request.get("QueueNamePrefix", ""))
        return {"QueueUrls": [self.url(name) for name in self.queues if name.startswith(prefix)]}

    def _send(self, queue: Queue, entry: dict[str, Any]) -> dict[str, Any]:
        message = self._message(entry["MessageBody"], entry.get("MessageAttributes", {}))
        queue.arrived.append(message.body)
        delay = int(entry.get("DelaySeconds", 0))
        if delay:
            ready = time.monotonic() + delay
            heapq.heappush(queue.delayed, (ready, next(self._ids), message))
        else:
            queue.visible.append(message)
        queue.empty_at = None
        return {"MessageId": message.message_id, "MD5OfMessageBody": message.md5}

    def _send_message(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._send(self._queue_of(request), request)

    def _send_message_batch(self, request: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue_of(request)
        done = [{"Id": e["Id"], **self._send(queue, e)} for e in request["Entries"]]
        return {"Successful": done, "Failed": []}

    def _batch(self, request: dict[str, Any], act: Any) -> dict[str, list[dict[str, Any]]]:
        queue = self._queue_of(request)
        done: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for entry in request["Entries"]:
            held = queue.in_flight.get(entry["ReceiptHandle"])
            if held is None:
                failed.append(
                    {"Id": entry["Id"], "Code": "ReceiptHandleIsInvalid", "SenderFault": True}
                )
                continue
            act(queue, entry, held[1])
            done.append({"Id": entry["Id"]})
        if queue.empty and queue.empty_at is None:
            queue.empty_at = time.monotonic()
        return {"Successful": done, "Failed": failed}

    def _delete_message_batch(self, request: dict[str, Any]) -> dict[str, Any]:
        def delete(queue: Queue, entry: dict[str, Any], message: Message) -> None:
            del queue.in_flight[entry["ReceiptHandle"]]
            message.handle = None

        return self._batch(request, delete)

    def _change_message_visibility_batch(self, request: dict[str, Any]) -> dict[str, Any]:
        def change(queue: Queue, entry: dict[str, Any], message: Message) -> None:
            deadline = time.monotonic() + float(entry["VisibilityTimeout"])
            queue.in_flight[entry["ReceiptHandle"]] = (deadline, message)
            heapq.heappush(queue.expiries, (deadline, entry["ReceiptHandle"]))
            queue.settle(time.monotonic())

        return self._batch(request, change)


class _Request(FakeRequest):
    server: FakeSqs

    def do_POST(self) -> None:  # noqa: N802 - http.server calls it by this name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if b"Action=GetCallerIdentity" in body:  # the CLI's audit trail asks who is calling
            time.sleep(self.server.latency)
            self.answer(200, CALLER_IDENTITY, {"Content-Type": "text/xml"})
            return
        request = json.loads(body)
        operation = self.headers["X-Amz-Target"].split(".", 1)[1]
        if self.server.first_request_at is None:
            self.server.first_request_at = time.monotonic()
        if self.server.first_copy_at is None and operation.startswith("SendMessage"):
            self.server.first_copy_at = time.monotonic()
        time.sleep(self.server.latency)
        try:
            status, answer = 200, self.server.answer(operation, request)
        except (KeyError, ValueError) as error:
            status = 400
            answer = {"__type": "com.amazonaws.sqs#InvalidParameterValue", "message": str(error)}
        self.answer(status, json.dumps(answer).encode(), SQS_JSON)
