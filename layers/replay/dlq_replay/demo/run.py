"""`make demo`: the replay at work on an embedded SQS emulator, no AWS account needed.

An SQS emulator (moto's server) starts on 127.0.0.1; main, DLQ and operator queues are wired
as the template wires them; a flaky consumer works the main queue (some messages fail once or
twice, some always fail) while the local event source replays the DLQ with short backoff
settings. At the end every message is accounted for: processed, parked, or lost (must be 0).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.consumer import VisibilityHeartbeat, replay_attempt
from dlq_replay.core.attributes import PARK_REASON_ATTRIBUTE
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.settings import Settings
from dlq_replay.local.eventsource import LocalEventSource, run_pollers
from dlq_replay.sqs.client import SQS_CLIENT_CONFIG
from dlq_replay.sqs.depth import QueueDepth, queue_depth
from dlq_replay.sqs.draining import drain
from dlq_replay.sqs.replayer import Replayer

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
MAIN_MAX_RECEIVE_COUNT = 1
SAFETY_NET_MAX_RECEIVE_COUNT = 20


@dataclass(frozen=True, slots=True)
class DemoOptions:
    messages: int = 300
    failure_rate: float = 0.3
    poison_rate: float = 0.05
    max_attempts: int = 3
    base_seconds: int = 1
    multiplier: float = 2.0
    cap_seconds: int = 4
    jitter: str = "full"
    pollers: int = 2
    consumers: int = 2
    timeout_seconds: float = 90.0
    seed: int | None = None
    live: bool = True


@dataclass
class Tally:
    """What the demo saw, updated from several threads."""

    expected: set[str] = field(default_factory=set)
    processed: set[str] = field(default_factory=set)
    deliveries_by_attempt: Counter[int] = field(default_factory=Counter)
    replay_outcomes: Counter[str] = field(default_factory=Counter)
    parked_by_reason: Counter[str] = field(default_factory=Counter)
    depths: dict[str, QueueDepth] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _OutcomeCounter(logging.Handler):
    """Counts the replay's per-record outcome lines (the same lines Lambda would log)."""

    def __init__(self, tally: Tally) -> None:
        super().__init__(logging.INFO)
        self._tally = tally

    def emit(self, record: logging.LogRecord) -> None:
        outcome = getattr(record, "outcome", None)
        if outcome is None:
            return
        with self._tally.lock:
            self._tally.replay_outcomes[str(record.getMessage()).removeprefix("record ")] += 1
            reason = getattr(record, "reason", None)
            if outcome == "park" and reason:
                self._tally.parked_by_reason[str(reason)] += 1


@contextmanager
def emulator() -> Iterator[str]:
    """moto's SQS server on 127.0.0.1 at a free port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    # moto's receive is not atomic across threads: two concurrent receives can race over a
    # message being dead-lettered, and one of them answers HTTP 500 (boto3 retries it; the
    # message is redelivered, never lost). The server would print a traceback for each.
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def emulator_client(endpoint_url: str) -> SQSClient:
    session = boto3.Session(
        aws_access_key_id="demo",
        aws_secret_access_key="demo",  # noqa: S106 - the emulator accepts any key
        region_name=REGION,
    )
    return session.client("sqs", endpoint_url=endpoint_url, config=SQS_CLIENT_CONFIG)


@dataclass(frozen=True, slots=True)
class Queues:
    main: str
    dlq: str
    operator: str


def create_queues(sqs: SQSClient, prefix: str = "demo") -> Queues:
    """Main → DLQ → operator, wired like the template's create-everything mode."""

    def arn(url: str) -> str:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return attributes["Attributes"]["QueueArn"]

    def redrive(target: str, count: int) -> str:
        return json.dumps({"deadLetterTargetArn": arn(target), "maxReceiveCount": count})

    operator = sqs.create_queue(QueueName=f"{prefix}-operator")["QueueUrl"]
    dlq = sqs.create_queue(
        QueueName=f"{prefix}-dlq",
        Attributes={
            "VisibilityTimeout": "10",
            "RedrivePolicy": redrive(operator, SAFETY_NET_MAX_RECEIVE_COUNT),
        },
    )["QueueUrl"]
    main = sqs.create_queue(
        QueueName=f"{prefix}-main",
        Attributes={
            "VisibilityTimeout": "5",
            "RedrivePolicy": redrive(dlq, MAIN_MAX_RECEIVE_COUNT),
        },
    )["QueueUrl"]
    return Queues(main=main, dlq=dlq, operator=operator)


