"""`dlq-replay worker`: the replay as a long-lived process; a stop request (SIGINT, SIGTERM or
the stop event) finishes the batch in hand and exits 0, with nothing half-handled: every
message deleted from the DLQ has its copy in the main or the operator queue.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.cli.shutdown import Shutdown
from dlq_replay.core.settings import Settings
from dlq_replay.demo.emulator import create_queues
from dlq_replay.local.worker_loop import WorkerOptions, run_worker, settings_from
from dlq_replay.sqs.depth import queue_depth
from emulation import eventually
from integration.harness import COUNT, ReplayQueues, Sqs

from .support import (
    assert_partition,
    body_of,
    clean_env,
    depth,
    drain_ids,
    worker_command,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

pytestmark = pytest.mark.emulator


MAX_ATTEMPTS = 3


def send_mixed(sqs: SQSClient, dlq_url: str, count: int) -> tuple[list[str], set[str]]:
    """`count` messages into the DLQ; every fourth is at the attempt limit (it will be parked),
    the rest are replayed. Returns all ids and the ids to be parked."""
    ids = [f"m{index:04d}" for index in range(count)]
    parked = {message_id for index, message_id in enumerate(ids) if index % 4 == 0}
    for start in range(0, count, 10):
        entries: list[SendMessageBatchRequestEntryTypeDef] = []
        for index, message_id in enumerate(ids[start : start + 10]):
            entry: SendMessageBatchRequestEntryTypeDef = {
                "Id": str(index),
                "MessageBody": body_of(message_id),
            }
            if message_id in parked:
                entry["MessageAttributes"] = {
                    COUNT: {"DataType": "Number", "StringValue": str(MAX_ATTEMPTS)}
                }
            entries.append(entry)
        assert not sqs.send_message_batch(QueueUrl=dlq_url, Entries=entries).get("Failed")
    return ids, parked


def worker_settings(queues: ReplayQueues) -> Settings:
    # JITTER none with a 1 s base and cap: every replay is delayed exactly 1 s.
    return Settings.from_env(
        {
            "MAIN_QUEUE_URL": queues.main.url,
            "OPERATOR_QUEUE_URL": queues.operator.url,
            "MAX_ATTEMPTS": str(MAX_ATTEMPTS),
            "BACKOFF_BASE_SECONDS": "1",
            "BACKOFF_CAP_SECONDS": "1",
            "JITTER": "none",
        }
    )


class StopOnFirstRecord:
    """A replay logger that calls `on_record` once, at the first per-record line: the replay has
    written that batch's copies, the event source has not deleted anything yet."""

    def __init__(self, on_record: Callable[[], None]) -> None:
        self._on_record = on_record
        self.records = 0
        self.fired = threading.Event()
        self.stopped: dict[str, Any] = {}

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        pass

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        extra = dict(kwargs.get("extra") or {})
        # A parked record has a line of its own; the routine ones share their batch's line.
        reported = len(extra["records"]) if msg == "batch outcomes" else msg.startswith("record ")
        if reported:
            self.records += reported
            if not self.fired.is_set():
                self.fired.set()
                self._on_record()
        if msg == "worker stopped":
            self.stopped = dict(kwargs.get("extra") or {})

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        pass

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        pass


def everything(sqs: Sqs, queues: ReplayQueues) -> dict[str, list[str]]:
    """Where every message is now, after the replays' delays are over."""
    sqs.end_delays(queues.main)
    return {
        "dlq": drain_ids(sqs.client, queues.dlq.url),
        "main": drain_ids(sqs.client, queues.main.url),
        "operator": drain_ids(sqs.client, queues.operator.url),
    }


