"""The outage breaker for every kind of DLQ: a Lambda record carries no count attribute, only
the request id of the invocation that failed; the replay tells the breaker what its
invocation ledger knows of it (`Known`: the count, and when the invocation was made), and
which deliveries the target refused at once. Both are returns, counted against the moment
their delivery was made."""

from __future__ import annotations

import logging

from dlq_replay.breaker.breaker_state import BreakerState, Phase, give_back
from dlq_replay.breaker.controller import Breaker
from dlq_replay.breaker.rule import (
    BreakerPolicy,
    Counts,
    observe,
    outage_in_window,
    returned,
)
from dlq_replay.breaker.worker_side import MemoryStore, PollerSwitch, worker_breaker
from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE, Attribute
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.report import Outcome
from dlq_replay.targets.ledger import Invocation

COUNT = "sqs-dlq-replay-nb"
POLICY = BreakerPolicy()
LOG = logging.getLogger("test.breaker")
# Lambda writes its DLQ record after its own retries: minutes after our Invoke.
LAMBDA_RETRIES_SECONDS = 180.0
TARGET = "arn:aws:lambda:us-east-1:123456789012:function:f"


def lambda_record(
    message_id: str, *, sent: float, count: int | None = None, waiting: bool = False
) -> InboundMessage:
    """A Lambda asynchronous-invocation DLQ record: RequestID and ErrorCode, no count unless
    given (our own waiting copy carries it, and the not-before when `waiting`)."""
    attrs = {
        "RequestID": Attribute("String", f"request-{message_id}"),
        "ErrorCode": Attribute("Number", "200"),
    }
    if count is not None:
        attrs[COUNT] = attributes.number(count)
    if waiting:
        attrs[NOT_BEFORE_ATTRIBUTE] = attributes.number(2_000_000_000)
    return InboundMessage(
        message_id=message_id,
        receipt_handle="r",
        body="{}",
        attributes=attrs,
        queue_arn="arn",
        sent_ms=int(sent * 1000),
    )


def test_a_record_is_a_return_when_the_ledger_knows_its_invocation() -> None:
    record = lambda_record("m1", sent=1180.0)
    known = {"m1": Invocation(1, 1000.0)}

    assert returned(record, COUNT, known) == (1, 1000.0)  # counted when it was invoked
    assert returned(record, COUNT) is None  # nothing known: a first arrival
    assert returned(record, COUNT, {"m1": Invocation(0, 1000.0)}) is None
    assert returned(record, COUNT, {"m1": Invocation(2)}) == (2, 1180.0)  # time unknown
    # Our attribute, when the record has it, is the count; a waiting copy is no return.
    assert returned(lambda_record("m1", sent=1180.0, count=3), COUNT, known) == (3, 1180.0)
    assert returned(lambda_record("m1", sent=1180.0, count=0), COUNT, known) is None
    assert returned(lambda_record("m1", sent=1180.0, count=1, waiting=True), COUNT, known) is None


def waits(attempt: int) -> Decision:
    """What follows a refused delivery: a copy waiting in the DLQ for `attempt`."""
    return Decision(Action.DEFER, "dlq", attempt, not_before=2_000_000_000)


def test_a_batch_counts_ledger_returns_at_their_invocation_and_refusals_now() -> None:
    first = Decision(Action.RELEASE, TARGET, 1)
    later = Decision(Action.RELEASE, TARGET, 3)
    handled = [
        (lambda_record("back", sent=1180.0), later, True),  # returned from attempt 1
        (lambda_record("again", sent=1180.0), later, True),  # returned from attempt 2
        (lambda_record("refused", sent=900.0, count=0), waits(2), True),  # 1 refused at once
        (lambda_record("accepted", sent=900.0, count=0), first, True),
        (lambda_record("refused-later", sent=900.0, count=2), waits(4), True),  # 3 refused
        (lambda_record("deferred", sent=900.0, count=0), waits(1), True),  # no delivery yet
    ]
    known = {"back": Invocation(1, 1000.0), "again": Invocation(2, 1000.0)}

    events = observe(
        handled, COUNT, 1200.0, known=known, refused={"refused": 1, "refused-later": 3}
    )

    assert sorted(events, key=lambda e: (e[0], e[1].returns)) == [
        (1000.0, Counts(returns=1)),  # not at 1180: when Lambda wrote it
        (1200.0, Counts(replays=2, sent=5)),
        (1200.0, Counts(returns=1)),  # the refused first replay, with its own replay
    ]


