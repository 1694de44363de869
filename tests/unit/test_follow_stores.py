"""The follow-up's stores, the stack's table (on moto) and the local file, held to one
behaviour: the replay's hourly counts add up and come back by window; a move's batches, end
and returns are kept, each returned message counted once however often it is delivered, and
the one notice goes to exactly one caller. The table's writes are counted at the boundary
(botocore's events), and so are its answers where a service might send less."""

from __future__ import annotations

import fcntl
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from dlq_replay.follow.journal import FileFollowStore, default_follow_path
from dlq_replay.follow.moves import UNFINISHED_SECONDS, FollowStore, FollowThreshold, ReturnNotice
from dlq_replay.follow.recovery import RecoveryTally
from dlq_replay.follow.tables import DynamoFollowStore, shard_of
from dlq_replay.follow.tag import FollowTag
from dlq_replay.targets.dynamo_items import to_item
from integration.harness import breaker_table
from moto import mock_aws

REGION = "us-east-1"
T0 = 1_796_000_000.0  # 2026-11-30T00:53:20Z
THRESHOLD = FollowThreshold(share=0.10, minimum=2)


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with mock_aws():
        yield


def new_table() -> tuple[Any, str]:
    """A client and a fresh table with the stack's keys and TTL attribute."""
    client = boto3.client("dynamodb", region_name=REGION)
    name = f"breaker-{uuid.uuid4().hex[:12]}"
    breaker_table(client, name)
    return client, name


@dataclass
class Backend:
    """One kind of store, made fresh; `calls` records the table's operations."""

    kind: str
    follows: Callable[[FollowThreshold], FollowStore]
    recoveries: Callable[[], FollowStore]
    calls: list[str] = field(default_factory=list)
    client: Any = None
    table: str = ""


def make_backend(kind: str, directory: Path) -> Backend:
    if kind == "file":
        path = directory / "follow.jsonl"
        return Backend(
            kind,
            lambda threshold: FileFollowStore(path, threshold=threshold, now=lambda: T0),
            lambda: FileFollowStore(path),
        )
    client, table = new_table()
    backend = Backend(
        kind,
        lambda threshold: DynamoFollowStore(client, table, threshold=threshold, now=lambda: T0),
        lambda: DynamoFollowStore(client, table),
        client=client,
        table=table,
    )
    client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: backend.calls.append(model.name)
    )
    return backend


@pytest.fixture(params=["dynamodb", "file"])
def backend(request: pytest.FixtureRequest, moto: None, tmp_path: Path) -> Backend:
    return make_backend(str(request.param), tmp_path)


def tally(first: int = 0, sent: dict[int, int] | None = None, back: dict[int, int] | None = None,
          parked: dict[int, int] | None = None) -> RecoveryTally:  # fmt: skip
    counted = RecoveryTally()
    for _ in range(first):
        counted.arrived(0)
    for attempt, n in (back or {}).items():
        for _ in range(n):
            counted.arrived(attempt)
    for attempt, n in (sent or {}).items():
        for _ in range(n):
            counted.sent(attempt)
    for attempt, n in (parked or {}).items():
        for _ in range(n):
            counted.parked(attempt)
    return counted


def test_the_replays_counts_add_up_by_hour_and_queue(backend: Backend) -> None:
    store = backend.recoveries()
    store.add("orders-dlq", tally(10, sent={1: 10}), T0)
    store.add("orders-dlq", tally(0, sent={2: 3}, back={1: 3}), T0 + 60)
    store.add("orders-dlq", tally(0, back={2: 1}, parked={2: 1}), T0 + 2 * 3600)
    store.add("orders-dlq", RecoveryTally(), T0 + 3 * 3600)  # nothing to add: no write
    store.add("other-dlq", tally(99, sent={1: 99}), T0)
    if backend.kind == "dynamodb":
        assert backend.calls == ["UpdateItem"] * 4  # one per invocation, none when empty

    day = store.window("orders-dlq", T0 - 3600, T0 + 24 * 3600, settled_before=T0 + 24 * 3600)
    assert day.failed_first == 10
    assert day.sent == {1: 10, 2: 3}
    assert day.returned == {1: 3, 2: 1}
    assert day.parked == {2: 1}
    assert day.text() == "last 25 h: 10 failed first; 7 recovered on replay 1, 2 on 2; 1 parked"
    assert len(day.buckets) == 2

    first_hour = store.window("orders-dlq", T0 - 1800, T0 + 1800)
    assert first_hour.failed_first == 10
    assert first_hour.returned == {1: 3}
    assert first_hour.in_flight(1) == 7  # the default settle window: its hour is not settled
    assert store.window("nothing-dlq", T0, T0 + 3600).text() == "last 1 h: nothing replayed"