@pytest.mark.moto_only(reason="ends the replays' delays inside moto (Sqs.end_delays)")
def test_stop_requested_while_a_batch_is_in_hand(
    sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    ids, parked = send_mixed(sqs.client, queues.dlq.url, 30)
    stop = threading.Event()
    in_hand: dict[str, dict[str, int]] = {}

    def look_then_stop() -> None:
        # The batch's copies are written; its originals are still in the DLQ, in flight.
        in_hand.update(
            dlq=depth(sqs.client, queues.dlq.url),
            main=depth(sqs.client, queues.main.url),
            operator=depth(sqs.client, queues.operator.url),
        )
        stop.set()

    log = StopOnFirstRecord(look_then_stop)

    code = run_worker(
        replay_client,
        worker_settings(queues),
        WorkerOptions(dlq_url=queues.dlq.url, pollers=1, batch_size=10, wait_seconds=1),
        logger=log,
        stop=stop,
    )

    assert code == 0
    found = everything(sqs, queues)
    assert_partition(ids, found)
    # The batch in hand was finished (all ten copies written, all ten deleted) and no other
    # batch was started.
    assert len(found["dlq"]) == 20
    assert log.records == 10
    assert log.stopped["deleted"] == 10
    assert set(found["operator"]) == parked & (set(ids) - set(found["dlq"]))
    # Copy first, delete after: while the batch was in hand, its ten messages were both in the
    # DLQ (in flight) and written to main/operator.
    assert in_hand["dlq"] == {"visible": 20, "in_flight": 10, "delayed": 0}
    assert sum(in_hand["main"].values()) + sum(in_hand["operator"].values()) == 10


@pytest.mark.moto_only(reason="ends the replays' delays inside moto (Sqs.end_delays)")
@pytest.mark.usefixtures("atomic_receive")
def test_stop_from_another_thread_while_polling(
    sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    ids, parked = send_mixed(sqs.client, queues.dlq.url, 40)
    stop = threading.Event()
    timer = threading.Timer(1.0, stop.set)
    timer.start()
    started = time.monotonic()
    try:
        code = run_worker(
            replay_client,
            worker_settings(queues),
            WorkerOptions(dlq_url=queues.dlq.url, pollers=2, wait_seconds=1),
            logger=StopOnFirstRecord(lambda: None),
            stop=stop,
        )
    finally:
        timer.cancel()

    assert code == 0
    assert time.monotonic() - started < 4, "the worker did not stop within one long poll"
    found = everything(sqs, queues)
    assert_partition(ids, found)
    assert found["dlq"] == []
    assert sorted(found["operator"]) == sorted(parked)


@pytest.mark.moto_only(reason="ends the replays' delays inside moto (Sqs.end_delays)")
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"]
)
def test_a_signal_stops_the_worker_after_the_batch_in_hand(
    sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient, signum: signal.Signals
) -> None:
    """Through the CLI's one shutdown path (`cli.shutdown`): the signal sets the stop token,
    the batch in hand is finished, the exit code is 128 + the signal's number."""
    ids, _ = send_mixed(sqs.client, queues.dlq.url, 30)
    shutdown = Shutdown()
    seen_by_previous: list[int] = []

    def previous(number: int, frame: FrameType | None) -> None:
        seen_by_previous.append(number)

    original = signal.signal(signum, previous)
    safety = threading.Timer(10.0, shutdown.stop.set)
    safety.start()

    def send_signal() -> None:
        signal.pthread_kill(threading.main_thread().ident or 0, signum)
        # The handler runs in the main thread; the stop arrives while this batch is in hand.
        shutdown.stop.wait(2)

    log = StopOnFirstRecord(send_signal)
    try:
        code = shutdown.run(
            lambda: run_worker(
                replay_client,
                worker_settings(queues),
                WorkerOptions(dlq_url=queues.dlq.url, pollers=1, wait_seconds=1),
                logger=log,
                stop=shutdown.stop,
            ),
            lambda: "",
        )
        restored = signal.getsignal(signum)
    finally:
        safety.cancel()
        signal.signal(signum, original)

    assert code == 0
    assert shutdown.code == 128 + signum
    assert seen_by_previous == []
    assert restored is previous, "the shutdown did not give the signal back"
    found = everything(sqs, queues)
    assert_partition(ids, found)
    assert len(found["dlq"]) == 20
    assert log.stopped["deleted"] == 10


def test_settings_from_environment_with_options_on_top() -> None:
    env = {"OPERATOR_QUEUE_URL": "https://q/op", "MAX_ATTEMPTS": "5", "JITTER": "equal"}
    settings = settings_from(env, {"MAX_ATTEMPTS": "2", "MAIN_QUEUE_URL": None, "JITTER": None})
    assert settings.max_attempts == 2
    assert settings.main_queue_url is None
    assert settings.backoff.jitter.value == "equal"
    assert settings.operator_queue_url == "https://q/op"


class OutputReader:
    """Collects a subprocess's output lines in a thread; `saw` is set at the first line that
    contains `marker`."""

    def __init__(self, stream: Any, marker: str) -> None:
        self.lines: list[str] = []
        self.saw = threading.Event()
        self._marker = marker
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line)
            if self._marker in line:
                self.saw.set()

    def join(self) -> None:
        self._thread.join(timeout=5)

    def json_lines(self) -> list[dict[str, Any]]:
        parsed = []
        for line in self.lines:
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return parsed


