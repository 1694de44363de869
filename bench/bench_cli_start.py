"""Start-up of the `dlq-replay` command: `--version` and `--help` against `python -c pass`.

Each sample is a fresh process (no warm interpreter), timed from spawn to exit; the figure is
the median of N, and the ratio to the median of `python -c pass` measured in the same run, so
a slower or busier machine moves both. The target: `--help` and `--version` within 150 ms,
which the command meets by importing only the module of the command it runs (boto3 and rich
come with a command that needs them). A command's own `--help` (it imports boto3) is shown
for comparison.

    python bench/bench_cli_start.py            # 21 processes a case
    python bench/bench_cli_start.py --smoke    # CI: 3 a case
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_MS = 150.0


def dlq_replay() -> list[str]:
    """The installed console script beside this interpreter, else the module itself."""
    script = Path(sys.executable).parent / "dlq-replay"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from dlq_replay.cli.main import main; main()"]


def median_ms(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="3 processes a case, for CI")
    args = parser.parse_args(argv)
    runs = 3 if args.smoke else 21
    command = "python bench/bench_cli_start.py" + (" --smoke" if args.smoke else "")
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "dlq-replay --version": [*dlq_replay(), "--version"],
        "dlq-replay --help": [*dlq_replay(), "--help"],
        "dlq-replay status --help": [*dlq_replay(), "status", "--help"],
    }
    median_ms(cases["dlq-replay status --help"], 1)  # the package's bytecode, written once
    results = {name: median_ms(case, runs) for name, case in cases.items()}
    baseline = results["python -c pass"]
    print(f"bench_cli_start: {command} (median of {runs} fresh processes a case)")
    print(f"{'case':<26} {'median ms':>10} {'x python':>9}")
    for name, value in results.items():
        print(f"{name:<26} {value:>10.1f} {value / baseline:>9.1f}")
    for name in ("dlq-replay --version", "dlq-replay --help"):
        verdict = "within" if results[name] <= TARGET_MS else "OVER"
        print(f"{name}: {results[name]:.0f} ms, {verdict} the {TARGET_MS:.0f} ms target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
