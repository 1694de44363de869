"""The property the issue asks of the follow-up: over any interleaving of returns, duplicate
deliveries (SQS is at-least-once), replayed copies carrying the same tag, several moves at
once and invocations that overlap, no return is counted twice, none is lost, and each move
that passes its threshold gets exactly one notice.

On the table, overlapping invocations are real interleavings at the request boundary: a
botocore hook on one invocation's client runs another invocation whole just before one of its
requests goes out, so every step of the first (keys written, summary added, notice claimed)
meets the second's effects. The file store is held to the same outcome with invocations in
turn (its lock makes overlapping ones take turns; tests/unit/test_follow_stores.py races
threads on it).
"""

from __future__ import annotations

import itertools
import tempfile
import uuid
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from dlq_replay.follow.journal import FileFollowStore
from dlq_replay.follow.moves import FollowStore, FollowThreshold, ReturnNotice
from dlq_replay.follow.tables import DynamoFollowStore, shard_of
from dlq_replay.follow.tag import FollowTag
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from integration.harness import breaker_table
from moto import mock_aws

REGION = "us-east-1"
T0 = 1_796_000_000.0
THRESHOLD = FollowThreshold(share=0.25, minimum=2)


@dataclass(frozen=True)
class Move:
    action_id: str
    started: bool
    sent: int
    messages: int  # the distinct messages it moved (keys m0..)


@dataclass(frozen=True)
class Scenario:
    moves: tuple[Move, ...]
    invocations: tuple[tuple[FollowTag, ...], ...]
    # Per invocation: before which of its requests the next invocation runs whole, as the
    # item it writes (a move's key shards or its summary: the add, then the notice's claim)
    # and the how-manieth such request; None: no overlap. The table's store only.
    overlaps: tuple[tuple[str, int] | None, ...]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    moves = tuple(
        Move(
            f"act{n}",
            draw(st.sampled_from([True, True, True, False])),
            draw(st.integers(0, 24)),
            draw(st.integers(1, 12)),
        )
        for n in range(draw(st.integers(1, 3)))
    )
    picks = st.tuples(st.integers(0, len(moves) - 1), st.integers(0, 11))
    first = draw(st.lists(picks, max_size=30))
    # A replayed copy of a returned message carries its tag again: some come back twice more.
    again = draw(st.lists(st.sampled_from(first), max_size=10)) if first else []
    order = draw(st.permutations([*first, *again]))
    deliveries = [FollowTag(moves[m].action_id, f"m{k % moves[m].messages}") for m, k in order]
    cuts = sorted(set(draw(st.lists(st.integers(0, len(deliveries)), max_size=8))))
    bounds = [0, *cuts, len(deliveries)]
    invocations = tuple(tuple(deliveries[a:b]) for a, b in itertools.pairwise(bounds) if b > a)
    points = st.tuples(st.sampled_from(["keys", "summary"]), st.integers(0, 2))
    overlaps = tuple(draw(st.one_of(st.none(), points)) for _ in invocations)
    return Scenario(moves, invocations, overlaps)


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[Any, Any]]:
    """Two clients of one moto (two Lambda invocations), kept for the module's examples."""
    with mock_aws():
        yield tuple(boto3.client("dynamodb", region_name=REGION) for _ in range(2))


def table_store(clients: tuple[Any, Any]) -> list[DynamoFollowStore]:
    """Two stores on one fresh table, each on its own client."""
    name = f"breaker-{uuid.uuid4().hex[:12]}"
    breaker_table(clients[0], name)
    return [DynamoFollowStore(client, name, threshold=THRESHOLD) for client in clients]


def start(store: FollowStore, scenario: Scenario) -> None:
    for move in scenario.moves:
        if move.started:
            store.started(move.action_id, 3600, T0, command="redrive")
            store.sent(move.action_id, move.sent, 1)


def run_overlapping(
    scenario: Scenario, clients: tuple[Any, Any]
) -> tuple[FollowStore, list[ReturnNotice]]:
    store, other = table_store(clients)
    start(store, scenario)
    waiting = deque(zip(scenario.invocations, scenario.overlaps, strict=True))
    notices: list[ReturnNotice] = []
    current: dict[str, Any] = {"requests": Counter(), "overlap": None}

    def maybe_overlap(params: dict[str, Any], **_: Any) -> None:
        sort_key = params.get("Key", {}).get("sk", {}).get("S", "")
        item = "summary" if sort_key == "summary" else "keys"
        if current["overlap"] == (item, current["requests"][item]) and waiting:
            current["overlap"] = None
            tags, _unused = waiting.popleft()
            notices.extend(other.returns(tags, T0 + 1))
        current["requests"][item] += 1

    event = "before-parameter-build.dynamodb.UpdateItem"
    clients[0].meta.events.register(event, maybe_overlap)
    try:
        while waiting:
            tags, overlap = waiting.popleft()
            current.update(requests=Counter(), overlap=overlap)
            notices.extend(store.returns(tags, T0 + 1))
    finally:
        clients[0].meta.events.unregister(event, maybe_overlap)
    return store, notices


def check(store: FollowStore, scenario: Scenario, notices: list[ReturnNotice]) -> None:
    delivered: dict[str, set[str]] = {}
    for tags in scenario.invocations:
        for tag in tags:
            delivered.setdefault(tag.action_id, set()).add(tag.key)
    noticed = Counter(notice.action_id for notice in notices)
    for move in scenario.moves:
        distinct = len(delivered.get(move.action_id, ()))
        found = store.follow(move.action_id)
        if not move.started and not distinct:
            assert found is None
            continue
        assert found is not None
        assert found.returned == distinct, move  # none counted twice, none lost
        owed = move.started and move.sent > 0 and distinct >= THRESHOLD.needed(move.sent)
        assert noticed[move.action_id] == (1 if owed else 0), (move, distinct, notices)
        assert found.notified == owed
    for notice in notices:
        assert notice.returned >= THRESHOLD.needed(notice.sent)
        assert notice.command == "redrive"


# Two races picked out, beside what is drawn: an invocation's returns written to a key shard
# just after the same key from another invocation; the notice claimed by another invocation
# between an invocation's count and its own claim.
SAME_KEY = Scenario(
    (Move("act0", True, 20, 12),),
    # m1 and m11 share a shard (sha1 "a..."): the write refused for m1 must still add m11.
    ((FollowTag("act0", "m1"), FollowTag("act0", "m11")), (FollowTag("act0", "m1"),)),
    (("keys", 0), None),
)
CLAIMED = Scenario(
    (Move("act0", True, 8, 12),),
    ((FollowTag("act0", "m1"), FollowTag("act0", "m2")), (FollowTag("act0", "m3"),)),
    (("summary", 1), None),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
@example(scenario=SAME_KEY)
@example(scenario=CLAIMED)
def test_the_table_counts_each_return_once_and_notices_once(
    clients: tuple[Any, Any], scenario: Scenario
) -> None:
    store, notices = run_overlapping(scenario, clients)
    check(store, scenario, notices)


@settings(max_examples=60, deadline=None)
@given(scenario=scenarios())
def test_the_file_counts_each_return_once_and_notices_once(scenario: Scenario) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = FileFollowStore(Path(directory) / "follow.jsonl", threshold=THRESHOLD)
        start(store, scenario)
        notices = [n for tags in scenario.invocations for n in store.returns(tags, T0 + 1)]
        check(store, scenario, notices)


def test_the_picked_keys_share_a_shard() -> None:
    assert shard_of("m1") == shard_of("m11")
