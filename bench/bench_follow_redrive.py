"""Benchmark of a followed redrive beside an unfollowed one: messages per second of the same
client-side move (`ops.clientmove`, the default concurrency), through a real boto3 client
configured as the redrive's (`sqs.client.lean`), against the in-memory SQS over HTTP in a
process of its own (bench/sqs_process.py) with a fixed latency on every call.

- unfollowed: the request without a `follow_id` and no follower, what a redrive did before
  following existed (and what a dry run or a native move still records: nothing);
- followed: the move's id in `follow_id` (each copy tagged `dlq-replay-action`) and its
  `MoveFollower` writing the follow record to the local file, as `dlq-replay redrive
  --client-side` does without a table.

The two cases alternate, round after round, each on a freshly filled source queue; the figure
is each case's median and the ratio followed / unfollowed (the target: 0.95 or more). Every
round must move every message exactly once, and a followed round must record every copy as
sent, else the benchmark fails.

    python bench/bench_follow_redrive.py            # 2,000 messages, 20 ms a call, 7 rounds
    python bench/bench_follow_redrive.py --smoke    # CI: 200 messages, 5 ms, 3 rounds
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
from dlq_replay.cli.options import INTERACTIVE_CONFIG
from dlq_replay.follow.journal import FileFollowStore
from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.movefollow import MoveFollower
from dlq_replay.ops.queueinfo import QueueInfo, RedrivePolicy
from dlq_replay.ops.redrive import DEFAULT_CONCURRENCY, RedriveRequest
from dlq_replay.sqs.client import lean
from sqs_http import ACCOUNT
from sqs_process import hosted_sqs

REGION = "us-east-1"
ATTRIBUTES = {
    "dlq-replay-park-reason": {"DataType": "String", "StringValue": "max-attempts"},
    "sqs-dlq-replay-nb": {"DataType": "Number", "StringValue": "3"},
}


def queue(fake: Any, name: str, redrive: RedrivePolicy | None) -> QueueInfo:
    url = fake.queue(name)
    return QueueInfo(url, f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}", False, 30, redrive)


def one_round(
    fake: Any, sqs: Any, source: QueueInfo, target: QueueInfo, messages: int, *, trail: Path | None
) -> float:
    """One move of `messages` parked messages; its messages per second. `trail`: the follow
    file of a followed move (None: unfollowed)."""
    fake.fill("source", [f"order {n}" for n in range(messages)], ATTRIBUTES)
    before = len(fake.arrived("target"))
    action_id = uuid.uuid4().hex if trail is not None else None
    request = RedriveRequest(
        source=source,
        destination=target,
        wait_seconds=0,
        concurrency=DEFAULT_CONCURRENCY,
        follow_id=action_id,
    )
    follower = None
    if trail is not None and action_id is not None:
        store = FileFollowStore(trail)
        follower = MoveFollower(store, action_id, "redrive", sqs=sqs, destinations=[target])
    started = time.perf_counter()
    tally = ClientMove(sqs, request, follower=follower).run(None)
    elapsed = time.perf_counter() - started
    if not tally.adds_up or tally.failed or len(fake.arrived("target")) - before != messages:
        sys.exit(f"benchmark: a round lost or doubled messages: {tally}")
    if trail is not None and action_id is not None:
        move = FileFollowStore(trail).follow(action_id)
        if move is None or (move.sent, move.untracked) != (messages, 0) or move.sent_at is None:
            sys.exit(f"benchmark: the followed move was not recorded whole: {move}")
    return messages / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000, metavar="N")
    parser.add_argument("--latency-ms", type=float, default=20.0, metavar="MS")
    parser.add_argument("--rounds", type=int, default=7, metavar="N")
    parser.add_argument("--smoke", action="store_true", help="few messages: CI keeps it running")
    args = parser.parse_args()
    if args.messages < 10 or args.rounds < 1 or not 0 <= args.latency_ms <= 1000:
        parser.error("--messages 10 or more, --rounds 1 or more, --latency-ms 0 to 1000")
    messages, latency_ms, rounds = (
        (200, 5.0, 3) if args.smoke else (args.messages, args.latency_ms, args.rounds)
    )
    fake = hosted_sqs(latency_ms / 1000)
    fake.start()
    try:
        target = queue(fake, "target", None)
        source = queue(fake, "source", None)
        session = boto3.Session(
            aws_access_key_id="bench", aws_secret_access_key="bench", region_name=REGION
        )
        sqs = session.client("sqs", endpoint_url=fake.endpoint_url, config=lean(INTERACTIVE_CONFIG))
        rates: dict[str, list[float]] = {"unfollowed": [], "followed": []}
        with tempfile.TemporaryDirectory(prefix="bench-follow-") as folder:
            trail = Path(folder) / "follow.jsonl"
            one_round(fake, sqs, source, target, 10, trail=None)  # the connection, the caches
            for n in range(rounds):
                # Alternated, the first case swapped each round: drift hits both alike.
                order = ("unfollowed", "followed") if n % 2 == 0 else ("followed", "unfollowed")
                for case in order:
                    where = trail if case == "followed" else None
                    rates[case].append(one_round(fake, sqs, source, target, messages, trail=where))
        calls = fake.call_counts()
    finally:
        fake.stop()
    medians = {case: statistics.median(found) for case, found in rates.items()}
    ratio = medians["followed"] / medians["unfollowed"]
    print(
        f"bench_follow_redrive: {messages} messages a round, {latency_ms:g} ms per SQS call, "
        f"concurrency {DEFAULT_CONCURRENCY}, {rounds} rounds a case, alternated"
    )
    print(f"{'case':<12} {'median msg/s':>13} {'rounds (msg/s)':>40}")
    for case, found in rates.items():
        listed = " ".join(f"{rate:.0f}" for rate in found)
        print(f"{case:<12} {medians[case]:>13.0f} {listed:>40}")
    print(f"followed / unfollowed: {ratio:.3f} (target 0.95 or more)")
    print(f"SQS calls in all: {sum(calls.values())} ({', '.join(sorted(calls))})")


if __name__ == "__main__":
    main()
