"""Soak: N messages through the whole failure path under injected faults, every id accounted for.

main queue (visibility 1 s; SQS moves a message to the DLQ on its second receive) -> a
consumer that fails `--consumer-failure` of its messages -> DLQ -> the replay, behind the chaos
proxy (`tools/chaos.py`) -> the main queue again, or the operator queue after MAX_ATTEMPTS.
The replay runs in its own process, SIGKILLed `--kills` times at random moments and restarted:
`dlq-replay worker` (`--path worker`), or the Lambda handler (`functions/replay/app.py`) fed by
the local event source (`--path lambda`). The emulator is the demo's (moto's SQS, each request
atomic), in its own process.
Some messages carry a count that is not a number (parked `invalid-count`) or ten attributes
(parked `attribute-limit` on their first replay, as SQS takes no eleventh for the count).

At the end each id is consumed, parked (with its reason), still in the DLQ or the main queue,
or lost:

    N sent, X consumed, Y parked, Z in dlq, M in main, L lost, D duplicates

and the exit code is 1 when L > 0. D counts extra deliveries to the consumer (by cause: see
`_repeated_deliveries`) plus ids both consumed and parked (at-least-once allows both; how
consumers deduplicate: docs/reliability.md#duplicates-and-the-origin-attribute).

    python tools/soak.py --messages 10000 --seed 1 --kills 3      # make soak N=10000 SEED=1
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.chaos import FAULT_KINDS, ChaosProxy, Faults  # noqa: E402

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "soak", "AWS_SECRET_ACCESS_KEY": "soak"}
COUNT_ATTRIBUTE = "sqs-dlq-replay-nb"  # the replay's default
DLQ_MAX_RECEIVES = 20  # the DLQ's redrive to the operator queue: the safety net
SAFETY_NET = "(safety net)"
MAX_MAIN_DEPTH = 200  # moto's cost per call grows with depth: feed it as it drains
PATIENT = Config(retries={"mode": "standard", "max_attempts": 10}, max_pool_connections=20)


@dataclass(frozen=True)
class SoakOptions:
    messages: int = 1000
    seed: int = 1
    path: str = "worker"
    kills: int = 3
    fault_rate: float = 0.2
    fault_kind: str = "all"  # or one of Faults' kinds, alone at fault_rate
    fifo: bool = False
    endpoint: str | None = None  # an emulator already running (LocalStack); else the demo's
    consumer_failure: float = 0.3
    pollers: int = 4
    max_seconds: float = 900.0


@dataclass
class Ledger:
    """What the consumer and the operator queue saw, by id (guarded by `lock`)."""

    # Each delivery the consumer kept, by id: (SQS message id, the replay count it carried).
    deliveries: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    parked: dict[str, str] = field(default_factory=dict)
    parked_twice: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class SoakResult:
    sent: int
    consumed: int
    parked: int
    in_dlq: int
    in_main: int
    lost: int
    lost_ids: list[str]
    duplicates: int
    duplicate_kinds: dict[str, int]
    parked_by_reason: dict[str, int]
    faults: dict[str, int]
    seconds: float

    def line(self) -> str:
        return (
            f"{self.sent} sent, {self.consumed} consumed, {self.parked} parked, "
            f"{self.in_dlq} in dlq, {self.in_main} in main, {self.lost} lost, "
            f"{self.duplicates} duplicates"
            + (f" (lost: {', '.join(self.lost_ids)})" if self.lost_ids else "")
        )


def client(endpoint: str) -> SQSClient:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="soak",
        aws_secret_access_key="soak",
        config=PATIENT,
    )


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    """The demo's SQS emulator in a process of its own: moto's SQS with each request atomic, as
    SQS's are (`demo.emulator.AtomicSqs`). moto's own server is not: a delete racing a send
    can drop the sent message, which this soak would count as lost."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve-emulator"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdout is not None
    endpoint = server.stdout.readline().decode().strip()  # its first line; "" if it died
    if not endpoint.startswith("http://"):
        server.kill()
        raise RuntimeError(f"the SQS emulator did not start (exit code {server.wait()})")
    return server, endpoint


