"""The memory of receives (`ops.receivememory`): what one read saw refuses the next read that
could move a message; the file it keeps is bounded, replaced whole, and whatever it holds (a
hand edit, another program's file, a truncated write) ends in a one-line refusal, never in a
traceback or a read let through blind."""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
from dlq_replay.ops.queueinfo import QueueInfo, RedrivePolicy
from dlq_replay.ops.receivememory import (
    FORMAT,
    MAX_IDS,
    ReadRefusedError,
    ReceiveMemory,
    Remembered,
    dumps,
    parse,
    state_folder,
)
from dlq_replay.ops.receiving import ReceiveBudget, Sighting
from hypothesis import example, given, settings
from hypothesis import strategies as st

DAY = 86_400.0
QUEUE = QueueInfo(
    url="http://q/orders-dlq",
    arn="arn:aws:sqs:us-east-1:123456789012:orders-dlq",
    fifo=False,
    visibility_timeout=30,
    redrive=RedrivePolicy("arn:aws:sqs:us-east-1:123456789012:orders-operator", 6),
    retention_seconds=4 * 86_400,
)
BUDGET = ReceiveBudget(
    max_receive_count=6, arrival_count=1, reserve=1, target_name="orders-operator"
)


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def seen(counts: dict[str, int], budget: ReceiveBudget = BUDGET) -> Sighting:
    """What a read that received these messages (id -> count after its receive) saw."""
    sighting = Sighting()
    sighting.saw(
        [
            {"MessageId": message_id, "Attributes": {"ApproximateReceiveCount": str(count)}}
            for message_id, count in counts.items()
        ],
        budget,
    )
    return sighting


def test_a_message_a_read_left_with_its_reserve_refuses_the_next_read(tmp_path: Path) -> None:
    memory = ReceiveMemory(tmp_path)
    memory.record(QUEUE, seen({"far": 3, "near": 4}))
    assert memory.refusal(QUEUE, BUDGET) is None  # 2 receives left: one more read keeps 1

    memory.record(QUEUE, seen({"near": 5}))

    line = memory.refusal(QUEUE, BUDGET)
    assert line == (
        "orders-dlq: message near has 1 receive left of maxReceiveCount 6 (it moves to "
        "orders-operator on the receive after that); a read now could move it. Redrive or "
        "export --delete it (that receive is kept for it), or raise the queue's maxReceiveCount."
    )
    with pytest.raises(ReadRefusedError, match="message near has 1 receive left"):
        memory.check(QUEUE, BUDGET)
    # A delete spends the kept receive: refused only once none is left.
    assert memory.refusal(QUEUE, ReceiveBudget(6, 1, 0, "orders-operator")) is None


def test_what_a_delete_of_ours_removed_is_forgotten(tmp_path: Path) -> None:
    memory = ReceiveMemory(tmp_path)
    memory.record(QUEUE, seen({"a": 5, "b": 4}))

    memory.forget(QUEUE, ["a"])

    assert memory.refusal(QUEUE, BUDGET) is None
    assert set(memory.load(QUEUE).ids) == {"b"}


def test_counts_only_rise_so_an_older_lower_count_never_lowers_one(tmp_path: Path) -> None:
    memory = ReceiveMemory(tmp_path)
    memory.record(QUEUE, seen({"a": 5}))
    memory.record(QUEUE, seen({"a": 4}))  # reported lower (another receiver's stale view)
    assert memory.load(QUEUE).ids["a"][0] == 5


def test_an_entry_goes_once_the_queue_retention_has_passed_since_it_was_seen(
    tmp_path: Path,
) -> None:
    clock = Clock()
    memory = ReceiveMemory(tmp_path, clock=clock)
    memory.record(QUEUE, seen({"a": 5, "old-far": 2}))
    clock.now += 3 * DAY
    memory.record(QUEUE, seen({"b": 5}))
    clock.now += 1.5 * DAY  # a: 4.5 days, past the 4-day retention; b: 1.5 days

    kept = memory.load(QUEUE)

    assert set(kept.ids) == {"b"}
    assert kept.counts == {}
    memory.record(QUEUE, seen({"c": 2}))  # a write drops them from the file too
    text = memory.path(QUEUE).read_text()
    assert '"a"' not in text
    assert '"b"' in text


def test_the_file_is_bounded_and_the_ids_it_drops_still_refuse(tmp_path: Path) -> None:
    """MAX_IDS ids, the highest counts; an id dropped keeps its count in `counts`, so a read
    is refused too early rather than let through."""
    memory = ReceiveMemory(tmp_path)
    many = {f"m{i:05d}": 4 for i in range(MAX_IDS + 50)}  # 2 left: remembered by id
    memory.record(QUEUE, seen(many))
    memory.record(QUEUE, seen({"top": 5}))

    kept = memory.load(QUEUE)

    assert len(kept.ids) == MAX_IDS
    assert kept.ids["top"][0] == 5
    assert 4 in kept.counts  # the dropped ones' count
    assert memory.path(QUEUE).stat().st_size < 60_000
    tight = ReceiveBudget(6, 1, 2, "orders-operator")  # a reserve of 2: count 4 refuses
    memory.forget(QUEUE, ["top", *list(kept.ids)])
    line = memory.refusal(QUEUE, tight)
    assert line is not None
    assert "has 2 receives left" in line


def test_the_file_lives_in_the_local_state_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "/srv/state")
    assert state_folder() == Path("/srv/state/dlq-replay/receives")
    monkeypatch.delenv("XDG_STATE_HOME")
    assert state_folder() == Path.home() / ".local" / "state" / "dlq-replay" / "receives"