def test_returns_of_invocations_made_before_the_last_change_are_not_its_evidence() -> None:
    """Half-open since `since`: the records Lambda writes minutes after invocations made
    before the probe say nothing of the probe. Counted at their invocation they stay out of
    the window; counted when Lambda wrote them they would reopen the breaker."""
    since = 10_000.0
    first = Decision(Action.RELEASE, TARGET, 1)
    again = Decision(Action.RELEASE, TARGET, 2)
    now = since + 60
    probe = [(lambda_record(f"probe-{n}", sent=now - 5, count=0), first, True) for n in range(30)]
    back = [(lambda_record(f"back-{n}", sent=now - 1), again, True) for n in range(30)]
    invoked = now - LAMBDA_RETRIES_SECONDS  # before the probe began
    known = {f"back-{n}": Invocation(1, invoked) for n in range(30)}

    events = observe(probe + back, COUNT, now, known=known)
    assert outage_in_window(events, now, POLICY, since=since) is None
    untimed = {message_id: Invocation(1) for message_id in known}
    late = observe(probe + back, COUNT, now, known=untimed)
    assert outage_in_window(late, now, POLICY, since=since) is not None


def test_a_ledger_return_invoked_inside_a_known_outage_gets_its_attempt_back() -> None:
    state = BreakerState(Phase.OPEN, since=1000.0, outages=((900.0, None),))
    batch = [
        lambda_record("in", sent=1200.0),  # invoked at 950, inside the outage
        lambda_record("before", sent=1100.0),  # invoked at 850: spent, though written inside
        lambda_record("unknown", sent=1200.0),  # no invocation known: a first arrival
    ]
    known = {"in": Invocation(2, 950.0), "before": Invocation(2, 850.0)}

    decided, given = give_back(state, batch, COUNT, known)

    assert given == 1
    # The decision reads our attribute before the ledger: the count given back is written there.
    assert [m.attributes.get(COUNT) for m in decided] == [attributes.number(1), None, None]
    assert decided[1:] == batch[1:]


def test_the_controller_reads_the_state_for_a_batch_with_ledger_returns_only() -> None:
    reads: list[int] = []

    class CountingStore(MemoryStore):
        def load(self) -> BreakerState:
            reads.append(1)
            return super().load()

    breaker = Breaker(
        CountingStore(5.0), PollerSwitch(), logger=LOG, count_attribute=COUNT, clock=lambda: 2000.0
    )
    batch = [lambda_record("m1", sent=1500.0)]

    assert breaker.give_back(batch) == batch
    assert reads == []
    assert breaker.give_back(batch, {"m1": Invocation(1, 1400.0)}) == batch
    assert reads == [1]  # a return: the state is read (closed, no outage known)


def test_the_lambda_adapters_breaker_opens_on_ledger_returns_and_refusals() -> None:
    """What the adapter passes after a batch (`known`, `refused`) reaches the rule: a Lambda
    target that refuses every first delivery, or whose invocations all come back, opens it."""
    now = 10_000.0
    records = [lambda_record(f"new-{n}", sent=now - 5, count=0) for n in range(30)]

    def after_first(refused: set[str]) -> Phase:
        outcomes = [
            Outcome(m, waits(2), refused_attempt=1)
            if m.message_id in refused
            else Outcome(m, Decision(Action.RELEASE, TARGET, 1))
            for m in records
        ]
        breaker, _ = worker_breaker(logger=LOG, count_attribute=COUNT, clock=lambda: now)
        breaker.after_batch(outcomes, now, records)
        return breaker.store.load().phase

    assert after_first(set()) is Phase.CLOSED
    assert after_first({"new-0", "new-1"}) is Phase.CLOSED  # a few refusals are no outage
    assert after_first({m.message_id for m in records}) is Phase.OPEN
    first = [Outcome(m, Decision(Action.RELEASE, TARGET, 1)) for m in records]

    back = [
        Outcome(lambda_record(f"back-{n}", sent=now - 1), Decision(Action.RELEASE, TARGET, 2))
        for n in range(30)
    ]

    def after_returns(known: dict[str, Invocation]) -> Phase:
        breaker, _ = worker_breaker(logger=LOG, count_attribute=COUNT, clock=lambda: now)
        breaker.after_batch(first, now - 100, [o.message for o in first])  # invoked then
        breaker.after_batch(back, now, [o.message for o in back], known=known)
        return breaker.store.load().phase

    assert after_returns({}) is Phase.CLOSED  # nothing known: first arrivals
    assert after_returns({f"back-{n}": Invocation(1, now - 100) for n in range(30)}) is Phase.OPEN
