"""One run of the outage scenario (bench/bench_outage.py): moto's SQS on a free port of
127.0.0.1, a real `dlq-replay worker` (the environment's console script, a subprocess) on the
DLQ, the scenario's own consumer (bench/outage_consumer.py) on the main queue, and an account
of every message by the id in its body.

The queues are wired as the template's create-everything mode wires them (main → DLQ →
operator, the DLQ's safety net to the operator queue), with the case's visibility timeout and
`maxReceiveCount` on the main queue. The messages are sent to the main queue once the worker
has started; the consumer fails everything for the case's outage. The run ends when the main
queue and the DLQ are both empty (everything consumed or parked), or `give_up_seconds` after
the consumer's recovery. Then the worker is stopped (SIGTERM: it finishes its batches), the
consumer too, and every queue is read from the emulator's own store (in flight and delayed
messages included, which no receive could see):

- parked: ids in the operator queue; left: ids still in the main queue or the DLQ;
- lost: ids sent and found nowhere (neither consumed, parked nor left);
- duplicates: ids found more than once (consumed twice, or consumed and parked, ...);
- openings: the worker's "outage breaker open" log lines (each change of the breaker is one).

The emulator is the demo's `sqs_emulator` (moto's SQS with atomic requests): plain moto's
server can drop a message when a delete races a send, which would show here as a loss that is
moto's, not the replay's.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from outage_consumer import Behaviour, Consumer, body_of, id_of

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

WORKER_START_SECONDS = 60
WORKER_STOP_SECONDS = 30
SETTLED_CHECK_SECONDS = 0.5


@dataclass(frozen=True)
class Case:
    """One scenario's timing and failures; `breaker` says whether the worker runs its breaker."""

    label: str
    messages: int = 200
    outage_seconds: float = 60
    max_attempts: int = 3
    backoff_base_seconds: int = 1
    backoff_cap_seconds: int = 8
    visibility_timeout: int = 2
    max_receive_count: int = 2
    failure_rate: float = 0.0
    poison_rate: float = 0.0
    give_up_seconds: float = 480
    seed: int = 1
    breaker: bool = True


@dataclass
class Result:
    """What one run found; times in seconds from the first message sent."""

    case: Case
    sent: int = 0
    consumed: int = 0  # distinct ids consumed
    parked: int = 0
    left: int = 0
    lost: int = 0
    duplicates: int = 0
    openings: int = 0
    recovery_to_last: float | None = None  # None: nothing consumed
    finished: bool = False  # main queue and DLQ emptied before giving up
    wall_seconds: float = 0.0
    breaker_events: list[tuple[float, str]] = field(default_factory=list)
    replays_of_consumed: dict[str, int] = field(default_factory=dict)  # replay count -> copies
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps(vars(self) | {"case": vars(self.case)})

    @classmethod
    def from_json(cls, text: str) -> Result:
        data = json.loads(text)
        events = [(float(when), str(phase)) for when, phase in data.pop("breaker_events")]
        return cls(case=Case(**data.pop("case")), breaker_events=events, **data)


def worker_command() -> list[str]:
    """The `dlq-replay` console script of this environment."""
    script = Path(sys.executable).with_name("dlq-replay")
    if not script.exists():
        raise SystemExit(f"bench_outage: no {script}; run `make venv` first")
    return [str(script)]


class WorkerLog:
    """Reads the worker's JSON log lines as they come, noting the breaker's changes."""

    def __init__(self, stream: IO[str], started_at: list[float]) -> None:
        self._stream = stream
        self._t0 = started_at  # [the run's time zero], once the messages are sent
        self.started = threading.Event()
        self.events: list[tuple[float, str]] = []
        self.tail: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self._stream:
            self.tail = [*self.tail[-19:], line.rstrip()]
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            message = str(record.get("message", ""))
            if message == "worker started":
                self.started.set()
            phase = record.get("breaker")
            if message.startswith("outage breaker") and isinstance(phase, str):
                since = time.monotonic() - self._t0[0] if self._t0 else 0.0
                self.events.append((round(since, 1), phase))


def create_queues(sqs: SQSClient, case: Case) -> tuple[str, str, str]:
    """Main, DLQ and operator queue, the main queue with the case's timing."""
    from dlq_replay.demo.emulator import create_queues as demo_queues

    queues = demo_queues(sqs, "outage", main_max_receive_count=case.max_receive_count)
    sqs.set_queue_attributes(
        QueueUrl=queues.main, Attributes={"VisibilityTimeout": str(case.visibility_timeout)}
    )
    return queues.main, queues.dlq, queues.operator


