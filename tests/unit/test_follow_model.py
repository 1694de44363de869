"""The follow-up's pure model: the action tag (hostile values never raise, every written value
parses back), the replay's tally and its `status` line, the settle rule, a move's settlement
and `followed` object, the notice's threshold and text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from dlq_replay.core.attributes import Attribute, number, string
from dlq_replay.follow.moves import (
    FollowThreshold,
    MoveFollow,
    ReturnNotice,
    notice_text,
    owes_notice,
    settle_window,
)
from dlq_replay.follow.recovery import (
    OVER_ATTEMPTS,
    RecoveryBucket,
    RecoverySummary,
    RecoveryTally,
    hour_bucket,
    read_counters,
    summarize,
)
from dlq_replay.follow.tag import (
    FOLLOW_ATTRIBUTE,
    FollowTag,
    follow_value,
    parse_follow_value,
    read_tag,
)
from dlq_replay.ops.movefollow import tag_carried
from hypothesis import example, given
from hypothesis import strategies as st

ACTION_IDS = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)
KEYS = st.from_regex(r"[!-~]{1,128}", fullmatch=True)
PIECES = st.sampled_from(["/", "//", "a", "0f", "-", "_", " ", "\x00", "é", "\n", "x" * 70])
HOSTILE = st.one_of(st.text(), st.lists(st.one_of(PIECES, st.text(max_size=3))).map("".join))
NOON = datetime(2026, 12, 6, 14, 2, tzinfo=UTC).timestamp()


@given(text=HOSTILE)
@example(text="")
@example(text="/")
@example(text="abc/")
@example(text="/key")
@example(text="a b/key")
@example(text="abc/key with space")
@example(text="x" * 65 + "/k")
def test_a_hostile_value_parses_to_a_tag_that_writes_it_back_or_to_none(text: str) -> None:
    tag = parse_follow_value(text)
    if tag is not None:
        assert follow_value(tag.action_id, tag.key) == text


@pytest.mark.parametrize("text", ["", "/", "abc/", "/key", "a b/key", "abc/k y", "é/k", "a\n/k"])
def test_malformed_values_are_no_tag(text: str) -> None:
    assert parse_follow_value(text) is None


def test_non_text_is_no_tag() -> None:
    assert parse_follow_value(b"abc/key") is None  # type: ignore[arg-type]


@given(action_id=ACTION_IDS, key=KEYS)
def test_every_written_value_parses_back(action_id: str, key: str) -> None:
    assert parse_follow_value(follow_value(action_id, key)) == FollowTag(action_id, key)


@pytest.mark.parametrize(("action_id", "key"), [("a/b", "k"), ("", "k"), ("a", ""), ("a", "k k")])
def test_an_id_or_key_a_tag_cannot_carry_is_refused(action_id: str, key: str) -> None:
    with pytest.raises(ValueError, match=FOLLOW_ATTRIBUTE):
        follow_value(action_id, key)


def test_the_tag_is_read_from_string_values_only() -> None:
    value = follow_value("0123abcd", "m-1/x")
    assert read_tag({FOLLOW_ATTRIBUTE: string(value)}) == FollowTag("0123abcd", "m-1/x")
    assert read_tag({FOLLOW_ATTRIBUTE: Attribute("String.id", value)}) == FollowTag(
        "0123abcd", "m-1/x"
    )
    assert read_tag({FOLLOW_ATTRIBUTE: Attribute("Binary", None, value.encode())}) is None
    assert read_tag({FOLLOW_ATTRIBUTE: number(7)}) is None
    assert read_tag({"other": string(value)}) is None


def test_a_copy_is_tagged_where_a_slot_is_free() -> None:
    three = {f"a{i}": string("v") for i in range(3)}
    added = tag_carried("body", three, "act", "m1")
    assert added[FOLLOW_ATTRIBUTE] == string("act/m1")
    assert len(added) == 4
    assert FOLLOW_ATTRIBUTE not in three  # the caller's attributes are left alone

    full = {f"a{i}": string("v") for i in range(10)}
    assert tag_carried("body", full, "act", "m1") == full  # no slot: sent untracked

    retagged = {**{f"a{i}": string("v") for i in range(9)}, FOLLOW_ATTRIBUTE: string("old/m0")}
    replaced = tag_carried("body", retagged, "new", "m2")
    assert len(replaced) == 10
    assert replaced[FOLLOW_ATTRIBUTE] == string("new/m2")


def test_the_tally_counts_by_attempt() -> None:
    tally = RecoveryTally()
    assert tally.empty
    for _ in range(3):
        tally.arrived(0)
        tally.sent(1)
    tally.arrived(1)
    tally.parked(3)
    assert not tally.empty
    assert tally.to_counters() == {"failed_first": 3, "parked_3": 1, "returned_1": 1, "sent_1": 3}


def test_the_tally_refuses_what_is_no_attempt_and_bounds_what_is_beyond() -> None:
    tally = RecoveryTally()
    with pytest.raises(ValueError, match="not an attempt"):
        tally.arrived(-1)
    with pytest.raises(ValueError, match="not an attempt"):
        tally.sent(0)
    with pytest.raises(ValueError, match="not an attempt"):
        tally.parked(True)
    tally.arrived(10**8)
    tally.parked(10**8)
    assert tally.to_counters() == {f"parked_{OVER_ATTEMPTS}": 1, f"returned_{OVER_ATTEMPTS}": 1}


def test_stored_counters_are_read_strictly() -> None:
    from decimal import Decimal

    values = {
        "pk": "recovery#q",
        "failed_first": Decimal(4),
        "sent_1": 3,
        "sent_2": Decimal("2.5"),
        "returned_1": -1,
        "parked_x": 1,
        "sent_1000": 1,
        "parked_0": True,
        "expires_at": 5,
    }
    assert read_counters(values) == {"failed_first": 4, "sent_1": 3}


def summary(*hours: tuple[float, dict[str, int]], until: float = NOON) -> RecoverySummary:
    buckets = [RecoveryBucket(hour_bucket(until - ago), counters) for ago, counters in hours]
    return summarize(buckets, until - 24 * 3600, until, settled_before=until - 3600)


ISSUE_EXAMPLE = {
    "failed_first": 1000,
    "sent_1": 1000,
    "returned_1": 188,
    "sent_2": 188,
    "returned_2": 38,
    "sent_3": 38,
    "returned_3": 8,
    "parked_3": 8,
}


def test_the_status_line_of_a_settled_day() -> None:
    settled = summary((5 * 3600, ISSUE_EXAMPLE))
    assert settled.text() == (
        "last 24 h: 1,000 failed first; 812 recovered on replay 1, 150 on 2, 30 on 3; 8 parked"
    )
    assert [settled.recovered(n) for n in (1, 2, 3)] == [812, 150, 30]
    assert settled.parked == {3: 8}


def test_copies_of_the_last_hours_are_in_flight_not_recovered() -> None:
    recent = summary((5 * 3600, ISSUE_EXAMPLE), (600, {"failed_first": 10, "sent_1": 10}))
    assert recent.recovered(1) == 812
    assert recent.in_flight(1) == 10
    assert recent.text().endswith("; 8 parked; 10 in flight")
    assert recent.failed_first == 1010
    assert recent.to_json()["attempts"][0] == {
        "attempt": 1,
        "sent": 1010,
        "returned": 188,
        "recovered": 812,
        "in_flight": 10,
        "parked": 0,
    }


def test_the_status_line_when_nothing_or_nothing_replayed() -> None:
    assert summary().text() == "last 24 h: nothing replayed"
    assert summary((3600 * 3, {"failed_first": 2, "parked_0": 2})).text() == (
        "last 24 h: 2 failed first; none replayed; 2 parked"
    )


def test_hours_outside_the_window_are_left_out_and_one_hour_merged() -> None:
    merged = summary(
        (30 * 3600, {"failed_first": 100}),
        (2 * 3600, {"failed_first": 1}),
        (2 * 3600, {"failed_first": 2}),
    )
    assert merged.failed_first == 3
    assert len(merged.buckets) == 1
    data = merged.to_json()
    assert data["hours"] == [{"hour": hour_bucket(NOON - 7200), "failed_first": 3}]
    assert data["since"] == "2026-12-05T14:02:00Z"


def test_the_settle_window_rule() -> None:
    assert settle_window(5, 30, 900) == (5 + 1) * 30 + 900 + 20
    assert settle_window(None, 30, 0) == 2 * 30 + 20  # no redrive policy: one receive
    for bad in ((0, 30, 0), (3, -1, 0), (3, 30, -5), (True, 30, 0)):
        with pytest.raises(ValueError, match=r"must be"):
            settle_window(*bad)


def test_a_move_settles_its_window_after_the_sending_or_the_last_return() -> None:
    sending = MoveFollow("a", sent=10, window_seconds=60)
    assert sending.settled_at(10**10) is None  # still sending: never settled
    sent = MoveFollow("a", sent=10, untracked=2, window_seconds=60, sent_at=1000.0)
    assert sent.settled_at(1059.0) is None
    assert sent.settled_at(1060.0) == 1060.0
    returned = MoveFollow(
        "a", sent=10, window_seconds=60, sent_at=1000.0, returned=3, last_return_at=1100.0
    )
    assert returned.settled_at(1100.0) is None
    assert returned.settled_at(2000.0) == 1160.0
    assert sent.to_json(2000.0) == {
        "sent": 10,
        "returned": 0,
        "untracked": 2,
        "settled_at": "1970-01-01T00:17:40Z",
    }
    assert returned.to_json(1100.0)["settled_at"] is None


def test_the_threshold_is_a_share_and_a_minimum_in_whole_numbers() -> None:
    default = FollowThreshold()
    assert default.needed(1000) == 100  # not 101, as 0.1 * 1000 in floats would round up
    assert default.needed(1001) == 101
    assert default.needed(10) == 5
    assert default.needed(0) == 5
    assert default.passed(100, 1000)
    assert not default.passed(99, 1000)
    assert FollowThreshold.from_percent(" 7 ").needed(100) == 7
    assert FollowThreshold.from_percent("100", minimum=1).needed(3) == 3


@pytest.mark.parametrize("text", ["0", "101", "x", "1.5", "", "-3", "1e2", "\uff10"])
def test_a_percent_outside_1_to_100_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ValueError, match="whole number from 1 to 100") as caught:
        FollowThreshold.from_percent(text)
    assert "\n" not in str(caught.value)


@given(percent=st.integers(1, 100), sent=st.integers(0, 10**7), minimum=st.integers(1, 50))
def test_the_threshold_is_exact(percent: int, sent: int, minimum: int) -> None:
    threshold = FollowThreshold.from_percent(str(percent), minimum=minimum)
    needed = threshold.needed(sent)
    assert needed >= minimum
    assert needed * 100 >= percent * sent
    assert needed == minimum or (needed - 1) * 100 < percent * sent


def test_the_notice_text() -> None:
    notice = ReturnNotice("abc123", 120, 1000, NOON, "redrive")
    assert notice_text(notice, UTC) == (
        "the fix did not hold: 120 of 1,000 redriven at 14:02 came back (action abc123)"
    )
    paris = timezone(timedelta(hours=1))
    imported = ReturnNotice("abc123", 5, 20, NOON, "import")
    assert notice_text(imported, paris).startswith(
        "the fix did not hold: 5 of 20 imported at 15:02"
    )
    unknown = ReturnNotice("abc123", 5, 20, None)
    assert (
        notice_text(unknown, None)
        == "the fix did not hold: 5 of 20 moved came back (action abc123)"
    )


def test_a_notice_is_owed_once_past_the_threshold_before_settling() -> None:
    threshold = FollowThreshold(0.10, 5)
    started = MoveFollow("a", sent=100, window_seconds=60, started_at=0.0, returned=9)
    assert owes_notice(started, 10, threshold, at=50.0)
    assert not owes_notice(started, 9, threshold, at=50.0)
    assert not owes_notice(MoveFollow("a", sent=100, returned=9), 10, threshold, at=50.0)
    told = MoveFollow("a", sent=100, started_at=0.0, notified=True)
    assert not owes_notice(told, 50, threshold, at=50.0)
    settled = MoveFollow("a", sent=100, window_seconds=60, sent_at=10.0, started_at=0.0)
    assert owes_notice(settled, 10, threshold, at=69.0)
    assert not owes_notice(settled, 10, threshold, at=70.0)


def test_the_package_loads_none_of_its_modules() -> None:
    # The Lambda imports only the modules it needs: the package itself imports none.
    import subprocess
    import sys

    code = "import sys, dlq_replay.follow; print(sorted(m for m in sys.modules if 'follow.' in m))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert found.stdout.strip() == "[]"
