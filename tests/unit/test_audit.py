"""The audit trail's records and stores, without AWS: the JSON form round-trips, whatever a
store holds besides records is skipped (never an error), the newest actions come back whole,
the action refuses to run when its begin could not be written, and every way an action ends
(its exit code, an error, a signal, a stop token, a run abandoned on a second signal) gives
one end record of the same shape."""

from __future__ import annotations

import contextlib
import json
import shutil
import string
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dlq_replay.audit import (
    Action,
    AuditError,
    AuditOutcome,
    AuditPhase,
    AuditRecord,
    FileAuditStore,
    Identity,
    Origin,
    pair_records,
    utc_text,
)
from dlq_replay.audit.recorder import ABANDON_SECONDS, outcome_of
from dlq_replay.audit.store import take_actions
from hypothesis import given
from hypothesis import strategies as st

START = datetime(2026, 11, 29, 2, 0, tzinfo=UTC)
CALLER = Identity("arn:aws:sts::123456789012:assumed-role/Ops/alice", "123456789012", "AROA:alice")


def record(n: int, phase: AuditPhase, **more: object) -> AuditRecord:
    at = utc_text(START + timedelta(seconds=n))
    return AuditRecord(f"id{n:04d}", phase, at, at, "redrive", Origin.CLI, CALLER, **more)  # type: ignore[arg-type]


texts = st.text(string.printable, max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)


@given(
    request=st.dictionaries(texts, json_values, max_size=4),
    tally=st.none() | st.dictionaries(texts, json_values, max_size=4),
    size=st.none() | st.integers(0, 10**6),
    error=st.none() | texts,
    left=st.none() | st.text(max_size=20),
    abandoned=st.none() | st.text(max_size=20),
)
def test_a_record_round_trips_through_its_json(
    request: dict[str, object],
    tally: dict[str, object] | None,
    size: int | None,
    error: str | None,
    left: str | None,
    abandoned: str | None,
) -> None:
    end = record(
        1,
        AuditPhase.END,
        request=request,
        tally=tally,
        selection_size=size,
        error=error,
        outcome=AuditOutcome.FAILED,
        exit_code=1,
        queues=("https://q/a",),
        left=left,
        abandoned=abandoned,
    )
    text = json.dumps(end.to_json())
    assert AuditRecord.from_json(json.loads(text)) == end


