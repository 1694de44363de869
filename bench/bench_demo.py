"""Benchmark of the demo's emulator: the README's 1000-message demo on moto's own message
counting (baseline) and on the demo's one-pass counting, in the same process run; and the
README's outage claim, its command run as written beside them.

Run on demand with `make bench` (full); CI runs `make bench-smoke` (a few messages, same code).
Both runs share the seed, so they send the same messages; CPU is the whole process's (the
emulator serves from threads of this process), wall time includes the backoff waits.

The README's outage command (`dlq-replay demo ... --outage-seconds 60 ...`, copied from the
README itself) runs in a process of its own from the start, in both modes: about 90 s, mostly
waiting for the staged outage to end. Its consumer fails nothing but the outage, so every
message must end processed: 0 parked, 0 lost. A message parked there spent its attempts into
the outage, which the breaker exists to prevent; the check allows none.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from dlq_replay.demo.emulator import sqs_emulator
from dlq_replay.demo.run import demo
from dlq_replay.demo.scenario import DemoOptions, DemoResult
from moto import mock_aws

README_DEMO = DemoOptions(
    messages=1000,
    failure_rate=0.5,
    poison_rate=0.1,
    cap_seconds=8,
    seed=1,
    live=False,
)


README = Path(__file__).resolve().parents[1] / "README.md"
OUTAGE_COMMAND = re.compile(r"`(dlq-replay demo [^`]*--outage-seconds [^`]*)`")
OUTAGE_SUMMARY = re.compile(
    r"demo complete in [0-9.]+ s: sent (\d+), processed (\d+), parked (\d+) .*lost (\d+)"
)
OUTAGE_LIMIT_SECONDS = 600.0


def outage_command(readme: Path = README) -> list[str]:
    """The README's outage command, as `python -m dlq_replay.cli.main` runs it."""
    found = OUTAGE_COMMAND.search(readme.read_text(encoding="utf-8"))
    if found is None:
        raise SystemExit("bench_demo: no `dlq-replay demo ... --outage-seconds` in README.md")
    words = shlex.split(found.group(1))
    return [sys.executable, "-m", "dlq_replay.cli.main", *words[1:]]


def start_outage_demo() -> tuple[list[str], subprocess.Popen[str]]:
    command = outage_command()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return command, process


def outage_verdict(output: str, returncode: int) -> str | None:
    """None when the README's outage run processed every message, parked none and lost none;
    else what went wrong."""
    found = OUTAGE_SUMMARY.search(output)
    if returncode != 0 or found is None:
        return f"exit {returncode}, no complete summary"
    sent, processed, parked, lost = (int(n) for n in found.groups())
    if parked or lost or processed != sent:
        return f"processed {processed} of {sent}, parked {parked}, lost {lost}"
    return None


def finish_outage_demo(command: list[str], process: subprocess.Popen[str]) -> int:
    try:
        output, _ = process.communicate(timeout=OUTAGE_LIMIT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    lines = output.strip().splitlines()[-3:]
    print(f"README outage command: {shlex.join(['dlq-replay', *command[3:]])}")
    print("\n".join(f"  {line}" for line in lines))
    problem = outage_verdict(output, process.returncode)
    if problem is not None:
        print(f"README outage command: {problem}; the README says 0 parked", file=sys.stderr)
        return 1
    return 0


def measure(options: DemoOptions, *, linear: bool) -> tuple[float, float, DemoResult]:
    """Wall and CPU seconds of one demo run, on emptied moto backends (the demo's queue names
    are fixed)."""
    with mock_aws():  # starting and stopping a mock resets every backend
        pass
    wall, cpu = time.perf_counter(), time.process_time()
    result = demo(options, lambda: sqs_emulator(linear=linear))
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few messages, for CI")
    args = parser.parse_args(argv)
    outage = start_outage_demo()
    options = replace(README_DEMO, messages=30, cap_seconds=2) if args.smoke else README_DEMO
    python = sys.version.split()[0]
    print(f"demo of {options.messages} messages (seed {options.seed}), Python {python}")
    print(f"{'emulator':<28} {'wall s':>7} {'CPU s':>7}  summary")
    rows = []
    for label, linear in (("moto's counting (baseline)", False), ("one-pass counting", True)):
        wall, cpu, result = measure(options, linear=linear)
        rows.append((wall, cpu))
        done = f"processed {result.processed}, parked {result.parked}, lost {result.lost}"
        print(f"{label:<28} {wall:>7.1f} {cpu:>7.1f}  {done}")
        if result.lost or not result.completed:
            print(f"{label}: the demo did not account for every message", file=sys.stderr)
            outage[1].kill()
            return 1
    (base_wall, base_cpu), (wall, cpu) = rows
    print(f"ratio baseline/one-pass: wall {base_wall / wall:.1f}x, CPU {base_cpu / cpu:.1f}x")
    return finish_outage_demo(*outage)


if __name__ == "__main__":
    sys.exit(main())