def serve_emulator() -> None:
    """`--serve-emulator`: the emulator until SIGTERM; its endpoint URL on the first line."""
    from dlq_replay.demo.emulator import sqs_emulator

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    with sqs_emulator() as running:
        print(running.endpoint_url, flush=True)
        stop.wait()


def create_queues(sqs: SQSClient, prefix: str, *, fifo: bool) -> dict[str, str]:
    def arn(url: str) -> str:
        got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return got["Attributes"]["QueueArn"]

    kind: Any = {"FifoQueue": "true"} if fifo else {}
    suffix = ".fifo" if fifo else ""
    operator = sqs.create_queue(QueueName=f"{prefix}-operator{suffix}", Attributes=kind)
    operator_url = operator["QueueUrl"]
    dlq = sqs.create_queue(
        QueueName=f"{prefix}-dlq{suffix}",
        Attributes={
            **kind,
            "VisibilityTimeout": "5",
            # The safety net: a record the replay keeps failing reaches the operator queue.
            "RedrivePolicy": (
                f'{{"deadLetterTargetArn":"{arn(operator_url)}",'
                f'"maxReceiveCount":"{DLQ_MAX_RECEIVES}"}}'
            ),
        },
    )["QueueUrl"]
    main = sqs.create_queue(
        QueueName=f"{prefix}-main{suffix}",
        Attributes={
            **kind,
            "VisibilityTimeout": "1",
            "RedrivePolicy": f'{{"deadLetterTargetArn":"{arn(dlq)}","maxReceiveCount":"1"}}',
        },
    )["QueueUrl"]
    return {"main": main, "dlq": dlq, "operator": operator_url}


def produce(sqs: SQSClient, url: str, options: SoakOptions, stop: threading.Event) -> None:
    """Send every id once; 5 % with a count that is not a number, 5 % with ten attributes."""
    rng = random.Random(options.seed)
    for start in range(0, options.messages, 10):
        while not stop.is_set() and depth(sqs, url) > MAX_MAIN_DEPTH:
            time.sleep(0.2)
        entries: list[Any] = []
        for n in range(start, min(start + 10, options.messages)):
            attributes: dict[str, Any] = {
                f"a{i}": {"DataType": "String", "StringValue": f"v{rng.random()}"}
                for i in range(rng.randint(0, 3))
            }
            roll = rng.random()
            if roll < 0.05:
                attributes[COUNT_ATTRIBUTE] = {"DataType": "String", "StringValue": "x"}
            elif roll < 0.10:
                attributes = {
                    f"a{i}": {"DataType": "String", "StringValue": "full"} for i in range(10)
                }
            entry = {
                "Id": str(n - start),
                "MessageBody": f"id-{n}",
                "MessageAttributes": attributes,
            }
            if options.fifo:  # 50 groups, so a failing message holds up few others
                entry.update(MessageGroupId=f"g{n % 50}", MessageDeduplicationId=f"id-{n}")
            entries.append(entry)
        sqs.send_message_batch(QueueUrl=url, Entries=entries)


def depth(sqs: SQSClient, url: str) -> int:
    names: Any = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(got.get(name, 0)) for name in names)


def consume(
    sqs: SQSClient, url: str, ledger: Ledger, *, failure: float, seed: int, stop: threading.Event
) -> None:
    """The application: fails `failure` of its deliveries (left to come back after the main
    queue's 1 s visibility, then to the DLQ), records and deletes the rest."""
    rng = random.Random(seed)
    while not stop.is_set():
        got = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, MessageAttributeNames=["All"]
        ).get("Messages", [])
        done = [m for m in got if rng.random() >= failure]
        if not done:
            continue
        with ledger.lock:
            for m in done:
                count: Any = m.get("MessageAttributes", {}).get(COUNT_ATTRIBUTE, {})
                delivery = (m["MessageId"], str(count.get("StringValue", "")))
                ledger.deliveries.setdefault(m["Body"], []).append(delivery)
        entries: Any = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
        ]
        sqs.delete_message_batch(QueueUrl=url, Entries=entries)