@given(lines=st.lists(st.text(max_size=80) | json_values.map(json.dumps), max_size=8))
def test_a_file_of_anything_lists_only_records_and_never_fails(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = tmp_path_factory.mktemp("trail") / "audit.jsonl"
    store = FileAuditStore(path)
    store.write(record(1, AuditPhase.BEGIN))
    with path.open("a", encoding="utf-8") as file:
        file.write("\n".join(line.replace("\n", " ") for line in lines) + "\n")
    store.write(record(1, AuditPhase.END, outcome=AuditOutcome.OK, exit_code=0))

    (action,) = store.actions()

    assert action.begin == record(1, AuditPhase.BEGIN)
    assert action.end is not None
    assert action.end.outcome is AuditOutcome.OK


@given(count=st.integers(0, 12), limit=st.integers(1, 12), ended=st.sets(st.integers(0, 11)))
def test_the_newest_actions_come_back_whole_and_newest_first(
    count: int, limit: int, ended: set[int]
) -> None:
    records = [record(n, AuditPhase.BEGIN) for n in range(count)]
    records += [record(n, AuditPhase.END, outcome=AuditOutcome.OK) for n in ended if n < count]
    newest_first = sorted(records, key=lambda r: r.sort_key, reverse=True)

    actions = take_actions(iter(newest_first), limit)

    assert [a.record.action_id for a in actions] == [f"id{n:04d}" for n in reversed(range(count))][
        :limit
    ]
    for action in actions:
        assert action.begin is not None
        assert (action.end is not None) == (int(action.record.action_id[2:]) in ended)
    assert pair_records(newest_first)[:limit] == actions


def test_since_is_the_start_time(tmp_path: Path) -> None:
    store = FileAuditStore(tmp_path / "audit.jsonl")
    for n in (0, 10, 20):
        store.write(record(n, AuditPhase.BEGIN))
    since = utc_text(START + timedelta(seconds=10))
    assert [a.record.action_id for a in store.actions(since=since)] == ["id0020", "id0010"]


def recorder(
    store: FileAuditStore,
    identify: Callable[[], Identity] = lambda: CALLER,
    stop: threading.Event | None = None,
) -> Action:
    return Action(
        "purge",
        Origin.CONSOLE,
        {"queue": "operator"},
        open_store=lambda: store,
        identify=identify,
        stop=stop,
    )


def test_the_begin_is_written_by_the_gate_and_the_end_after(tmp_path: Path) -> None:
    store = FileAuditStore(tmp_path / "audit.jsonl")
    action = recorder(store)
    action.start()
    action.gate()
    (begun,) = store.actions()
    assert begun.end is None
    assert begun.record.identity == CALLER
    action.note(queues=("https://q/operator",), selection_size=3)
    action.tally({"purged": 3})

    assert action.finish(0) is None

    (done,) = store.actions()
    assert done.end is not None
    assert (done.end.outcome, done.end.tally, done.end.selection_size) == (
        AuditOutcome.OK,
        {"purged": 3},
        3,
    )
    assert done.record.origin is Origin.CONSOLE


def test_an_identity_that_cannot_be_read_is_unknown_with_the_reason(tmp_path: Path) -> None:
    store = FileAuditStore(tmp_path / "audit.jsonl")

    def identify() -> Identity:
        raise RuntimeError("no STS here")

    action = recorder(store, identify)
    action.start()
    action.gate()
    (begun,) = store.actions()
    assert not begun.record.identity.known
    assert "no STS here" in str(begun.record.identity.unknown_because)


def test_a_begin_that_cannot_be_written_refuses_the_action(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("")
    store = FileAuditStore(tmp_path / "not-a-folder" / "audit.jsonl")
    action = recorder(store)
    action.start()

    with pytest.raises(AuditError, match="did not run"):
        action.gate()
    assert "not recorded" in str(action.finish(None, RuntimeError("x")))


def test_an_error_and_an_interrupt_are_recorded_as_such(tmp_path: Path) -> None:
    store = FileAuditStore(tmp_path / "audit.jsonl")
    for error, outcome in (
        (RuntimeError("boom"), AuditOutcome.ERROR),
        (KeyboardInterrupt(), AuditOutcome.INTERRUPTED),
    ):
        action = recorder(store)
        action.start()
        assert action.finish(None, error) is None
        assert store.actions(limit=1)[0].end.outcome is outcome  # type: ignore[union-attr]


def test_an_sts_that_does_not_answer_in_time_leaves_the_caller_unknown(tmp_path: Path) -> None:
    """A network where STS is unreachable (a VPC with an SQS endpoint only) holds the action
    up for the patience at most."""
    store = FileAuditStore(tmp_path / "audit.jsonl")
    answer = threading.Event()

    def identify() -> Identity:
        answer.wait(10)
        return CALLER

    action = recorder(store, identify)
    action.identity_patience = 0.05
    action.start()
    action.gate()
    answer.set()
    (begun,) = store.actions()
    assert begun.record.identity.unknown_because == "STS did not answer within 0.05 s"


def test_an_end_that_cannot_be_written_is_said_and_the_begin_stands(tmp_path: Path) -> None:
    folder = tmp_path / "trail"
    store = FileAuditStore(folder / "audit.jsonl")
    action = recorder(store)
    action.start()
    action.gate()
    kept = (folder / "audit.jsonl").read_text()
    shutil.rmtree(folder)
    folder.write_text("")  # the folder is now a file: the next write fails

    problem = action.finish(0)

    assert problem is not None
    assert problem.startswith("the result was not recorded in the audit trail")
    assert json.loads(kept)["phase"] == "begin"


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (0, AuditOutcome.OK),
        (1, AuditOutcome.FAILED),
        (2, AuditOutcome.ERROR),
        (130, AuditOutcome.INTERRUPTED),
    ],
)
def test_the_exit_code_says_the_outcome(code: int, outcome: AuditOutcome) -> None:
    assert outcome_of(code) is outcome


def test_an_action_held_in_a_with_block_ends_by_its_exit_code(tmp_path: Path) -> None:
    store = FileAuditStore(tmp_path / "audit.jsonl")
    with recorder(store) as action:
        action.gate(queues=("https://q/operator",), selection_size=2)
        action.tally({"deleted": 1, "failed": 1})
        action.leftover("never read: the action was not stopped")
        action.ended(1)

    (done,) = store.actions()
    assert done.end is not None
    assert (done.end.outcome, done.end.exit_code, done.end.left) == (AuditOutcome.FAILED, 1, None)
    assert action.problem is None