def start_worker(endpoint: str, case: Case, urls: Sequence[str]) -> subprocess.Popen[str]:
    main, dlq, operator = urls
    command = [
        *worker_command(),
        "worker",
        *("--dlq-url", dlq, "--main-queue-url", main, "--operator-queue-url", operator),
        *("--endpoint-url", endpoint, "--region", "us-east-1"),
        *("--max-attempts", str(case.max_attempts)),
        *("--backoff-base-seconds", str(case.backoff_base_seconds)),
        *("--backoff-cap-seconds", str(case.backoff_cap_seconds)),
        *([] if case.breaker else ["--no-breaker"]),
    ]
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "TMPDIR")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        PYTHONUNBUFFERED="1",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
    )
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def send(sqs: SQSClient, queue_url: str, ids: Sequence[str]) -> None:
    for start in range(0, len(ids), 10):
        entries: list[SendMessageBatchRequestEntryTypeDef] = [
            {"Id": str(n), "MessageBody": body_of(message_id)}
            for n, message_id in enumerate(ids[start : start + 10])
        ]
        failed = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries).get("Failed")
        if failed:
            raise RuntimeError(f"send refused: {failed}")


def run_case(case: Case) -> Result:
    """One run, start to account; a failure of the harness itself is `Result.error`."""
    from dlq_replay.demo.emulator import emulator_client, sqs_emulator

    result = Result(case)
    started = time.monotonic()
    with sqs_emulator() as emulator:
        sqs = emulator_client(emulator.endpoint_url)
        main, dlq, operator = create_queues(sqs, case)
        t0: list[float] = []
        worker = start_worker(emulator.endpoint_url, case, (main, dlq, operator))
        assert worker.stdout is not None
        log = WorkerLog(worker.stdout, t0)
        stop = threading.Event()
        try:
            if not log.started.wait(WORKER_START_SECONDS):
                result.error = "the worker did not start:\n" + "\n".join(log.tail)
                return result
            ids = [f"m{n:05d}" for n in range(case.messages)]
            rng = random.Random(case.seed)
            poison = frozenset(rng.sample(ids, round(case.messages * case.poison_rate)))
            t0.append(time.monotonic())
            recovery = t0[0] + case.outage_seconds
            consumer = Consumer(
                sqs, main, Behaviour(recovery, case.failure_rate, poison, case.seed + 1)
            )
            consuming = threading.Thread(target=consumer.run, args=(stop,), daemon=True)
            consuming.start()
            send(sqs, main, ids)
            result.sent = len(ids)
            deadline = recovery + case.give_up_seconds
            while time.monotonic() < deadline and worker.poll() is None:
                if not emulator.bodies(main) and not emulator.bodies(dlq):
                    result.finished = True
                    break
                time.sleep(SETTLED_CHECK_SECONDS)
            if worker.poll() is not None:
                result.error = f"the worker exited with {worker.returncode}:\n" + "\n".join(
                    log.tail
                )
        finally:
            stop_worker(worker)
            stop.set()
        consuming.join()
        log.thread.join(timeout=5)
        left = [*emulator.bodies(main), *emulator.bodies(dlq)]
        account(result, consumer.deliveries, ids, emulator.bodies(operator), left)
        if consumer.last_consumed is not None:
            result.recovery_to_last = round(max(0.0, consumer.last_consumed - recovery), 1)
    result.replays_of_consumed = {str(n): consumer.replays[n] for n in sorted(consumer.replays)}
    result.breaker_events = log.events
    result.openings = sum(1 for _, phase in log.events if phase == "open")
    result.wall_seconds = round(time.monotonic() - started, 1)
    return result


def stop_worker(worker: subprocess.Popen[str]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def account(
    result: Result,
    deliveries: Counter[str],
    ids: Sequence[str],
    operator_bodies: Sequence[str],
    left_bodies: Sequence[str],
) -> None:
    """Consumed, parked, left, lost and duplicates, by the id in every body."""
    parked = Counter(id_of(body) for body in operator_bodies)
    left = Counter(id_of(body) for body in left_bodies)
    seen = deliveries + parked + left
    result.consumed = len(deliveries)
    result.parked = len(parked)
    result.left = len(left)
    result.lost = sum(1 for message_id in ids if message_id not in seen)
    result.duplicates = sum(1 for count in seen.values() if count > 1)