def collect_parked(sqs: SQSClient, url: str, ledger: Ledger, stop: threading.Event) -> None:
    while not stop.is_set():
        if not drain_parked(sqs, url, ledger):
            stop.wait(0.5)


def drain_parked(sqs: SQSClient, url: str, ledger: Ledger) -> int:
    got = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    ).get("Messages", [])
    with ledger.lock:
        for message in got:
            if message["Body"] in ledger.parked:
                ledger.parked_twice += 1
            ledger.parked[message["Body"]] = park_reason(message)
    if got:
        entries: Any = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
        ]
        sqs.delete_message_batch(QueueUrl=url, Entries=entries)
    return len(got)


def park_reason(message: Any) -> str:
    """The replay's reason attribute; else SQS's own redrive (the safety net: the DLQ's
    message came back DLQ_MAX_RECEIVES times, a record the replay kept failing), told by its
    receive count; else a park with no free attribute slot."""
    reason: Any = message.get("MessageAttributes", {}).get("dlq-replay-park-reason", {})
    if "StringValue" in reason:
        return str(reason["StringValue"])
    receives = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "0"))
    return SAFETY_NET if receives > DLQ_MAX_RECEIVES else "(no reason)"


def drain_parked_to_the_last(sqs: SQSClient, url: str, ledger: Ledger) -> None:
    """The operator queue emptied, its in-flight messages waited for: the final count's
    receives on the DLQ may have moved one there (SQS's redrive) after the last collection."""
    deadline = time.monotonic() + 30
    while drain_parked(sqs, url, ledger) or (depth(sqs, url) and time.monotonic() < deadline):
        time.sleep(0.2)


def replay_env(urls: dict[str, str], proxy: str) -> dict[str, str]:
    return {
        **CREDENTIALS,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": proxy,
        "MAIN_QUEUE_URL": urls["main"],
        "OPERATOR_QUEUE_URL": urls["operator"],
        "MAX_ATTEMPTS": "3",
        "BACKOFF_BASE_SECONDS": "1",
        "BACKOFF_CAP_SECONDS": "2",
        "LOG_LEVEL": "CRITICAL",
        "POWERTOOLS_LOG_LEVEL": "CRITICAL",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }


class ReplayProcess:
    """The replay in its own process, to be killed and started again: `dlq-replay worker`, or
    the Lambda handler fed by the local event source (this script's `--lambda-runner`)."""

    def __init__(
        self, path: str, urls: dict[str, str], proxy: str, direct: str, pollers: int
    ) -> None:
        if path == "worker":
            self.command = [sys.executable, "-m", "dlq_replay.cli.main", "worker"]
            self.command += ["--log-level", "CRITICAL"]
        else:
            self.command = [sys.executable, __file__, "--lambda-runner", "--direct", direct]
        self.command += ["--dlq-url", urls["dlq"], "--pollers", str(pollers)]
        self.command += ["--wait-seconds", "1"]
        self.env = {**os.environ, **replay_env(urls, proxy)}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def run_lambda_path(direct: str, dlq_url: str, pollers: int) -> None:
    """The Lambda handler as Lambda runs it: `app.handler` with its own clients (through the
    proxy: AWS_ENDPOINT_URL), fed by the local event source, which talks to SQS direct (the
    event source mapping is AWS's code, not ours). Runs until SIGTERM."""
    warnings.filterwarnings("ignore", "No application metrics to publish")
    sys.path.insert(0, str(ROOT / "functions" / "replay"))
    import app
    from dlq_replay.local.eventsource import LocalEventSource, Polling, run_pollers

    class Context:
        function_name = "sqs-dlq-replay"
        function_version = "$LATEST"
        invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:sqs-dlq-replay"
        memory_limit_in_mb = 256
        aws_request_id = "soak"

    def handler(event: dict[str, Any], context: object) -> Any:
        del context
        return app.handler(event, Context())

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    source = LocalEventSource(client(direct), dlq_url, handler, Polling(wait_seconds=1))
    for thread in run_pollers(source, pollers, stop):
        thread.join()


