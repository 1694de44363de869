"""End to end, spawn to exit: `dlq-replay redrive` and `dlq-replay worker` as real processes
against an in-memory SQS over HTTP (bench/sqs_http.py) that holds every request a fixed
latency, beside a sequential receive/send/delete loop in a process of its own (the baseline)
and, when it is installed, lumigo-cli's `replay-sqs-dlq` (a Node CLI on the AWS SDK for
JavaScript v2, its default 10 pollers; `npm install --prefix build/lumigo lumigo-cli`), pointed
at the same endpoint through its SDK's configuration (bench/lumigo_endpoint.js).

Each case fills a source queue with N messages, spawns the tool, and measures:
- msg/s: N / (spawn to exit) for the loop and the redrive; for the worker, which runs until it
  is told to stop, N / (spawn to the source being empty), and it gets SIGTERM at that moment;
- 1st request: spawn to the tool's first request reaching the fake (start-up);
- 1st receive: spawn to the first receive that brought messages (start-up and pre-flight);
- 1st copy: spawn to the first send of a copy reaching the fake;
- to empty: spawn to the source being empty (nothing visible, in flight or delayed), as the
  fake sees it;
- exit after: from the source being empty (worker: from the SIGTERM) to the process's exit;
- CPU/msg: the child's user + system CPU (os.wait4) per message;
- log B/msg: what the process wrote (stdout + stderr) per message.
Every case must deliver every message to the destination exactly once and leave the source
empty (the fake keeps the books), or the benchmark stops with an error.

    python bench/bench_end_to_end.py            # 1,000 and 5,000 messages, 10 and 20 ms, 3 times
    python bench/bench_end_to_end.py --smoke    # CI: 200 messages, 10 ms, once (no lumigo-cli)
    python bench/bench_end_to_end.py --cases loop redrive lumigo --messages 1000 5000 \
        --python build/bench-venv/bin/python     # the side-by-side redrive table
    python bench/bench_end_to_end.py --before /tmp/old/layers/replay   # and an older tree:
        git archive <rev> layers | tar -x -C /tmp/old
    python bench/bench_end_to_end.py --before /tmp/old/layers/replay --tree mid=/tmp/m/layers/replay
    python bench/bench_end_to_end.py --cases redrive lumigo --variant "c32=--concurrency 32"
        # also the redrive with these arguments added (for each tree), as its own case

Every tree's modules are compiled to bytecode first, as an install compiles them (pip does),
so no run pays for compiling: with PYTHONDONTWRITEBYTECODE set, a source tree would otherwise
be compiled again at every start.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqs_http import FakeSqs

ATTRIBUTES = {
    "dlq-replay-park-reason": {"DataType": "String", "StringValue": "max-attempts"},
    "customer": {"DataType": "String", "StringValue": "bench"},
}
BODY_PADDING = "x" * 200
SOURCE, TARGET, OPERATOR = "bench-source", "bench-target", "bench-operator"
EXIT_PATIENCE_SECONDS = 120.0
BENCH = Path(__file__).resolve().parent
LUMIGO = BENCH.parent / "build" / "lumigo" / "node_modules"  # npm install --prefix build/lumigo


@dataclass(frozen=True, slots=True)
class Run:
    rate: float
    drain_rate: float
    first_request: float
    first_receive: float
    first_copy: float
    to_empty: float
    exit_after: float
    cpu_seconds: float
    log_bytes: int


def move_batch(sqs: Any, source: str, target: str) -> int:
    """One round of the baseline: receive up to 10, send them, delete them; how many moved."""
    batch = sqs.receive_message(
        QueueUrl=source, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", [])
    if batch:
        sqs.send_message_batch(
            QueueUrl=target,
            Entries=[
                {
                    "Id": str(i),
                    "MessageBody": m["Body"],
                    "MessageAttributes": m.get("MessageAttributes", {}),
                }
                for i, m in enumerate(batch)
            ],
        )
        sqs.delete_message_batch(
            QueueUrl=source,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
            ],
        )
    return len(batch)


def loop_main(endpoint_url: str, source: str, target: str) -> None:
    """The baseline, in its own process: batch after batch, until a receive brings nothing."""
    import boto3

    sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name="us-east-1")
    while move_batch(sqs, source, target):
        pass


def command(
    case: str, fake: FakeSqs, pollers: int, python: str, extra: tuple[str, ...] = ()
) -> list[str]:
    source, target = fake.url(SOURCE), fake.url(TARGET)
    if case == "loop":
        return [python, __file__, "--loop", fake.endpoint_url, source, target]
    if case == "lumigo":
        return [
            str(LUMIGO / ".bin" / "lumigo-cli"),
            "replay-sqs-dlq",
            *("--dlqQueueName", SOURCE, "--targetName", TARGET, "--region", "us-east-1"),
        ]
    cli = [python, "-m", "dlq_replay.cli.main"]
    if case == "worker":
        return [
            *cli,
            "worker",
            "--dlq-url",
            source,
            "--pollers",
            str(pollers),
            "--endpoint-url",
            fake.endpoint_url,
        ]
    return [
        *cli,
        "redrive",
        "--from",
        source,
        "--to",
        target,
        "--client-side",
        "--endpoint-url",
        fake.endpoint_url,
        *extra,
    ]


def child_env(tree: Path | None, fake: FakeSqs) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") and key not in {"PYTHONPATH", "LOG_LEVEL"}
    }
    env.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        # The worker's settings: where replays go (the destination) and where parks go.
        MAIN_QUEUE_URL=fake.url(TARGET),
        OPERATOR_QUEUE_URL=fake.url(OPERATOR),
        BACKOFF_BASE_SECONDS="1",
        BACKOFF_CAP_SECONDS="2",
    )
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    # lumigo-cli: its SDK's SQS endpoint, no `npm show` version check before it starts.
    env.update(
        NODE_OPTIONS=f"--require {BENCH / 'lumigo_endpoint.js'}",
        BENCH_AWS_SDK=str(LUMIGO / "aws-sdk"),
        BENCH_SQS_ENDPOINT=fake.endpoint_url,
        SKIP_VERSION_CHECK="1",
    )
    return env


class NoExitError(Exception):
    """A tool still running EXIT_PATIENCE_SECONDS after it should have ended (killed)."""


def run_again(case: str, *args: Any, **kwargs: Any) -> Run:
    """`run_once`, once more should the tool not exit: an older tree's worker could miss a
    signal that came at a bad moment (the shutdown path this tree has fixed that); said on
    stderr, so the table never hides it."""
    for attempt in range(3):
        try:
            return run_once(case, *args, **kwargs)
        except NoExitError as error:
            print(f"{error}; killed and run again (attempt {attempt + 2})", file=sys.stderr)
    raise SystemExit(f"bench_end_to_end: {case} did not exit in time, three times")


def give_up(case: str, child: subprocess.Popen[bytes], output: Any) -> None:
    """Kill a case's tool that did not exit, show the end of what it wrote, and say so."""
    child.kill()
    output.seek(0)
    sys.stderr.write(output.read().decode(errors="replace")[-3000:])
    raise NoExitError(f"bench_end_to_end: {case} did not exit in time")


