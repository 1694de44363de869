"""Interrupt a `dlq-replay` command with a signal while its work is in flight, then rerun it, and
account for every message: the harness of tests/local/test_signals.py and bench/bench_signals.py.

The command runs as the real console script in a subprocess, against an SQS emulator (moto's
server or LocalStack) behind `tools/chaos.py`'s proxy, which adds latency to every request so
work is in flight when the signal comes; `slow_after_signal` makes every later request that
slow (an SQS that has become slow or unresponsive). The outcome counts, for each message id,
where it ended up after the interruption and after a rerun.

    python -m tools.interrupt --endpoint http://127.0.0.1:5000 --command redrive --signal INT
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3

from tools.chaos import ChaosProxy, Faults

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

COMMANDS = ("redrive", "export", "import", "worker")
REGION = "us-east-1"
HIDE_SECONDS = 60  # what the commands are told: a message left hidden stays so this long


@dataclass
class Scenario:
    endpoint: str  # the emulator itself (the command goes through the proxy)
    command: str
    signum: int
    workdir: Path
    dlq_replay: Sequence[str]  # the console command to run
    messages: int = 60
    latency: float = 0.05  # added to each request, so work is in flight
    slow_after_signal: float = 0.0  # each request after the signal takes this long (0: as before)
    prefix: str = "sig"
    env: dict[str, str] = field(default_factory=dict)
    slow_lead: float = 0.0  # the proxy turns slow this long before the signal (requests held)
    proxy: bool = True  # False: the command talks to the emulator itself (no added latency)
    second_signal: float | None = None  # seconds after the first: the same signal again
    concurrency: int = 2  # redrive's


@dataclass
class RunOutcome:
    code: int | None  # None: it did not exit within `exit_timeout`
    seconds_to_exit: float
    stdout: str
    stderr: str
    hidden_after: int  # messages left hidden in the source right after the exit
    tally: dict[str, Any] | None  # the command's --json output, when it printed one
    after_rerun: Counter[str] = field(default_factory=Counter)  # id -> copies delivered
    lost: int = 0  # ids neither delivered nor in the source (visible or hidden) after the rerun
    hidden_at_end: int = 0  # still hidden in the source after the rerun
    duplicates: int = 0  # extra copies delivered
    said: int = 0  # duplicates the first run announced (sent, original not deleted)
    hidden_later: int = 0  # messages hidden in the source one second after the exit


def client(endpoint: str) -> SQSClient:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )


def _depth(sqs: SQSClient, url: str) -> tuple[int, int, int]:
    """Visible, in flight (hidden), delayed."""
    found = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return (
        int(found.get("ApproximateNumberOfMessages", "0")),
        int(found.get("ApproximateNumberOfMessagesNotVisible", "0")),
        int(found.get("ApproximateNumberOfMessagesDelayed", "0")),
    )


def _body(message_id: str) -> str:
    return json.dumps({"id": message_id})


def _drain(sqs: SQSClient, url: str) -> list[str]:
    """Receive and delete every visible message; the ids of their bodies."""
    ids: list[str] = []
    empty = 0
    while empty < 2:
        batch = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, VisibilityTimeout=60
        ).get("Messages", [])
        if not batch:
            empty += 1
            continue
        empty = 0
        ids += [json.loads(m["Body"])["id"] for m in batch]
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
            ],
        )
    return ids


def _wait_for(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"never happened: {what}")
        time.sleep(0.02)


class Run:
    """One scenario: queues, the interrupted run, the rerun, the count."""

    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.sqs = client(scenario.endpoint)
        self.ids = [f"{scenario.prefix}-{i}" for i in range(scenario.messages)]
        name = f"{scenario.prefix}-{scenario.command}-{int(time.time() * 1000) % 10**8}"
        self.source = self.sqs.create_queue(QueueName=f"{name}-src")["QueueUrl"]
        self.destination = self.sqs.create_queue(QueueName=f"{name}-dst")["QueueUrl"]
        self.operator = self.sqs.create_queue(QueueName=f"{name}-op")["QueueUrl"]
        self.archive = scenario.workdir / f"{name}.jsonl"
        self.archives = [self.archive]
        self.proxy = ChaosProxy(
            scenario.endpoint, Faults(spike=1.0, spike_seconds=scenario.latency), seed=1
        )
        self.proxy_url = ""

    # -- the commands ---------------------------------------------------------------------------

    def args(self, archive: Path | None = None) -> list[str]:
        common = ["--endpoint-url", self.proxy_url, "--region", REGION]
        archive = archive or self.archive
        command = self.s.command
        if command == "redrive":
            return [
                "redrive", "--from", self.source, "--to", self.destination, "--client-side",
                "--concurrency", str(self.s.concurrency), "--hide-seconds", str(HIDE_SECONDS),
                "--json", *common,
            ]  # fmt: skip
        if command == "export":
            return [
                "export", self.source, "--file", str(archive), "--delete",
                "--hide-seconds", str(HIDE_SECONDS), "--json", *common,
            ]  # fmt: skip
        if command == "import":
            return ["import", str(archive), "--to", self.destination, "--json", *common]
        return [
            "worker", "--dlq-url", self.source, "--main-queue-url", self.destination,
            "--operator-queue-url", self.operator, "--pollers", "2", "--wait-seconds", "1",
            "--backoff-base-seconds", "1", "--backoff-cap-seconds", "1", "--jitter", "none",
            *common,
        ]  # fmt: skip

    def start(self, args: Sequence[str]) -> subprocess.Popen[str]:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", ""),
            "PYTHONUNBUFFERED": "1",
            "AWS_ACCESS_KEY_ID": "demo",
            "AWS_SECRET_ACCESS_KEY": "demo",
            "AWS_DEFAULT_REGION": REGION,
            **self.s.env,
        }
        return subprocess.Popen(
            [*self.s.dlq_replay, *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def setup(self) -> None:
        if self.s.command == "import":
            from dlq_replay.ops.archive import ArchiveRecord

            self.archive.write_text(
                "".join(ArchiveRecord(message_id=i, body=_body(i)).to_line() for i in self.ids)
            )
            return
        for start in range(0, len(self.ids), 10):
            chunk = self.ids[start : start + 10]
            self.sqs.send_message_batch(
                QueueUrl=self.source,
                Entries=[{"Id": str(n), "MessageBody": _body(i)} for n, i in enumerate(chunk)],
            )

    def in_flight(self) -> bool:
        """The moment to signal: the command is in the middle of its work."""
        command = self.s.command
        if command == "export":
            return _depth(self.sqs, self.source)[1] >= 20
        return sum(_depth(self.sqs, self.destination)) >= 10

    # -- the scenario ---------------------------------------------------------------------------

    def interrupted(self, exit_timeout: float = 30.0) -> RunOutcome:
        self.proxy_url = self.proxy.start() if self.s.proxy else self.s.endpoint
        try:
            self.setup()
            process = self.start(self.args())
            output: dict[str, str] = {}
            readers = [
                threading.Thread(target=lambda: output.update(out=process.stdout.read())),  # type: ignore[union-attr]
                threading.Thread(target=lambda: output.update(err=process.stderr.read())),  # type: ignore[union-attr]
            ]
            for reader in readers:
                reader.start()
            _wait_for(self.in_flight, f"{self.s.command} at work")
            if self.s.slow_after_signal:
                self.proxy.faults = Faults(spike=1.0, spike_seconds=self.s.slow_after_signal)
                time.sleep(self.s.slow_lead)
            signalled = time.monotonic()
            os.kill(process.pid, self.s.signum)
            if self.s.second_signal is not None:
                time.sleep(self.s.second_signal)
                if process.poll() is None:
                    os.kill(process.pid, self.s.signum)
            try:
                code: int | None = process.wait(timeout=exit_timeout)
            except subprocess.TimeoutExpired:
                code = None
                process.kill()
                process.wait()
            seconds = time.monotonic() - signalled
            for reader in readers:
                reader.join(10)
            self.proxy.faults = Faults(spike=1.0, spike_seconds=self.s.latency)
            hidden = 0 if self.s.command == "import" else _depth(self.sqs, self.source)[1]
            stdout = output.get("out", "")
            outcome = RunOutcome(
                code, seconds, stdout, output.get("err", ""), hidden, _json(stdout)
            )
            if outcome.tally is not None:
                outcome.said = int(outcome.tally.get("sent_not_deleted") or 0)
            if self.s.command != "import":
                time.sleep(max(0.0, 1.0 - (time.monotonic() - signalled - seconds)))
                outcome.hidden_later = _depth(self.sqs, self.source)[1]
            return outcome
        finally:
            if self.s.slow_after_signal:
                # Requests of the abandoned run may still be held by the proxy.
                self.proxy.faults = Faults()

    def rerun(self, outcome: RunOutcome) -> RunOutcome:
        """Run the command again to the end (the worker until the DLQ is empty), import what
        was exported, and count every id."""
        command = self.s.command
        if command == "worker":
            process = self.start(self.args())
            _wait_for(lambda: sum(_depth(self.sqs, self.source)) == 0, "the worker done", 60)
            _wait_for(lambda: _depth(self.sqs, self.destination)[2] == 0, "delays over", 10)
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=30)
        else:
            result = subprocess.CompletedProcess[str]([], 0)
            for _ in range(2):
                process = self.start(self.args(self.archives[-1]))
                out, err = process.communicate(timeout=120)
                result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
                if command == "export" and process.returncode == 2 and "exists" in err:
                    # An export that cannot continue an archive: the operator names a new one.
                    self.archives.append(self.archive.with_name(f"{self.archive.stem}-2.jsonl"))
                    continue
                break
            if result.returncode not in (0, 1):
                raise RuntimeError(f"the rerun failed: {result.stderr}")
            if command == "export":
                for archive in self.archives:
                    if archive.exists():
                        self._import(archive)
        outcome.hidden_at_end = _depth(self.sqs, self.source)[1]
        delivered = Counter(_drain(self.sqs, self.destination))
        left = _drain(self.sqs, self.source)
        outcome.after_rerun = delivered
        outcome.duplicates = sum(delivered.values()) - len(delivered)
        missing = len(set(self.ids) - set(delivered) - set(left))
        outcome.lost = max(0, missing - outcome.hidden_at_end)
        return outcome

    def _import(self, archive: Path) -> None:
        args = ["import", str(archive), "--to", self.destination, "--json"]
        args += ["--endpoint-url", self.s.endpoint, "--region", REGION]
        process = self.start(args)
        _, err = process.communicate(timeout=120)
        if process.returncode != 0:
            raise RuntimeError(f"import of {archive} failed: {err}")

    def close(self) -> None:
        self.proxy.stop()


def _json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def interrupt_and_rerun(scenario: Scenario) -> RunOutcome:
    run = Run(scenario)
    try:
        return run.rerun(run.interrupted())
    finally:
        run.close()


def console_command() -> list[str]:
    """The `dlq-replay` script next to this Python."""
    return [str(Path(sys.executable).with_name("dlq-replay"))]