def test_the_file_is_replaced_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    memory = ReceiveMemory(tmp_path)
    for count in range(1, 6):
        memory.record(QUEUE, seen({"a": count}))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted([memory.path(QUEUE).name, memory.path(QUEUE).with_suffix(".lock").name])
    assert json.loads(memory.path(QUEUE).read_text())["format"] == FORMAT


def test_a_file_of_another_queue_refuses(tmp_path: Path) -> None:
    memory = ReceiveMemory(tmp_path)
    memory.path(QUEUE).parent.mkdir(parents=True, exist_ok=True)
    memory.path(QUEUE).write_text(dumps("arn:aws:sqs:us-east-1:1:other", Remembered({}, {})))
    with pytest.raises(ReadRefusedError, match="names another queue"):
        memory.check(QUEUE, BUDGET)
    assert parse(dumps(QUEUE.arn, Remembered({"a": (5, 1.0)}, {2: ("b", 1.0)})), QUEUE.arn) == (
        Remembered({"a": (5, 1.0)}, {2: ("b", 1.0)})
    )


# -- hostile files -------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
entries = st.lists(
    st.one_of(st.integers(-3, 99), st.text(max_size=5), st.floats(), st.none(), st.booleans()),
    max_size=3,
)
near_files = st.fixed_dictionaries(
    {
        "format": st.sampled_from([FORMAT, "dlq-replay/1", ""]),
        "queue": st.sampled_from([QUEUE.arn, "arn:other"]),
        "ids": st.dictionaries(st.text(max_size=6), entries, max_size=4) | json_values,
        "counts": st.dictionaries(st.text(max_size=4), entries, max_size=4) | json_values,
    }
).map(json.dumps)
times = st.floats(allow_nan=False) | st.integers(0, 2_000_000_000) | st.just(10**400)
valid_files = st.fixed_dictionaries(
    {
        "format": st.just(FORMAT),
        "queue": st.just(QUEUE.arn),
        "ids": st.dictionaries(st.text(max_size=6), st.tuples(st.integers(0, 9), times)),
        "counts": st.dictionaries(
            st.integers(0, 9).map(str), st.tuples(st.text(max_size=6), times)
        ),
    }
).map(json.dumps)
texts = st.one_of(
    valid_files,
    near_files,
    json_values.map(json.dumps),
    st.text(max_size=200),
    near_files.map(lambda text: text[: len(text) // 2]),  # a write cut short
)


@settings(max_examples=300, deadline=None)
@given(texts)
# A control character in an id once split the refusal line in two.
@example(json.dumps({"format": FORMAT, "queue": QUEUE.arn, "ids": {"\n": [5, 4e9]}, "counts": {}}))
@example(
    json.dumps({"format": FORMAT, "queue": QUEUE.arn, "ids": {}, "counts": {"5": ["\x1b", 4e9]}})
)
def test_whatever_the_file_holds_a_read_is_refused_in_one_line_or_judged(text: str) -> None:
    with TemporaryDirectory() as folder:
        memory = ReceiveMemory(Path(folder))
        memory.folder.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8", "surrogatepass")
        memory.path(QUEUE).write_bytes(data)
        refused: str | None = None
        try:
            line = memory.refusal(QUEUE, BUDGET)
        except ReadRefusedError as error:
            refused = str(error)
        if refused is not None:
            assert "\n" not in refused
            assert "delete it to read again" in refused
            # Recording leaves an unreadable file as it is: reads stay refused.
            memory.record(QUEUE, seen({"a": 2}))
            assert memory.path(QUEUE).read_bytes() == data
            return
        remembered = memory.load(QUEUE)
        counts = [c for c, _ in remembered.ids.values()] + list(remembered.counts)
        refuses = any(BUDGET.stop_after(count) for count in counts)
        assert (line is not None) == refuses
        assert line is None or "\n" not in line


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.text(min_size=1, max_size=6), st.integers(1, 9), max_size=8),
        min_size=1,
        max_size=6,
    )
)
def test_a_read_is_refused_exactly_when_a_message_seen_keeps_its_reserve_or_less(
    reads: list[dict[str, int]],
) -> None:
    """Whatever sequence of reads (each: the counts it saw), the memory refuses a read exactly
    when some message's highest count seen leaves it `reserve` receives or fewer."""
    with TemporaryDirectory() as folder:
        memory = ReceiveMemory(Path(folder))
        highest: dict[str, int] = {}
        for counts in reads:
            memory.record(QUEUE, seen(counts))
            for message_id, count in counts.items():
                highest[message_id] = max(count, highest.get(message_id, 0))
        expected = any(BUDGET.stop_after(count) for count in highest.values())
        assert (memory.refusal(QUEUE, BUDGET) is not None) == expected


def test_a_move_takes_its_chosen_ids_and_keeps_the_reserve_for_what_it_gives_back(
    tmp_path: Path,
) -> None:
    """A move's receive of a chosen message is its move (it may spend the kept receive); the
    messages it gives back keep the reserve, as after a read; and no message may be one whose
    next receive SQS would move on itself, chosen or not."""
    memory = ReceiveMemory(tmp_path)
    memory.record(QUEUE, seen({"chosen": 5, "other": 3}))
    memory.check(QUEUE, BUDGET, takes_all=True)
    memory.check(QUEUE, BUDGET, takes_all=False, taken=frozenset({"chosen"}))
    with pytest.raises(ReadRefusedError, match="message chosen has 1 receive left"):
        memory.check(QUEUE, BUDGET, takes_all=False, taken=frozenset({"other"}))

    memory.record(QUEUE, seen({"chosen": 6}))  # none left: its next receive moves it on
    for taken in (frozenset(), frozenset({"chosen"})):
        with pytest.raises(ReadRefusedError, match="message chosen has 0 receives left"):
            memory.check(QUEUE, BUDGET, takes_all=True, taken=taken)