def test_a_moves_batches_end_and_returns_are_kept(backend: Backend) -> None:
    store = backend.follows(THRESHOLD)
    store.started("move1", 300, T0, command="redrive")
    store.sent("move1", 400, 3)
    store.sent("move1", 600, 0)
    assert store.follow("move1") is not None
    assert store.follow("move1").sent_at is None  # type: ignore[union-attr]
    store.finished("move1", T0 + 10)

    back = [FollowTag("move1", f"m{i}") for i in range(7)]
    assert store.returns(back[:4], T0 + 20) == []
    assert store.returns([*back[2:], back[0], back[0]], T0 + 30) == []  # overlaps and twice
    move = store.follow("move1")
    assert move is not None
    assert (move.sent, move.untracked, move.returned) == (1000, 3, 7)
    assert (move.sent_at, move.last_return_at, move.window_seconds) == (T0 + 10, T0 + 30, 300)
    assert move.command == "redrive"
    assert move.settled_at(T0 + 329) is None
    assert move.settled_at(T0 + 330) == T0 + 330
    assert move.to_json(T0 + 400) == {
        "sent": 1000,
        "returned": 7,
        "untracked": 3,
        "settled_at": "2026-11-30T00:58:50Z",
    }


def test_the_notice_goes_out_once_past_the_threshold(backend: Backend) -> None:
    store = backend.follows(THRESHOLD)
    store.started("move2", 600, T0, command="import")
    store.sent("move2", 30, 0)  # needs max(2, 3) = 3 returns
    assert store.returns([FollowTag("move2", "a"), FollowTag("move2", "b")], T0 + 1) == []
    assert store.returns([FollowTag("move2", "a"), FollowTag("move2", "b")], T0 + 2) == []
    noticed = store.returns([FollowTag("move2", "c"), FollowTag("move2", "d")], T0 + 3)
    assert noticed == [ReturnNotice("move2", 4, 30, T0, "import")]
    assert store.returns([FollowTag("move2", "e")], T0 + 4) == []
    move = store.follow("move2")
    assert move is not None
    assert move.notified
    assert move.returned == 5


def test_returns_of_a_move_never_seen_starting_are_counted_without_a_notice(
    backend: Backend,
) -> None:
    store = backend.follows(THRESHOLD)
    tags = [FollowTag("elsewhere", f"k{i}") for i in range(20)]
    assert store.returns(tags, T0) == []
    move = store.follow("elsewhere")
    assert move is not None
    assert (move.sent, move.returned, move.started_at, move.notified) == (0, 20, None, False)
    assert move.settled_at(T0 + 10**6) is None


def test_a_return_after_settling_is_counted_and_reopens_the_move_silently(
    backend: Backend,
) -> None:
    store = backend.follows(THRESHOLD)
    store.started("move3", 60, T0)
    store.sent("move3", 10, 0)
    store.finished("move3", T0 + 1)
    late = [FollowTag("move3", f"k{i}") for i in range(5)]
    assert store.returns(late, T0 + 61) == []  # settled at T0 + 61
    move = store.follow("move3")
    assert move is not None
    assert move.returned == 5
    assert move.settled_at(T0 + 100) is None
    assert move.settled_at(T0 + 121) == T0 + 121


def test_moves_are_read_together_and_unknown_ones_left_out(backend: Backend) -> None:
    store = backend.follows(THRESHOLD)
    for n in range(3):
        store.started(f"many{n}", 10, T0 + n)
        store.sent(f"many{n}", n, 0)
    store.returns([FollowTag("many1", "x")], T0 + 5)
    found = store.follows(["many0", "many1", "nobody", "many1", "bad/id", "many2"])
    assert sorted(found) == ["many0", "many1", "many2"]
    assert [found[f"many{n}"].sent for n in range(3)] == [0, 1, 2]
    assert found["many1"].returned == 1
    assert store.follow("nobody") is None
    assert store.follow("bad/id") is None


