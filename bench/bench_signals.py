"""Time to exit, and what is left, when a command that moves messages gets a signal mid-work.

For each command (redrive, export --delete, import, worker) and signal (SIGINT, SIGTERM,
SIGHUP), the real console command runs on moto's server behind a latency proxy
(`tools/interrupt.py`) and gets the signal while its work is in flight; with `--slow S`, every
request after the signal takes S seconds (an SQS that stopped answering in time). Then it is
rerun to the end and every message counted. Printed per case: the exit code, seconds from the
signal to the exit, messages left hidden right after it, duplicates after the rerun (and how
many the run announced), messages lost.

    python bench/bench_signals.py                         # this checkout, normal and slow SQS
    python bench/bench_signals.py --dlq-replay /other/checkout/.venv/bin/dlq-replay
    python bench/bench_signals.py --smoke                 # CI: redrive x SIGTERM only
    python tools/localstack.py -- python bench/bench_signals.py --endpoint localstack
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dlq_replay.demo.emulator import sqs_emulator  # noqa: E402

from tools.interrupt import COMMANDS, Run, Scenario, console_command  # noqa: E402

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dlq-replay", help="the console command to measure (default: this one)")
    parser.add_argument("--slow", type=float, default=20.0, help="seconds per request after")
    parser.add_argument("--messages", type=int, default=60)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--endpoint",
        help="an emulator already running (`localstack`: DLQ_REPLAY_LOCALSTACK_ENDPOINT, as "
        "tools/localstack.py sets it); default: moto's SQS, started here",
    )
    args = parser.parse_args()
    command = [args.dlq_replay] if args.dlq_replay else console_command()
    cases = (
        [("redrive", signal.SIGTERM, 0.0)]
        if args.smoke
        else [(c, s, slow) for slow in (0.0, args.slow) for c in COMMANDS for s in SIGNALS]
    )
    print(
        "| command | signal | SQS after the signal | exit code | seconds to exit | "
        "left hidden | duplicates (announced) | lost |"
    )
    print("|---|---|---|---|---|---|---|---|")
    endpoint = args.endpoint
    if endpoint == "localstack":
        endpoint = os.environ["DLQ_REPLAY_LOCALSTACK_ENDPOINT"]
    # moto's SQS with atomic receives (as SQS's own): a duplicate is then the command's doing.
    with (
        nullcontext(None) if endpoint else sqs_emulator() as running,
        tempfile.TemporaryDirectory() as workdir,
    ):
        url = endpoint or (running.endpoint_url if running is not None else "")
        for name, signum, slow in cases:
            scenario = Scenario(
                endpoint=url,
                command=name,
                signum=signum,
                workdir=Path(workdir),
                dlq_replay=command,
                messages=args.messages,
                slow_after_signal=slow,
                prefix=f"b{name[:3]}{int(signum)}{int(slow)}",
            )
            run = Run(scenario)
            try:
                outcome = run.interrupted(exit_timeout=60)
                hidden = outcome.hidden_after
                outcome = run.rerun(outcome)
            except (RuntimeError, TimeoutError) as error:
                print(f"| {name} | {signal.Signals(signum).name} | {slow:g} | error: {error} |")
                continue
            finally:
                run.close()
            exit_seconds = f"{outcome.seconds_to_exit:.1f}" if outcome.code is not None else ">60"
            print(
                f"| {name} | {signal.Signals(signum).name} | "
                f"{f'{slow:g} s a request' if slow else 'as before'} | {outcome.code} | "
                f"{exit_seconds} | {hidden} | {outcome.duplicates} ({outcome.said}) | "
                f"{outcome.lost} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