class Signalled(KeyboardInterrupt):
    """What `cli.shutdown.Interrupted` is to the audit: a KeyboardInterrupt with its code."""

    code = 143


def _stopped_by_token(action: Action, stop: threading.Event) -> None:
    stop.set()
    action.ended(0)  # the work returned normally, having seen the token


def _stopped_by_signal(action: Action, stop: threading.Event) -> None:
    raise Signalled("interrupted (SIGTERM)")


def _stopped_by_ctrl_c(action: Action, stop: threading.Event) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("stopping", "code", "error"),
    [
        (_stopped_by_token, 130, None),
        (_stopped_by_signal, 143, "Signalled: interrupted (SIGTERM)"),
        (_stopped_by_ctrl_c, 130, "KeyboardInterrupt: "),
    ],
)
def test_a_stopped_action_ends_interrupted_with_its_tally_and_what_was_left(
    tmp_path: Path,
    stopping: Callable[[Action, threading.Event], None],
    code: int,
    error: str | None,
) -> None:
    store = FileAuditStore(tmp_path / "audit.jsonl")
    stop = threading.Event()

    def run() -> None:
        with recorder(store, stop=stop) as action:
            action.gate(queues=("https://q/operator",), selection_size=9)
            action.tally({"moved": 4, "interrupted": "SIGINT"})
            action.leftover("no message is left hidden")
            stopping(action, stop)

    with pytest.raises(KeyboardInterrupt) if error else contextlib.nullcontext():
        run()

    (done,) = store.actions()
    end = done.end
    assert end is not None
    assert (end.outcome, end.exit_code) == (AuditOutcome.INTERRUPTED, code)
    assert end.tally == {"moved": 4, "interrupted": "SIGINT"}
    assert end.left == "no message is left hidden"
    assert end.error == error
    shape = {"queues", "selection_size", "outcome", "exit_code", "tally", "left"}
    assert set(end.to_json()) - set(done.record.to_json()) - {"error"} == shape


def test_an_abandoned_action_writes_its_end_at_once_and_only_once(tmp_path: Path) -> None:
    """A second signal: the end is written before the process exits (`abandon`), and the
    unwinding that follows in the same process writes no second end."""
    path = tmp_path / "audit.jsonl"
    store = FileAuditStore(path)
    problems: list[str | None] = []

    def run() -> None:
        with recorder(store) as action:
            action.gate()
            action.tally({"moved": 2})
            problems.append(action.abandon("second signal (SIGINT)", 130, "3 stay hidden"))
            raise KeyboardInterrupt("abandoned")  # what Shutdown.run raises when exit returns

    with pytest.raises(KeyboardInterrupt):
        run()
    assert problems == [None]

    assert len(path.read_text().splitlines()) == 2
    (done,) = store.actions()
    assert done.end is not None
    assert (done.end.outcome, done.end.exit_code) == (AuditOutcome.INTERRUPTED, 130)
    assert (done.end.abandoned, done.end.left) == ("second signal (SIGINT)", "3 stay hidden")
    assert done.end.tally == {"moved": 2}


class Hanging(FileAuditStore):
    """A trail whose end never gets written (a DynamoDB that stopped answering)."""

    def write(self, record: AuditRecord) -> None:
        if record.phase is AuditPhase.END:
            threading.Event().wait(30)
        super().write(record)


def test_an_abandoned_action_waits_for_its_end_no_longer_than_the_bound(tmp_path: Path) -> None:
    action = Action(
        "redrive",
        Origin.CLI,
        {},
        open_store=lambda: Hanging(tmp_path / "audit.jsonl"),
        identify=lambda: CALLER,
    )
    action.start()
    action.gate()
    started = time.monotonic()

    problem = action.abandon("second signal (SIGINT)", 130, "")

    assert time.monotonic() - started < ABANDON_SECONDS + 0.5
    assert problem == "the result was not recorded in the audit trail in 2 s"


def test_an_unrecorded_action_writes_nothing(tmp_path: Path) -> None:
    with Action.unrecorded("redrive") as action:
        action.gate(queues=("https://q/a",))
        action.tally({"moved": 1})
        action.ended(0)
    assert action.end is None
    assert action.problem is None