def test_a_move_whose_end_was_never_written_settles_from_its_last_counts(
    backend: Backend,
) -> None:
    """A process killed before its end record: the move settles its window (at least
    UNFINISHED_SECONDS) after its last counts or return, never stays unsettled."""
    store = backend.follows(THRESHOLD)
    store.started("killed", 60, T0 - 100)
    store.sent("killed", 5, 1)  # at T0, the store's clock
    move = store.follow("killed")
    assert move is not None
    assert (move.sent_at, move.last_sent_at) == (None, T0)
    assert move.settled_at(T0 + UNFINISHED_SECONDS - 1) is None
    assert move.settled_at(T0 + UNFINISHED_SECONDS) == T0 + UNFINISHED_SECONDS
    store.returns([FollowTag("killed", "k")], T0 + 30)
    move = store.follow("killed")
    assert move is not None
    assert move.settles_at() == T0 + 30 + UNFINISHED_SECONDS
    store.finished("killed", T0 + 40)  # once its end is written, its own window counts
    assert store.follow("killed").settles_at() == T0 + 40 + 60  # type: ignore[union-attr]
    store.started("quiet", 7200, T0)  # killed before any counts: from its start, its window
    assert store.follow("quiet").settles_at() == T0 + 7200  # type: ignore[union-attr]


def test_a_bad_action_id_or_count_is_refused(backend: Backend) -> None:
    store = backend.follows(THRESHOLD)
    with pytest.raises(ValueError, match="action id"):
        store.started("a/b", 10, T0)
    with pytest.raises(ValueError, match="0 or more"):
        store.sent("ok", -1, 0)


def test_the_items_expire_by_the_template_s_ttl_attribute(moto: None) -> None:
    """Every follow and recovery item carries the attribute the stack's table expires by."""
    client, table = new_table()
    described = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    assert described["AttributeName"] == "expires_at"
    DynamoFollowStore(client, table, threshold=THRESHOLD).started("ttl", 60, T0)
    tally = RecoveryTally()
    tally.arrived(0)
    DynamoFollowStore(client, table).add("orders-dlq", tally, T0)
    items = client.scan(TableName=table)["Items"]
    assert len(items) == 2
    assert all("expires_at" in item for item in items)


def test_the_table_takes_one_write_per_shard_touched_plus_one_per_move(moto: None) -> None:
    backend = make_backend("dynamodb", Path())
    store = backend.follows(THRESHOLD)
    store.started("busy", 60, T0)
    store.sent("busy", 1000, 0)
    keys = [f"m{i}" for i in range(40)]
    shards = {shard_of(key) for key in keys}
    backend.calls.clear()
    assert store.returns([FollowTag("busy", key) for key in keys], T0) == []  # 40 < 100
    assert backend.calls == ["UpdateItem"] * (len(shards) + 1)

    backend.calls.clear()
    assert store.returns([FollowTag("busy", "m0")], T0 + 1) == []
    assert backend.calls == ["UpdateItem"]  # refused: already there; nothing else written
    move = store.follow("busy")
    assert move is not None
    assert move.returned == 40


def test_a_refusal_without_the_item_is_read_again(moto: None) -> None:
    """A service that sends no copy of the item with a refused condition: the keys are read."""
    backend = make_backend("dynamodb", Path())

    def drop_item(parsed: dict[str, Any], **_: Any) -> None:
        parsed.pop("Item", None)

    backend.client.meta.events.register("after-call.dynamodb.UpdateItem", drop_item)
    store = backend.follows(THRESHOLD)
    assert store.returns([FollowTag("mv", "a")], T0) == []
    backend.calls.clear()
    assert store.returns([FollowTag("mv", "a"), FollowTag("mv", "b")], T0) == []
    assert "GetItem" in backend.calls
    move = store.follow("mv")
    assert move is not None
    assert move.returned == 2


def test_many_moves_are_read_in_batches_of_100_keys_and_unprocessed_keys_again(
    moto: None,
) -> None:
    """Seven moves are 119 keys: two BatchGetItem requests, whatever the number of moves, and
    the keys a throttled table hands back unprocessed are asked again after a pause."""
    backend = make_backend("dynamodb", Path())
    pauses: list[float] = []
    store = DynamoFollowStore(backend.client, backend.table, sleep=pauses.append)
    ids = [f"m{n}" for n in range(7)]
    for n, action_id in enumerate(ids):
        store.started(action_id, 10, T0)
        store.sent(action_id, n + 1, 0)
        store.returns([FollowTag(action_id, f"k{i}") for i in range(n)], T0)
    held = [True]

    def throttle(parsed: dict[str, Any], **_: Any) -> None:
        """The first answer keeps back its first two items, as a throttled table does."""
        if not held[0]:
            return
        held[0] = False
        table, items = next(iter(parsed["Responses"].items()))
        kept, parsed["Responses"][table] = items[:2], items[2:]
        keys = [{"pk": item["pk"], "sk": item["sk"]} for item in kept]
        parsed["UnprocessedKeys"] = {table: {"Keys": keys}}

    backend.client.meta.events.register("after-call.dynamodb.BatchGetItem", throttle)
    backend.calls.clear()
    found = store.follows(ids)
    assert backend.calls == ["BatchGetItem"] * 3
    assert pauses == [0.05]
    assert [(found[a].sent, found[a].returned) for a in ids] == [(n + 1, n) for n in range(7)]