def send_messages(
    sqs: SQSClient, queue_url: str, options: DemoOptions, rng: random.Random
) -> set[str]:
    """Send the demo's messages; each body says how it will behave at the consumer."""
    ids: set[str] = set()
    batch: list[Any] = []
    for index in range(options.messages):
        roll = rng.random()
        if roll < options.poison_rate:
            kind, fail_until = "poison", options.max_attempts + 1
        elif roll < options.poison_rate + options.failure_rate:
            kind, fail_until = "transient", rng.randint(1, max(1, options.max_attempts - 1))
        else:
            kind, fail_until = "ok", 0
        message_id = f"m{index:05d}"
        ids.add(message_id)
        body = json.dumps({"id": message_id, "kind": kind, "fail_until": fail_until})
        batch.append({"Id": str(len(batch)), "MessageBody": body})
        if len(batch) == 10:
            sqs.send_message_batch(QueueUrl=queue_url, Entries=batch)
            batch = []
    if batch:
        sqs.send_message_batch(QueueUrl=queue_url, Entries=batch)
    return ids


def consume(sqs: SQSClient, queue_url: str, tally: Tally, stop: threading.Event) -> None:
    """The flaky consumer: a message fails while its replay attempt is below `fail_until`.

    An emulator error is shrugged off like a real consumer would: the message in hand comes
    back after its visibility timeout.
    """
    while not stop.is_set():
        try:
            _consume_batch(sqs, queue_url, tally)
        except (ClientError, BotoCoreError):
            stop.wait(0.5)


def _consume_batch(sqs: SQSClient, queue_url: str, tally: Tally) -> None:
    messages = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=1,
        MessageAttributeNames=["All"],
    ).get("Messages", [])
    for message in messages:
        attempt = replay_attempt(message)
        body = json.loads(message["Body"])
        with tally.lock:
            tally.deliveries_by_attempt[attempt] += 1
        with VisibilityHeartbeat(sqs, queue_url, message["ReceiptHandle"], timeout=5):
            succeeded = attempt >= int(body["fail_until"])
        if succeeded:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            with tally.lock:
                tally.processed.add(str(body["id"]))
        else:
            # Give it back at once: the next receive exceeds maxReceiveCount → DLQ.
            sqs.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )


def watch_depths(sqs: SQSClient, queues: Queues, tally: Tally, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        for label, url in (
            ("main", queues.main),
            ("dlq", queues.dlq),
            ("operator", queues.operator),
        ):
            try:
                depth = queue_depth(sqs, url)
            except (ClientError, BotoCoreError):
                continue  # the display shows the last reading
            with tally.lock:
                tally.depths[label] = depth


def drain_parked(sqs: SQSClient, queue_url: str) -> dict[str, str]:
    """Read (and delete) every parked message: id → park reason."""
    parked: dict[str, str] = {}
    for message in drain(sqs, queue_url):
        reason = message.get("MessageAttributes", {}).get(PARK_REASON_ATTRIBUTE)
        text = reason.get("StringValue", "?") if reason else "?"
        parked[str(json.loads(message["Body"])["id"])] = text
    return parked


@dataclass(frozen=True, slots=True)
class DemoResult:
    sent: int
    processed: int
    parked: int
    lost: int
    parked_by_reason: dict[str, int]
    deliveries_by_attempt: dict[int, int]
    seconds: float
    completed: bool
    interrupted: bool = False


def run_demo(options: DemoOptions) -> int:
    """Run the demo; exit code 0 when every message is accounted for, 1 otherwise."""
    result = demo(options)
    _print_summary(result, options)
    if result.interrupted:
        return 130
    return 0 if result.lost == 0 and result.completed else 1


def demo(options: DemoOptions) -> DemoResult:
    rng = random.Random(options.seed)  # noqa: S311 - demo data, not cryptography
    tally = Tally()
    started = time.monotonic()
    with emulator() as endpoint_url:
        sqs = emulator_client(endpoint_url)
        queues = create_queues(sqs)
        settings = Settings(
            main_queue_url=queues.main,
            operator_queue_url=queues.operator,
            max_attempts=options.max_attempts,
            backoff=BackoffPolicy(
                options.base_seconds,
                options.multiplier,
                options.cap_seconds,
                Jitter(options.jitter),
            ),
            sqs_endpoint_url=endpoint_url,
        )
        replay_log = logging.getLogger("dlq_replay.demo.replay")
        replay_log.propagate = False
        replay_log.setLevel(logging.INFO)
        counter = _OutcomeCounter(tally)
        replay_log.addHandler(counter)
        handler = LambdaReplay(Replayer(settings, sqs, logger=replay_log, rng=rng))
        source = LocalEventSource(sqs, queues.dlq, handler, wait_seconds=1)
        tally.expected = send_messages(sqs, queues.main, options, rng)
        stop = threading.Event()
        threads = run_pollers(source, options.pollers, stop)
        threads += [
            threading.Thread(target=consume, args=(sqs, queues.main, tally, stop), daemon=True)
            for _ in range(options.consumers)
        ]
        threads.append(
            threading.Thread(target=watch_depths, args=(sqs, queues, tally, stop), daemon=True)
        )
        for thread in threads[options.pollers :]:
            thread.start()
        completed = interrupted = False
        try:
            completed = _wait(tally, options, started, stop)
        except KeyboardInterrupt:
            # Ctrl-C: stop the threads, finish the batches in hand, and still account.
            interrupted = True
        finally:
            stop.set()
            for thread in threads:
                thread.join()
            replay_log.removeHandler(counter)
        parked = drain_parked(sqs, queues.operator)
    with tally.lock:
        accounted = tally.processed | set(parked)
        return DemoResult(
            sent=len(tally.expected),
            processed=len(tally.processed),
            parked=len(parked),
            lost=len(tally.expected - accounted),
            parked_by_reason=dict(Counter(parked.values())),
            deliveries_by_attempt=dict(sorted(tally.deliveries_by_attempt.items())),
            seconds=round(time.monotonic() - started, 1),
            completed=completed,
            interrupted=interrupted,
        )


def _wait(tally: Tally, options: DemoOptions, started: float, stop: threading.Event) -> bool:
    """Until every message is processed or parked (or the timeout); shows progress if live."""

    def finished() -> bool:
        with tally.lock:
            parked = sum(tally.parked_by_reason.values())
            return len(tally.processed) + parked >= len(tally.expected) and all(
                q in tally.depths and tally.depths[q].total == 0 for q in ("main", "dlq")
            )

    if not options.live:
        while time.monotonic() - started < options.timeout_seconds:
            if finished():
                return True
            time.sleep(0.5)
        return False
    from rich.live import Live

    with Live(_render(tally, started), refresh_per_second=4, transient=False) as live:
        while time.monotonic() - started < options.timeout_seconds:
            live.update(_render(tally, started))
            if finished():
                return True
            time.sleep(0.25)
    return False


def _render(tally: Tally, started: float) -> Any:
    from rich.columns import Columns
    from rich.table import Table

    with tally.lock:
        queues = Table(title="queues", title_justify="left")
        for column in ("queue", "visible", "in flight", "delayed"):
            queues.add_column(column, justify="right" if column != "queue" else "left")
        for name in ("main", "dlq", "operator"):
            depth = tally.depths.get(name, QueueDepth(0, 0, 0))
            queues.add_row(name, str(depth.visible), str(depth.in_flight), str(depth.delayed))
        deliveries = Table(title="consumer deliveries by replay attempt", title_justify="left")
        deliveries.add_column("attempt", justify="right")
        deliveries.add_column("deliveries", justify="right")
        for attempt, count in sorted(tally.deliveries_by_attempt.items()):
            deliveries.add_row(str(attempt), str(count))
        outcomes = Table(
            title=f"outcomes ({time.monotonic() - started:.0f} s)", title_justify="left"
        )
        outcomes.add_column("what")
        outcomes.add_column("count", justify="right")
        outcomes.add_row("sent", str(len(tally.expected)))
        outcomes.add_row("processed", str(len(tally.processed)))
        for reason, count in sorted(tally.parked_by_reason.items()):
            outcomes.add_row(f"parked: {reason}", str(count))
        for what, count in sorted(tally.replay_outcomes.items()):
            outcomes.add_row(f"replay {what}", str(count))
    return Columns([queues, deliveries, outcomes])


def _print_summary(result: DemoResult, options: DemoOptions) -> None:
    reasons = ", ".join(f"{k}={v}" for k, v in sorted(result.parked_by_reason.items())) or "none"
    attempts = ", ".join(f"{k}:{v}" for k, v in result.deliveries_by_attempt.items())
    if result.interrupted:
        status = "interrupted"
    elif result.completed:
        status = "complete"
    else:
        status = f"timed out after {options.timeout_seconds:.0f} s"
    # An interrupted run leaves messages in the queues: not done yet, not lost.
    missing = "not yet done" if result.interrupted else "lost"
    print(
        f"\ndemo {status} in {result.seconds} s: sent {result.sent}, processed {result.processed}, "
        f"parked {result.parked} ({reasons}), {missing} {result.lost}\n"
        f"consumer deliveries by replay attempt: {attempts}"
    )
