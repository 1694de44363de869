"""The replay's recovery tally of one batch (follow/replay_side.py): which outcome counts as
an arrival, a sent copy or a park, by the rule of the module's docstring; and the returns of
operator moves among what arrives, over hostile attributes."""

from __future__ import annotations

import boto3
import pytest
from aws_lambda_powertools import Metrics
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE, Attribute, number, string
from dlq_replay.core.decision import Action, Decision, ParkReason
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.report import Outcome
from dlq_replay.follow.moves import FollowThreshold
from dlq_replay.follow.replay_side import ReplayFollow, recovery_tally, returns_of, table_store
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE, FollowTag, follow_value
from dlq_replay.sqs.sending import SendFailure
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

COUNT = "sqs-dlq-replay-nb"
DLQ = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
MAIN = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"


def message(
    count: int | str | None = None, *, waiting: bool = False, mid: str = "m"
) -> InboundMessage:
    values: dict[str, Attribute] = {}
    if count is not None:
        values[COUNT] = number(count) if isinstance(count, int) else string(count)
    if waiting:
        values[NOT_BEFORE_ATTRIBUTE] = number(1_700_000_000)
    return InboundMessage(mid, "r", "body", values, DLQ)


def counters(*outcomes: Outcome, known: dict[str, int] | None = None) -> dict[str, int]:
    return recovery_tally(outcomes, COUNT, known).to_counters()


def test_a_replay_is_an_arrival_of_its_count_and_a_copy_sent_as_its_attempt() -> None:
    assert counters(Outcome(message(), Decision(Action.REPLAY, MAIN, 1))) == {
        "failed_first": 1,
        "sent_1": 1,
    }
    assert counters(Outcome(message(2), Decision(Action.REPLAY, MAIN, 3))) == {
        "returned_2": 1,
        "sent_3": 1,
    }


def test_a_deferred_record_arrived_but_its_copy_is_sent_only_when_released() -> None:
    assert counters(Outcome(message(1), Decision(Action.DEFER, DLQ, 2, not_before=5))) == {
        "returned_1": 1
    }


def test_a_release_is_a_copy_sent_and_never_an_arrival() -> None:
    released = Outcome(message(2, waiting=True), Decision(Action.RELEASE, MAIN, 2))
    assert counters(released) == {"sent_2": 1}


def test_a_park_arrived_and_is_parked_with_its_count() -> None:
    parked = Decision(Action.PARK, attempt=3, reason=ParkReason.MAX_ATTEMPTS)
    assert counters(Outcome(message(3), parked)) == {"returned_3": 1, "parked_3": 1}
    first = Decision(Action.PARK, attempt=0, reason=ParkReason.UNKNOWN_SOURCE)
    assert counters(Outcome(message(), first)) == {"failed_first": 1, "parked_0": 1}


def test_a_waiting_copy_parked_is_parked_but_did_not_arrive_again() -> None:
    parked = Decision(Action.PARK, attempt=2, reason=ParkReason.REJECTED)
    assert counters(Outcome(message(2, waiting=True), parked)) == {"parked_2": 1}


@pytest.mark.parametrize(
    "decision",
    [
        Decision(Action.HOLD, attempt=2, delay=60, not_before=5),
        Decision(Action.SKIP),
        Decision(Action.FAIL, problem="no"),
    ],
    ids=["hold", "skip", "fail"],
)
def test_records_not_done_count_nothing(decision: Decision) -> None:
    assert counters(Outcome(message(1), decision)) == {}


def test_a_write_that_failed_counts_nothing_the_record_comes_again() -> None:
    failed = Outcome(
        message(1), Decision(Action.REPLAY, MAIN, 2), SendFailure("X", "no", permanent=False)
    )
    assert counters(failed) == {}


def test_a_malformed_count_is_not_counted_as_an_arrival() -> None:
    parked = Decision(Action.PARK, reason=ParkReason.INVALID_COUNT)
    assert counters(Outcome(message("-1"), parked)) == {}


def test_the_ledgers_count_stands_for_a_serverless_record_without_the_attribute() -> None:
    outcome = Outcome(message(mid="lam"), Decision(Action.REPLAY, "arn:fn", 3))
    assert counters(outcome, known={"lam": 2}) == {"returned_2": 1, "sent_3": 1}


def test_a_batch_adds_up() -> None:
    batch = [
        Outcome(message(mid="a"), Decision(Action.REPLAY, MAIN, 1)),
        Outcome(message(mid="b"), Decision(Action.REPLAY, MAIN, 1)),
        Outcome(message(1, mid="c"), Decision(Action.REPLAY, MAIN, 2)),
        Outcome(message(3, mid="d"), Decision(Action.PARK, attempt=3)),
        Outcome(message(1, mid="e"), Decision(Action.HOLD, attempt=1)),
    ]
    assert counters(*batch) == {
        "failed_first": 2,
        "sent_1": 2,
        "returned_1": 1,
        "sent_2": 1,
        "returned_3": 1,
        "parked_3": 1,
    }