def remaining(sqs: SQSClient, url: str) -> set[str]:
    """Every id still in a queue, once its in-flight and delayed messages are visible."""
    ids: set[str] = set()
    deadline = time.monotonic() + 30
    while depth(sqs, url) and time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in got.get("Messages", []):
            ids.add(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return ids


def soak(options: SoakOptions) -> SoakResult:
    started = time.monotonic()
    moto, endpoint = (None, options.endpoint) if options.endpoint else start_moto()
    proxy = ChaosProxy(
        endpoint,
        Faults.evenly(options.fault_rate, spike_seconds=0.5)
        if options.fault_kind == "all"
        else Faults(**{options.fault_kind: options.fault_rate, "spike_seconds": 0.5}),
        seed=options.seed,
        max_seconds=options.max_seconds + 60,
    )
    stop = threading.Event()
    worker: ReplayProcess | None = None
    try:
        direct = client(endpoint)
        urls = create_queues(direct, f"soak-{options.seed}", fifo=options.fifo)
        proxy_endpoint = proxy.start()
        ledger = Ledger()
        threads = [
            threading.Thread(target=produce, args=(direct, urls["main"], options, stop)),
            threading.Thread(target=collect_parked, args=(direct, urls["operator"], ledger, stop)),
        ]
        threads += [
            threading.Thread(
                target=consume,
                args=(direct, urls["main"], ledger),
                kwargs={
                    "failure": options.consumer_failure,
                    "seed": options.seed + n,
                    "stop": stop,
                },
            )
            for n in range(2)
        ]
        for thread in threads:
            thread.daemon = True
            thread.start()
        worker = ReplayProcess(options.path, urls, proxy_endpoint, endpoint, options.pollers)
        worker.start()
        rng = random.Random(options.seed)
        kills_left = options.kills
        ids = {f"id-{n}" for n in range(options.messages)}
        deadline = started + options.max_seconds
        while time.monotonic() < deadline:
            time.sleep(1)
            if kills_left and rng.random() < 0.25:
                worker.kill()
                kills_left -= 1
                worker.start()
            with ledger.lock:
                settled = set(ledger.deliveries) | set(ledger.parked)
            if (
                settled >= ids
                and not depth(direct, urls["dlq"])
                and not depth(direct, urls["main"])
            ):
                break
        worker.stop()
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        in_main = remaining(direct, urls["main"])
        in_dlq = remaining(direct, urls["dlq"])
        drain_parked_to_the_last(direct, urls["operator"], ledger)
    finally:
        stop.set()
        if worker is not None:
            worker.stop()
        proxy.stop()
        if moto is not None:
            moto.terminate()
            moto.wait()
    return account(
        options,
        ids,
        ledger,
        remaining_ids={"dlq": in_dlq, "main": in_main},
        faults=dict(proxy.injected),
        seconds=time.monotonic() - started,
    )


def account(
    options: SoakOptions,
    ids: set[str],
    ledger: Ledger,
    *,
    remaining_ids: dict[str, set[str]],
    faults: dict[str, int],
    seconds: float,
) -> SoakResult:
    """Each id in one place: consumed, else parked, else still in the DLQ or main, else lost."""
    in_dlq, in_main = remaining_ids["dlq"], remaining_ids["main"]
    consumed = set(ledger.deliveries)
    parked = set(ledger.parked)
    lost = ids - consumed - parked - in_dlq - in_main
    duplicate_kinds = {
        **_repeated_deliveries(ledger.deliveries),
        "consumed and parked": len(consumed & parked),
        "parked again": ledger.parked_twice,
    }
    return SoakResult(
        sent=options.messages,
        consumed=len(consumed),
        parked=len(parked - consumed),
        in_dlq=len(in_dlq - consumed - parked),
        in_main=len(in_main - consumed - parked - in_dlq),
        lost=len(lost),
        lost_ids=sorted(lost, key=lambda id_: int(id_.removeprefix("id-")))[:20],
        duplicates=sum(duplicate_kinds.values()),
        duplicate_kinds=duplicate_kinds,
        parked_by_reason=dict(Counter(ledger.parked.values())),
        faults=faults,
        seconds=seconds,
    )


def _repeated_deliveries(deliveries: dict[str, list[tuple[str, str]]]) -> dict[str, int]:
    """Every delivery of an id after its first, by cause.

    - `redelivered`: the same SQS message again (its delete came too late: SQS's own
      at-least-once, not the replay's);
    - `copied twice`: another message carrying the same replay count, so the replay wrote that
      attempt twice (the ambiguous send; on FIFO the deduplication id must prevent it);
    - `consumed, failed again`: a later attempt (a second copy, or the consumed one whose
      delete was lost, failed into the DLQ and was replayed once more).
    """
    kinds = Counter({"redelivered": 0, "copied twice": 0, "consumed, failed again": 0})
    for seen in deliveries.values():
        for n, (message_id, count) in enumerate(seen[1:], start=1):
            earlier = seen[:n]
            if any(message_id == m for m, _ in earlier):
                kinds["redelivered"] += 1
            elif any(count == c for _, c in earlier):
                kinds["copied twice"] += 1
            else:
                kinds["consumed, failed again"] += 1
    return dict(kinds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--path", choices=("worker", "lambda"), default="worker")
    parser.add_argument("--kills", type=int, default=3, help="SIGKILLs of the replay process")
    parser.add_argument("--fault-rate", type=float, default=0.2, help="share of proxied requests")
    parser.add_argument(
        "--fault-kind",
        choices=("all", *FAULT_KINDS),
        default="all",
        help="inject one kind only, at --fault-rate (default: all five, evenly)",
    )
    parser.add_argument("--fifo", action="store_true", help="FIFO queues (50 message groups)")
    parser.add_argument(
        "--endpoint",
        default=os.environ.get("DLQ_REPLAY_LOCALSTACK_ENDPOINT"),
        help="an SQS emulator already running, e.g. LocalStack under tools/localstack.py "
        "(default: DLQ_REPLAY_LOCALSTACK_ENDPOINT, else the demo's emulator started here)",
    )
    parser.add_argument("--consumer-failure", type=float, default=0.3)
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    # The Lambda path's own process (started by the soak, not by hand).
    parser.add_argument("--lambda-runner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-emulator", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--direct", help=argparse.SUPPRESS)
    parser.add_argument("--dlq-url", help=argparse.SUPPRESS)
    parser.add_argument("--wait-seconds", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.lambda_runner:
        run_lambda_path(args.direct, args.dlq_url, args.pollers)
        return 0
    if args.serve_emulator:
        serve_emulator()
        return 0
    result = soak(
        SoakOptions(
            messages=args.messages,
            seed=args.seed,
            path=args.path,
            kills=args.kills,
            fault_rate=args.fault_rate,
            fault_kind=args.fault_kind,
            fifo=args.fifo,
            endpoint=args.endpoint,
            consumer_failure=args.consumer_failure,
            pollers=args.pollers,
            max_seconds=args.max_seconds,
        )
    )
    print(result.line())
    print(
        f"seed {args.seed}, path {args.path}{', fifo' if args.fifo else ''}, "
        f"faults {args.fault_kind} at {args.fault_rate:g}, "
        f"{result.seconds:.0f} s; duplicates {result.duplicate_kinds}; parked by reason "
        f"{result.parked_by_reason}; faults injected {result.faults}"
    )
    return 1 if result.lost else 0


if __name__ == "__main__":
    sys.exit(main())
