"""The outage breaker against an independent scenario: a real `dlq-replay worker` on the DLQ,
a consumer of the scenario's own on the main queue, moto's SQS; each case with and without the
breaker (`--no-breaker`), from one run.

Cases (the timing of the main queue decides how fast a failed copy comes back):
1. 60 s outage; max attempts 3, backoff 1 s / cap 8 s; visibility 2 s, DLQ after 2 receives.
2. 60 s outage; max attempts 5; visibility 5 s, DLQ after 2 receives.
3. no outage; the consumer fails 50 % of receives at random and 10 % of messages always
   (poison); 300 messages; case 1's timing.
4. 120 s outage; max attempts 3; visibility 10 s, DLQ after 3 receives.

Every run is a process of its own with its own emulator, worker and consumer
(bench/outage_scenario.py, bench/outage_consumer.py); all run at once, so the full set takes
about as long as its slowest run (at most outage + `--give-up-seconds`). Per run: parked (and %
of sent), lost (sent and found nowhere: not consumed, parked or left in a queue), duplicates
(ids found more than once), left in the queues when the run gave up, breaker openings (the
worker's log lines) and the time from the consumer's recovery to the last message consumed
(from the start, with no outage); below the table, the breaker's changes and the consumed
copies by the replay count they carried. Exit status 1 when a message is lost or a run fails.

    python bench/bench_outage.py                 # the four cases, 8 runs at once (about 10 min)
    python bench/bench_outage.py --cases 1 3     # some of them
    python bench/bench_outage.py --smoke         # CI: 20 messages, a 10 s outage and no outage
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from outage_scenario import Case, Result, run_case
from trees import shown

CASES = {
    "1": Case("60 s outage; attempts 3, backoff 1/8 s; visibility 2 s, DLQ after 2 receives"),
    "2": Case("60 s outage; attempts 5; visibility 5 s, DLQ after 2 receives",
              max_attempts=5, visibility_timeout=5),
    "3": Case("no outage; 50 % random failures, 10 % poison; 300 messages; case 1's timing",
              messages=300, outage_seconds=0, failure_rate=0.5, poison_rate=0.1),
    "4": Case("120 s outage; attempts 3; visibility 10 s, DLQ after 3 receives",
              outage_seconds=120, visibility_timeout=10, max_receive_count=3),
}  # fmt: skip
SMOKE_CASES = {
    "1": Case("10 s outage; attempts 3, backoff 1/2 s; visibility 1 s, DLQ after 2 receives",
              messages=20, outage_seconds=10, backoff_cap_seconds=2, visibility_timeout=1,
              give_up_seconds=20),
    "3": Case("no outage; 50 % random failures, 10 % poison; smoke timing",
              messages=20, outage_seconds=0, failure_rate=0.5, poison_rate=0.1,
              backoff_cap_seconds=2, visibility_timeout=1, give_up_seconds=20),
}  # fmt: skip


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="two tiny cases (1 and 3), ~40 s")
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), help="default: all")
    parser.add_argument("--messages", type=positive, help="messages of every case")
    parser.add_argument(
        "--give-up-seconds",
        type=positive,
        help="stop a run this long after the consumer's recovery (default 480; smoke 20)",
    )
    parser.add_argument("--seed", type=positive, default=1, help="poison and failures drawn")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # a child: one run, its Result out
    return parser


def chosen_runs(args: argparse.Namespace) -> list[tuple[str, Case]]:
    table = SMOKE_CASES if args.smoke else CASES
    names = [n for n in args.cases or sorted(table) if n in table]
    runs = []
    for name in names:
        case = replace(table[name], seed=args.seed)
        if args.messages:
            case = replace(case, messages=args.messages)
        if args.give_up_seconds:
            case = replace(case, give_up_seconds=args.give_up_seconds)
        runs += [(name, replace(case, breaker=on)) for on in (True, False)]
    return runs


def run_child(case: Case) -> Result:
    """One run in a process of its own (its emulator's threads and CPU are its own)."""
    child = subprocess.run(
        [sys.executable, __file__, "--run", Result(case).to_json()],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = child.stdout.strip().splitlines()
    if child.returncode or not lines:
        return Result(case, error=f"exit {child.returncode}: {child.stderr.strip()[-2000:]}")
    return Result.from_json(lines[-1])


def row(name: str, result: Result) -> str:
    case = result.case
    share = 100 * result.parked / result.sent if result.sent else 0.0
    if result.recovery_to_last is None:
        back = "-"
    elif result.finished:
        back = f"{result.recovery_to_last:.0f} s"
    else:
        back = f"> {case.give_up_seconds:.0f} s (gave up)"
    cells = [
        f"{name}: {case.label}",
        "on" if case.breaker else "off",
        f"{result.parked} ({share:.1f} %)",
        str(result.lost),
        str(result.duplicates),
        str(result.left),
        str(result.openings) if case.breaker else "-",
        back,
    ]
    return "| " + " | ".join(cells) + " |"


def timeline(name: str, result: Result) -> str:
    events = ", ".join(f"{phase} +{when:.0f} s" for when, phase in result.breaker_events)
    return f"- case {name}, breaker on: {events or 'never opened'}"


def replays(name: str, result: Result) -> str:
    """How many attempts the consumed copies had spent: the evidence of a give-back."""
    counts = result.replays_of_consumed
    breaker = "on" if result.case.breaker else "off"
    shown = "/".join(counts) or "-"
    return f"- case {name}, breaker {breaker}: consumed after {shown} replays: " + (
        "/".join(str(n) for n in counts.values()) or "-"
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.run:
        print(run_case(Result.from_json(args.run).case).to_json())
        return 0
    runs = chosen_runs(args)
    print(f"bench_outage: {len(runs)} runs at once ({shown(__file__, argv)})")
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        results = list(pool.map(lambda run: run_child(run[1]), runs))
    print()
    print(
        "| case | breaker | parked | lost | duplicates | left | openings "
        "| consumer back → last consumed |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (name, _), result in zip(runs, results, strict=True):
        print(row(name, result))
    print()
    for (name, _), result in zip(runs, results, strict=True):
        if result.case.breaker:
            print(timeline(name, result))
    print()
    for (name, _), result in zip(runs, results, strict=True):
        print(replays(name, result))
    print(f"\nwall time {time.monotonic() - started:.0f} s")
    failed = False
    for (name, _), result in zip(runs, results, strict=True):
        problem = result.error or (f"{result.lost} lost" if result.lost else None)
        if problem:
            breaker = "on" if result.case.breaker else "off"
            print(f"bench_outage: case {name}, breaker {breaker}: {problem}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