def test_returns_are_tagged_arrivals_and_not_waiting_copies() -> None:
    tag = string(follow_value("a" * 32, "key-1"))
    arriving = InboundMessage("x", "r", "b", {FOLLOW_ATTRIBUTE: tag}, DLQ)
    waiting = InboundMessage(
        "y", "r", "b", {FOLLOW_ATTRIBUTE: tag, NOT_BEFORE_ATTRIBUTE: number(5)}, DLQ
    )
    malformed = InboundMessage("z", "r", "b", {FOLLOW_ATTRIBUTE: string("no slash")}, DLQ)
    assert returns_of([arriving, waiting, malformed]) == [FollowTag("a" * 32, "key-1")]


ATTRIBUTE = st.builds(
    Attribute,
    st.sampled_from(["String", "Number", "Binary", "String.x", "Number.int", "Nope"]),
    st.one_of(st.none(), st.text(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=8)),
)


@given(
    st.lists(
        st.tuples(
            st.dictionaries(
                st.sampled_from([COUNT, FOLLOW_ATTRIBUTE, NOT_BEFORE_ATTRIBUTE, "other"]),
                ATTRIBUTE,
            ),
            st.sampled_from(list(Action)),
            st.one_of(st.none(), st.integers(-5, 10**12)),
        ),
        max_size=12,
    )
)
def test_hostile_records_never_raise_and_count_only_what_they_can(
    records: list[tuple[dict[str, Attribute], Action, int | None]],
) -> None:
    outcomes = [
        Outcome(InboundMessage(f"m{i}", "r", "b", values, DLQ), Decision(action, MAIN, attempt))
        for i, (values, action, attempt) in enumerate(records)
    ]
    tally = recovery_tally(outcomes, COUNT)
    assert all(value > 0 for value in tally.to_counters().values())
    done = sum(1 for o in outcomes if o.done)
    assert sum(tally.to_counters().values()) <= 3 * done
    for tag in returns_of(o.message for o in outcomes):
        assert follow_value(tag.action_id, tag.key)  # every return is a well-formed tag


class Lines:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def debug(self, msg: str, *args: object, **kwargs: object) -> None: ...
    def info(self, msg: str, *args: object, **kwargs: object) -> None: ...
    def warning(self, msg: str, *args: object, **kwargs: object) -> None: ...

    def error(self, msg: str, *args: object, **kwargs: object) -> None:
        self.errors.append(msg)


def test_a_failed_write_is_one_line_and_a_metric_never_the_batchs() -> None:
    metrics = Metrics(namespace="Test", service="test")
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        log = Lines()
        follow = ReplayFollow(
            table_store(lambda: dynamodb, "no-such-table", FollowThreshold()),
            count_attribute=COUNT,
            logger=log,
            metrics=metrics,
        )
        tag = string(follow_value("b" * 32, "k"))
        arrived = InboundMessage("t", "r", "b", {FOLLOW_ATTRIBUTE: tag}, DLQ)
        first = message(mid="u")  # untagged: the tally's
        outcomes = {
            "t": Outcome(arrived, Decision(Action.REPLAY, MAIN, 1)),
            "u": Outcome(first, Decision(Action.REPLAY, MAIN, 1)),
        }
        follow([arrived, first], outcomes)
    assert len(log.errors) == 2  # the tally, and the returns: both refused, neither raised
    assert all(line.startswith("follow: ") for line in log.errors)
    assert metrics.metric_set["FollowWriteFailures"]["Value"] == [1.0, 1.0]
    metrics.clear_metrics()


def test_a_moves_copy_and_its_replays_are_left_to_the_moves_follow() -> None:
    """A redriven copy keeps the count it had (here 3): counted here it would be a failure of
    attempt 3 that the replay never sent. It is the move's return instead, and so is a replay
    of it (the tag is kept); an untagged record of the same batch is still counted."""
    tag = string(follow_value("c" * 32, "moved-1"))
    returned = InboundMessage("t1", "r", "b", {COUNT: number(3), FOLLOW_ATTRIBUTE: tag}, DLQ)
    replayed = InboundMessage("t2", "r", "b", {COUNT: number(1), FOLLOW_ATTRIBUTE: tag}, DLQ)
    outcomes = (
        Outcome(returned, Decision(Action.PARK, reason=ParkReason.MAX_ATTEMPTS)),
        Outcome(replayed, Decision(Action.REPLAY, MAIN, 2)),
        Outcome(message(1), Decision(Action.REPLAY, MAIN, 2)),
    )
    assert counters(*outcomes) == {"returned_1": 1, "sent_2": 1}
    assert returns_of(o.message for o in outcomes) == [FollowTag("c" * 32, "moved-1")] * 2