@pytest.mark.usefixtures("atomic_receive")
def test_sigterm_to_the_worker_process_finishes_cleanly(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    queues = create_queues(emulator_sqs, prefix="sigterm")
    ids, _ = send_mixed(emulator_sqs, queues.dlq, 300)
    command = worker_command(
        queues,
        emulator_endpoint,
        "--region",
        "us-east-1",
        "--pollers",
        "2",
        "--wait-seconds",
        "1",
        "--max-attempts",
        str(MAX_ATTEMPTS),
        "--backoff-base-seconds",
        "1",
        "--backoff-cap-seconds",
        "1",
        "--jitter",
        "none",
    )
    env = clean_env(
        AWS_ACCESS_KEY_ID="demo", AWS_SECRET_ACCESS_KEY="demo", AWS_DEFAULT_REGION="us-east-1"
    )
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout = OutputReader(process.stdout, '"batch outcomes"')
    stderr = OutputReader(process.stderr, "\n")
    try:
        assert stdout.saw.wait(30), "the worker never replayed a batch:\n" + "".join(stderr.lines)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stdout.join()
    stderr.join()

    assert code == 0, "".join(stderr.lines)  # a service stopped cleanly (not 143: a failure)
    assert not any("Traceback" in line for line in stderr.lines + stdout.lines)
    eventually(  # the replays' 1 s delay
        lambda: queue_depth(emulator_sqs, queues.main).delayed == 0,
        "the replays' delays ended",
        after=1.2,
    )
    found = {
        "dlq": drain_ids(emulator_sqs, queues.dlq),
        "main": drain_ids(emulator_sqs, queues.main),
        "operator": drain_ids(emulator_sqs, queues.operator),
    }
    assert_partition(ids, found)
    (stopped,) = [line for line in stdout.json_lines() if line.get("message") == "worker stopped"]
    # Every deletion has its copy: what left the DLQ is exactly what the worker deleted.
    assert stopped["deleted"] == len(found["main"]) + len(found["operator"])
    # A batch is finished, or (received after the stop) made visible again untouched.
    assert stopped["received"] == stopped["deleted"] + stopped["released"], "left half-handled"
    assert stopped["delete_errors"] == 0
    assert found["dlq"], "the worker had finished before the signal: nothing was interrupted"


@pytest.mark.parametrize(
    ("polling", "in_hand", "expected"),
    [
        (0, 0, "no message was in hand"),
        (1, 0, "1 receive was still waiting"),
        (2, 0, "2 receives were still waiting"),
        (0, 1, "1 message in hand stays hidden until the DLQ's visibility timeout ends, then is"),
        (0, 3, "3 messages in hand stay hidden until the DLQ's visibility timeout ends, then are"),
    ],
)
def test_what_a_stop_leaves_is_counted_in_words_that_agree(
    polling: int, in_hand: int, expected: str
) -> None:
    """Not "1 receives were": the worker's last line when a stop cannot wait."""
    from dlq_replay.cli.worker import under_way_text

    assert under_way_text(polling, in_hand).startswith(expected)
    assert not re.search(r"\b1 (receives|messages)\b", under_way_text(polling, in_hand))