def run_once(
    case: str,
    messages: int,
    latency: float,
    *,
    tree: Path | None,
    pollers: int,
    python: str = sys.executable,
    extra: tuple[str, ...] = (),
) -> Run:
    fake = FakeSqs(latency)
    for name in (SOURCE, TARGET, OPERATOR):
        fake.queue(name)
    bodies = [f"message {n:06d} {BODY_PADDING}" for n in range(messages)]
    fake.fill(SOURCE, bodies, ATTRIBUTES)
    if not messages:
        fake.queues[SOURCE].empty_at = time.monotonic()
    fake.start()
    source = fake.queues[SOURCE]
    try:
        with tempfile.TemporaryFile() as output:
            started = time.monotonic()
            child = subprocess.Popen(
                command(case, fake, pollers, python, extra),
                env=child_env(tree, fake),
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            ended: list[tuple[float, int, float]] = []

            def reap() -> None:
                # The rusage of the child and of the children it waited for (the redrive's
                # second process: `redrive --processes 2`).
                _, status, usage = os.wait4(child.pid, 0)
                ended.append((time.monotonic(), status, usage.ru_utime + usage.ru_stime))

            reaper = threading.Thread(target=reap, daemon=True)
            reaper.start()
            stop_sent: float | None = None
            deadline = started + EXIT_PATIENCE_SECONDS
            while not ended and time.monotonic() < deadline:
                if (
                    case == "worker"
                    and stop_sent is None
                    and source.empty_at is not None
                    and fake.calls.get("ReceiveMessage")
                ):
                    child.send_signal(signal.SIGTERM)
                    stop_sent = time.monotonic()
                time.sleep(0.002)
            reaper.join(1)
            if not ended:
                give_up(case, child, output)
            output.seek(0)
            log = output.read()
        for _, status, _ in ended:
            code = os.waitstatus_to_exitcode(status)
            # A worker stopped by SIGTERM exits 143 (128 + 15), as a shell expects; the
            # `--before` tree's worker exited 0, and one killed before its handlers, -15.
            stopped = case == "worker" and code in (128 + signal.SIGTERM, -signal.SIGTERM)
            if code != 0 and not stopped and not (messages == 0 and code == -signal.SIGTERM):
                sys.stderr.write(log.decode(errors="replace")[-2000:])
                raise SystemExit(f"bench_end_to_end: {case} exited with {code}")
        check_books(fake, bodies, case)
        empty_at = source.empty_at
        assert empty_at is not None
        exited = max(at for at, _, _ in ended)
        if case == "worker":
            assert stop_sent is not None
            rate_seconds, exit_after = empty_at - started, exited - stop_sent
        else:
            rate_seconds, exit_after = exited - started, exited - empty_at
        first = fake.first_receive_at or empty_at
        return Run(
            rate=messages / rate_seconds,
            drain_rate=messages / max(1e-9, empty_at - first),
            first_request=(fake.first_request_at or empty_at) - started,
            first_copy=(fake.first_copy_at or empty_at) - started,
            first_receive=first - started,
            to_empty=empty_at - started,
            exit_after=exit_after,
            cpu_seconds=sum(cpu for _, _, cpu in ended),
            log_bytes=len(log),
        )
    finally:
        fake.stop()


def check_books(fake: FakeSqs, bodies: list[str], case: str) -> None:
    """Every message in the destination exactly once, nothing left in the source."""
    arrived = fake.queues[TARGET].arrived
    if sorted(arrived) != bodies or not fake.queues[SOURCE].empty:
        lost = len(set(bodies) - set(arrived))
        doubled = len(arrived) - len(set(arrived))
        raise SystemExit(
            f"bench_end_to_end: {case} lost {lost}, doubled {doubled} and left "
            f"{'nothing' if fake.queues[SOURCE].empty else 'messages'} in the source"
        )
    if fake.queues[OPERATOR].arrived:
        raise SystemExit(f"bench_end_to_end: {case} parked messages")


def compile_trees(python: str, trees: list[Path | None]) -> None:
    """Bytecode for each tree's modules (None: the `dlq_replay` that `python` imports)."""
    where = "import dlq_replay, os; print(os.path.dirname(dlq_replay.__file__))"
    for tree in trees:
        folder = tree or Path(
            subprocess.run(
                [python, "-c", where], check=True, capture_output=True, text=True
            ).stdout.strip()
        )
        subprocess.run([python, "-m", "compileall", "-q", str(folder)], check=True)


def tree_option(value: str) -> tuple[str, Path]:
    label, equals, path = value.partition("=")
    if not equals or not label or not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, got {value!r}")
    return label, Path(path)


def variant_option(value: str) -> tuple[str, tuple[str, ...]]:
    label, equals, arguments = value.partition("=")
    if not equals or not label or not arguments.split():
        raise argparse.ArgumentTypeError(f"expected LABEL=ARGUMENTS, got {value!r}")
    return label, tuple(arguments.split())


@dataclass(frozen=True, slots=True)
class Variant:
    case: str  # what runs: loop, redrive, worker, lumigo
    label: str  # as the table shows it
    tree: Path | None  # None: the dlq_replay that --python imports
    extra: tuple[str, ...] = ()  # arguments added to the redrive's


def case_variants(
    cases: list[str],
    trees: list[tuple[str, Path]],
    extras: list[tuple[str, tuple[str, ...]]],
) -> list[Variant]:
    """Every case of every tree, and the redrive with each set of `extras` of every tree."""
    variants: list[Variant] = []
    for case in cases:
        if case in ("loop", "lumigo"):
            variants.append(Variant(case, case, None))
            continue
        for label, tree in [*trees, ("now", None)]:
            variants.append(Variant(case, f"{case} ({label})", tree))
            if case == "redrive":
                variants += [
                    Variant(case, f"{case} {name} ({label})", tree, extra) for name, extra in extras
                ]
    return variants


def measured(
    variants: list[Variant], count: int, latency_ms: float, repeats: int, args: Any
) -> dict[str, Run]:
    """Each variant's median run, interleaved so that a busy moment hits every case alike."""
    runs: dict[str, list[Run]] = {variant.label: [] for variant in variants}
    for _ in range(repeats):
        for variant in variants:
            runs[variant.label].append(
                run_again(
                    variant.case,
                    count,
                    latency_ms / 1000,
                    tree=variant.tree,
                    pollers=args.pollers,
                    python=args.python,
                    extra=variant.extra,
                )
            )
    return {label: median_run(each) for label, each in runs.items()}


def median_run(runs: list[Run]) -> Run:
    return Run(*(statistics.median(getattr(run, name) for run in runs) for name in Run.__slots__))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="200 messages, 10 ms, once")
    parser.add_argument("--messages", type=int, nargs="+", default=None)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--pollers", type=int, default=8, help="the worker's --pollers")
    parser.add_argument(
        "--cases",
        nargs="+",
        default=None,
        choices=["loop", "redrive", "worker", "lumigo"],
        help="lumigo: lumigo-cli replay-sqs-dlq (default: loop redrive worker, and lumigo "
        "when installed and not --smoke)",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="also run the redrive and worker of another dlq_replay tree (its layers/replay)",
    )
    parser.add_argument(
        "--tree",
        type=tree_option,
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="also run the redrive and worker of this tree, shown as LABEL (repeatable)",
    )
    parser.add_argument(
        "--variant",
        type=variant_option,
        action="append",
        default=[],
        metavar="LABEL=ARGUMENTS",
        help="also run the redrive (of each tree) with these arguments added, shown as "
        "'redrive LABEL' (repeatable)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that runs every case, e.g. one of a venv with only the package "
        "and its dependencies, as users install it (default: this one)",
    )
    parser.add_argument("--loop", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.loop:
        loop_main(*args.loop)
        return 0
    messages = args.messages or ([200] if args.smoke else [1_000, 5_000])
    latencies = args.latency_ms or ([10.0] if args.smoke else [10.0, 20.0])
    repeats = args.repeats or (1 if args.smoke else 3)
    cases = args.cases or ["loop", "redrive", "worker", *([] if args.smoke else ["lumigo"])]
    if "lumigo" in cases and not (LUMIGO / ".bin" / "lumigo-cli").exists():
        print(
            f"bench_end_to_end: lumigo-cli skipped, not installed in {LUMIGO.parent} "
            "(npm install --prefix build/lumigo lumigo-cli)",
            file=sys.stderr,
        )
        cases.remove("lumigo")
    trees: list[tuple[str, Path]] = [("before", args.before)] if args.before else []
    trees += args.tree
    variants = case_variants(cases, trees, args.variant)
    compile_trees(args.python, [None, *(tree for _, tree in trees)])
    shown = " ".join(
        ["python bench/bench_end_to_end.py", *(sys.argv[1:] if argv is None else argv)]
    )
    print(f"bench_end_to_end: median of {repeats}, worker --pollers {args.pollers} ({shown})")
    reference = "lumigo" if "lumigo" in cases else "loop"
    print(
        f"{'messages':>8} {'ms/req':>6}  {'case':24} {'msg/s':>6} {'vs ' + reference:>9} "
        f"{'drain msg/s':>11} {'1st request s':>13} {'1st receive s':>13} {'1st copy s':>10} "
        f"{'to empty s':>10} {'exit after s':>12} {'CPU ms/msg':>10} {'(marginal)':>10} "
        f"{'log B/msg':>9}"
    )
    for latency_ms in latencies:
        # What start-up and shutdown cost each variant, without a message to move (a median
        # too: one run's start-up varies by tens of ms, 0.03 ms a message at 1,000 messages).
        idle = measured(variants, 0, latency_ms, repeats, args)
        for count in messages:
            results = measured(variants, count, latency_ms, repeats, args)
            base = results[reference].rate if reference in results else None
            for label, result in results.items():
                ratio = f"{result.rate / base:8.2f}x" if base else "       - "
                marginal = (result.cpu_seconds - idle[label].cpu_seconds) / count * 1000
                print(
                    f"{count:>8} {latency_ms:>6g}  {label:24} {result.rate:>6.0f} {ratio:>9} "
                    f"{result.drain_rate:>11.0f} {result.first_request:>13.2f} "
                    f"{result.first_receive:>13.2f} {result.first_copy:>10.2f} "
                    f"{result.to_empty:>10.2f} "
                    f"{result.exit_after:>12.2f} {result.cpu_seconds / count * 1000:>10.3f} "
                    f"{marginal:>10.3f} {result.log_bytes / count:>9.0f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
