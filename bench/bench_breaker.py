"""What the outage breaker costs the worker per batch, as a long drain fills its window.

The worker's breaker counts every batch (`Breaker.record`: record the batch's replays,
read the window back, look for the outage signal). Its window is five minutes, so a drain that
runs longer reads back everything of the last five minutes on every batch. This benchmark
feeds `breaker.worker_side.worker_breaker` the events of a busy drain (one replay event of 10 copies
per batch, BATCHES_PER_SECOND of them, on an injected clock: recorded in one go, as the drain's
batches would have) and measures the CPU of one more batch after 10 s, 60 s and 300 s of them;
the 10 s figure is the baseline of the same run.

    python bench/bench_breaker.py                                  # this tree
    python bench/bench_breaker.py --before /tmp/old/layers/replay  # and an older one, alike
    python bench/bench_breaker.py --smoke                          # CI: 10 s and 30 s only
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from trees import run_in_tree, shown, trees

BATCHES_PER_SECOND = 150  # 1,500 messages a second in batches of 10
MEASURED_BATCHES = 200


def measure(seconds_of_drain: list[int]) -> list[float]:
    """CPU microseconds of one batch's `record` after each length of drain."""
    from dlq_replay.breaker.rule import Counts
    from dlq_replay.breaker.worker_side import worker_breaker

    results = []
    now = [0.0]  # the injected clock, moved by hand
    for seconds in seconds_of_drain:
        now[0] = 1_000_000.0
        breaker, _ = worker_breaker(
            logger=logging.getLogger("bench"), count_attribute="n", clock=lambda: now[0]
        )
        step = 1.0 / BATCHES_PER_SECOND
        drained = [
            (now[0] + n * step, Counts(replays=10)) for n in range(seconds * BATCHES_PER_SECOND)
        ]
        breaker.store.record(drained)  # what the drain's batches recorded, at once
        now[0] = drained[-1][0]
        started = time.process_time()
        for _ in range(MEASURED_BATCHES):
            now[0] += step
            breaker.record([(now[0], Counts(replays=10))])
        results.append((time.process_time() - started) / MEASURED_BATCHES * 1e6)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="10 s and 30 s of drain only")
    parser.add_argument("--before", type=Path, help="also measure this tree's layers/replay")
    parser.add_argument("--measure", type=int, nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(" ".join(f"{value:.1f}" for value in measure(args.measure)))
        return 0
    seconds = [10, 30] if args.smoke else [10, 60, 300]
    print(
        f"bench_breaker: CPU of one batch's count, {BATCHES_PER_SECOND} batches/s "
        f"({shown(__file__, argv)})"
    )
    print(f"{'tree':8} " + " ".join(f"{f'after {s} s':>16}" for s in seconds))
    for label, tree in trees(args.before):
        measured = run_in_tree(__file__, tree, ["--measure", *map(str, seconds)])
        values = [float(value) for value in measured.stdout.split()]
        cells = [f"{v:8.1f} µs {v / values[0]:4.1f}x" for v in values]
        print(f"{label:8} " + " ".join(f"{cell:>16}" for cell in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
