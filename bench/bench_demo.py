"""Benchmark of the demo's emulator: the README's 1000-message demo on moto's own message
counting (baseline) and on the demo's one-pass counting, in the same process run.

Run on demand with `make bench` (full); CI runs `make bench-smoke` (a few messages, same code).
Both runs share the seed, so they send the same messages; CPU is the whole process's (the
emulator serves from threads of this process), wall time includes the backoff waits.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

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
            return 1
    (base_wall, base_cpu), (wall, cpu) = rows
    print(f"ratio baseline/one-pass: wall {base_wall / wall:.1f}x, CPU {base_cpu / cpu:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