def test_the_shards_counts_are_the_truth_and_foreign_items_are_skipped(moto: None) -> None:
    """A summary write lost after a shard's (a timeout between the two): no return lost."""
    client, table = new_table()
    items = [
        {"pk": "follow#lost", "sk": f"keys#{shard_of('k1')}", "keys": {"k1"}, "returned": 1},
        {"pk": "follow#lost", "sk": "junk", "returned": "many", "sent": 10**30},
        {"pk": "recovery#q", "sk": "not-an-hour", "failed_first": 5},
        {"pk": "recovery#q", "sk": "2026-11-29T08", "failed_first": 2, "sent_1": "x"},
    ]
    for item in items:
        client.put_item(TableName=table, Item=to_item(item))
    move = DynamoFollowStore(client, table).follow("lost")
    assert move is not None
    assert (move.returned, move.sent) == (1, 0)
    summary = DynamoFollowStore(client, table).window("q", T0 - 86400, T0 + 86400)
    assert (summary.failed_first, summary.sent) == (2, {})


def test_the_file_skips_torn_and_foreign_lines(tmp_path: Path) -> None:
    path = tmp_path / "follow.jsonl"
    store = FileFollowStore(path, threshold=THRESHOLD)
    store.started("fm", 10, T0)
    store.sent("fm", 10, 1)
    with path.open("a") as trail:
        trail.write('[1]\n{"kind": 3}\n{"kind":"sent","action_id":"fm","sent":"9"}\n')
        trail.write('{"kind":"returned","action_id":"fm","keys":"abc"}\n{"kind":"sent","act')
    # The torn last line (a writer that died mid-line) is skipped; the next write starts a
    # line of its own rather than being glued to it.
    store.returns([FollowTag("fm", "k")], T0)
    move = store.follow("fm")
    assert move is not None
    assert (move.sent, move.untracked, move.returned) == (10, 1, 1)
    recovery = FileFollowStore(path)
    recovery.add("q", tally(2), T0)
    assert recovery.window("q", T0 - 10, T0 + 10).failed_first == 2


def test_the_file_lives_beside_the_audits_trail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_follow_path() == tmp_path / "dlq-replay" / "follow.jsonl"
    FileFollowStore().add("q", tally(1), T0)
    assert (tmp_path / "dlq-replay" / "follow.jsonl").stat().st_mode & 0o777 == 0o600


def test_threads_sharing_the_file_count_each_key_once_and_notice_once(tmp_path: Path) -> None:
    """flock holds between open files of one process as between processes."""
    path = tmp_path / "follow.jsonl"
    FileFollowStore(path).started("race", 600, T0)
    FileFollowStore(path).sent("race", 100, 0)  # needs 10
    notices: list[ReturnNotice] = []
    barrier = threading.Barrier(8)

    def deliver(worker: int) -> None:
        store = FileFollowStore(path, threshold=THRESHOLD)
        barrier.wait()
        for batch in range(10):
            keys = [f"k{(worker * 4 + batch * 3 + i) % 30}" for i in range(3)]
            notices.extend(store.returns([FollowTag("race", key) for key in keys], T0 + batch))

    threads = [threading.Thread(target=deliver, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    move = FileFollowStore(path).follow("race")
    assert move is not None
    assert move.returned == 30  # every k0..k29 was delivered, most several times
    assert len(notices) == 1
    assert notices[0].returned >= 10


def test_counting_returns_waits_for_another_holder_of_the_files_lock(tmp_path: Path) -> None:
    """What makes the one notice one between processes: the read-decide-append of `returns`
    runs under the file's exclusive flock, so it waits for whoever holds it."""
    path = tmp_path / "follow.jsonl"
    store = FileFollowStore(path, threshold=THRESHOLD)
    store.started("held", 60, T0)
    store.sent("held", 10, 0)
    before = path.read_bytes()
    done = threading.Event()
    with path.open("rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX)

        def count() -> None:
            store.returns([FollowTag("held", "k")], T0)
            done.set()

        worker = threading.Thread(target=count)
        worker.start()
        assert not done.wait(0.3)  # blocked behind the other holder
        assert path.read_bytes() == before
        fcntl.flock(other, fcntl.LOCK_UN)
    worker.join(10)
    assert done.is_set()
    assert store.follow("held") is not None
    assert store.follow("held").returned == 1  # type: ignore[union-attr]
