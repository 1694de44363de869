"""Property-based: the Lambda handler, per `DLQ_KIND`, over generated batches of what anyone who
can send to a DLQ can write (tests/integration/batches.py), on moto.

Invariants (docs/design.md: one record's fate, long delays, and "Recognition, by mode"):
- the handler never raises, and every record gets exactly one outcome: a copy taken by SQS
  (replayed, written back to wait, or parked), a delivery taken by its target, or a batch item
  failure, which leaves nothing sent for it;
- `sqs` mode recognises nothing: each record is replayed, waits or parks for a reason of §3-4,
  keeps every attribute, and no other service is ever called;
- `lambda` / `eventbridge` park a plain SQS record `unexpected-kind`;
- nothing is delivered anywhere REPLAY_TARGET_ARNS does not list.

Examples: the `dlq-replay-ci` profile (the gate) runs `EXAMPLES` (50) per property and mode,
derandomized (the same examples every run); HYPOTHESIS_PROFILE=dlq-replay-deep runs 2000 at
random. The issue-44 tests carry an explicit example of their defect, so today they fail at
once, without a search.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from integration import batches
from integration.batches import Record, Value
from integration.world import (
    COUNT,
    DELIVERIES,
    NOT_BEFORE,
    PARK_REASON,
    SQS_PARK_REASONS,
    Call,
    Handler,
    Observed,
    Sent,
    World,
    moto_world,
)

EXAMPLES = 50
settings.register_profile(
    "dlq-replay-ci",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "dlq-replay-deep",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PROFILE = settings.get_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "dlq-replay-ci")
    if os.environ.get("HYPOTHESIS_PROFILE", "").startswith("dlq-replay-")
    else "dlq-replay-ci"
)

MODES = ["sqs", "lambda", "eventbridge", "any"]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    """One world for the module: every example of every property shares it (moto's mock sets
    its own fake credentials; every client here names its region)."""
    with moto_world() as made:
        assert made.function_arn == batches.FUNCTION_ARN
        assert made.rule_arn == batches.RULE_ARN
        assert made.dlq_arn == batches.DLQ_ARN
        assert made.target_queue_arn == batches.TARGET_QUEUE_ARN
        yield made


_HANDLERS: dict[tuple[int, str, bool], Handler] = {}


def run(world: World, mode: str, batch: list[Record], *, fifo: bool = False) -> Observed:
    """One invocation of the handler for `mode` (built once per world and mode, as a Lambda
    execution environment keeps it); `fifo`: from the FIFO DLQ to the FIFO queues."""
    key = (id(world), mode, fifo)
    if key not in _HANDLERS:
        _HANDLERS.clear()
        _HANDLERS[key] = Handler(world, mode, fifo=fifo)
    return _HANDLERS[key](batches.event(batch, time.time(), fifo=fifo))


# --- examples: the shapes of issue 44, each a record of its own ----------------------------

_ID = "00000000-0000-4000-8000-0000000000{:02d}"


def _record(n: int, body: str, *attributes: tuple[str, Value]) -> Record:
    return Record(_ID.format(n), body, attributes, None, None, None)


DEEP_DESTINATION = _record(1, batches.DESTINATION_HEAD + "[" * 20_000 + "]" * 20_000 + "}")
GOOD = _record(2, "a good record")
LOOKS_LAMBDA = _record(
    3,
    '{"order": 7}',
    ("RequestID", Value("String", text="r-1")),
    ("ErrorCode", Value("Number", text="200")),
)
LOOKS_EVENTBRIDGE = _record(
    4,
    "order 8",
    ("RULE_ARN", Value("String", text=batches.RULE_ARN)),
    ("TARGET_ARN", Value("String", text=batches.FUNCTION_ARN)),
)
LOOKS_DESTINATION = _record(
    5,
    '{"version":"1.0","requestContext":{"requestId":"r-2","functionArn":"'
    f'{batches.FUNCTION_ARN}","condition":"RetriesExhausted"}},"requestPayload":{{"order":9}}}}',
)
PLAIN = _record(6, "plain sqs record", ("tenant", Value("String", text="t-1")))


# --- the properties --------------------------------------------------------------------------


def one_outcome_each(batch: list[Record], seen: Observed) -> None:
    """Never raises; each record is answered once: copies + deliveries + failures = records,
    failures name records of the batch, once each, and hidden receipts belong to failures."""
    assert seen.raised is None, f"the handler raised {seen.raised!r}"
    ids = [record.message_id for record in batch]
    failed = seen.failed
    assert len(set(failed)) == len(failed)
    assert set(failed) <= set(ids)
    assert len(seen.sent) + len(seen.delivered) + len(failed) == len(batch), (
        f"{len(batch)} records, {len(seen.sent)} copies taken, {len(seen.delivered)} "
        f"deliveries taken, {len(failed)} failures"
    )
    bodies = Counter(record.body for record in batch)
    for record in batch:
        if record.message_id in failed and bodies[record.body] == 1:
            assert record.body not in {sent.body for sent in seen.sent}, "a failure sent"
    handles = {record.receipt_handle: record.message_id for record in batch}
    assert {handles.get(handle) for handle in seen.held} <= set(failed)


@pytest.mark.parametrize("mode", MODES)
@PROFILE
@given(batch=batches.batches(batches.hostile_bodies | batches.unwritable_bodies))
@example(batch=[GOOD, DEEP_DESTINATION, LOOKS_LAMBDA])
def test_every_record_gets_exactly_one_outcome(
    world: World, mode: str, batch: list[Record]
) -> None:
    """And only the allowed targets are reached. Today a body nested past the recursion limit
    raises from recognition, in every mode, and fails the whole batch."""
    seen = run(world, mode, batch)
    one_outcome_each(batch, seen)
    only_allowed_targets(world, mode, seen)


@pytest.mark.parametrize("mode", MODES)
@PROFILE
@given(batch=batches.batches(batches.ordinary_bodies | batches.unwritable_bodies))
def test_ordinary_batches_get_one_outcome_each_and_reach_only_the_allowed_targets(
    world: World, mode: str, batch: list[Record]
) -> None:
    """Without bodies nested past the parsers' depth (which today's engine fails): one outcome
    each, and every delivery attempted (taken or not) addresses REPLAY_TARGET_ARNS or the
    stack's own queues, whatever ARN a record names."""
    seen = run(world, mode, batch)
    one_outcome_each(batch, seen)
    only_allowed_targets(world, mode, seen)


def only_allowed_targets(world: World, mode: str, seen: Observed) -> None:
    attempted = [call for call in seen.calls if (call.service, call.operation) in DELIVERIES]
    for call in attempted:
        for target in _delivered_to(call):
            assert _allowed(world, mode, target), (call.service, call.operation, target)


@pytest.mark.parametrize("mode", ["sqs", "any"])
@PROFILE
@given(batch=batches.batches(batches.ordinary_bodies | batches.unwritable_bodies))
def test_fifo_batches_get_one_outcome_each_and_a_failure_stops_its_group(
    world: World, mode: str, batch: list[Record]
) -> None:
    """From a FIFO DLQ (docs/design.md, FIFO queues): one outcome each, and once a record of a
    group fails, every later record of that group in the batch fails too (nothing is sent)."""
    seen = run(world, mode, batch, fifo=True)
    one_outcome_each(batch, seen)
    only_allowed_targets(world, mode, seen)
    failed = set(seen.failed)
    groups: dict[str | None, list[bool]] = {}
    for record in batch:
        groups.setdefault(record.group_id, []).append(record.message_id in failed)
    for group, fails in groups.items():
        if group is not None and True in fails:
            assert all(fails[fails.index(True) :]), (group, fails)


def _params_of(value: Value) -> dict[str, Any]:
    if value.data is not None:
        return {"DataType": value.data_type, "BinaryValue": {"bytes": value.data.hex()}}
    return {"DataType": value.data_type, "StringValue": value.text}


_REPLAY_NAMES = frozenset({COUNT, NOT_BEFORE, PARK_REASON, "dlq-replay-origin"})


def _kept(attributes: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in attributes.items() if name not in _REPLAY_NAMES}


def replayed_as_sqs(world: World, batch: list[Record], seen: Observed) -> None:
    """docs/design.md's one-record rules only: replayed to the main queue, written back to
    wait, parked for one of their reasons, or failed; every attribute kept; no other service
    called."""
    one_outcome_each(batch, seen)
    assert {call.service for call in seen.calls} <= {"sqs"}, [
        (call.service, call.operation) for call in seen.calls if call.service != "sqs"
    ]
    failed = set(seen.failed)
    per_body = Counter(record.body for record in batch if record.message_id not in failed)
    assert Counter(sent.body for sent in seen.sent) == per_body
    for sent in seen.sent:
        assert sent.queue_url in {world.main_url, world.dlq_url, world.operator_url}, sent
        if sent.queue_url == world.dlq_url:
            assert NOT_BEFORE in sent.attributes, sent
        if sent.queue_url == world.operator_url and PARK_REASON in sent.attributes:
            assert sent.attributes[PARK_REASON]["StringValue"] in SQS_PARK_REASONS, sent
        if sent.queue_url == world.main_url:
            assert NOT_BEFORE not in sent.attributes, sent
        assert _kept(sent.attributes) in _originals(batch, sent), sent


def _originals(batch: list[Record], sent: Sent) -> list[dict[str, Any]]:
    return [
        _kept({name: _params_of(value) for name, value in record.attributes})
        for record in batch
        if record.body == sent.body
    ]


@PROFILE
@given(
    batch=batches.batches(
        batches.ordinary_bodies.filter(lambda body: "requestContext" not in body),
        batches.attributes(st.one_of(batches.random_names, st.sampled_from(batches.OWN_NAMES[:2]))),
    )
)
def test_sqs_mode_replays_plain_records_as_sections_3_and_4(
    world: World, batch: list[Record]
) -> None:
    """Records that look like no kind: what today's engine already does right."""
    replayed_as_sqs(world, batch, run(world, "sqs", batch))


@PROFILE
@given(batch=batches.batches(batches.hostile_bodies | batches.unwritable_bodies))
@example(batch=[GOOD, LOOKS_LAMBDA, LOOKS_EVENTBRIDGE, LOOKS_DESTINATION])
def test_sqs_mode_recognises_nothing(world: World, batch: list[Record]) -> None:
    """Whatever the attributes (the services' names, our own kind markers) or the body (a
    destination record, nested past any depth): replayed as §3-4 say, never a kind's
    reason, never a call to a target. Today look-alikes are parked `unexpected-kind`."""
    replayed_as_sqs(world, batch, run(world, "sqs", batch))


@pytest.mark.parametrize("mode", ["lambda", "eventbridge"])
@PROFILE
@given(
    batch=batches.batches(
        batches.plain_bodies.filter(lambda body: "requestContext" not in body),
        batches.attributes(batches.random_names).filter(lambda found: len(found) <= 8),
    )
)
@example(batch=[PLAIN])
def test_a_plain_record_is_parked_unexpected_kind(
    world: World, mode: str, batch: list[Record]
) -> None:
    """In `lambda` / `eventbridge` mode a plain SQS record is parked `unexpected-kind`, whatever
    MAIN_QUEUE_URL says. Today it is replayed to the main queue."""
    seen = run(world, mode, batch)
    one_outcome_each(batch, seen)
    assert not seen.failed
    assert [sent.queue_url for sent in seen.sent] == [world.operator_url] * len(batch)
    assert {sent.attributes[PARK_REASON]["StringValue"] for sent in seen.sent} == {
        "unexpected-kind"
    }
    assert not seen.delivered


def _delivered_to(call: Call) -> list[str]:
    """The ARNs (or queue URLs) one delivery call addressed."""
    params = call.params
    if call.service == "lambda":
        name, qualifier = params["FunctionName"], params.get("Qualifier")
        return [f"{name}:{qualifier}" if qualifier else name]
    if call.service == "sns":
        return [str(params.get("TopicArn") or params.get("TargetArn"))]
    if call.service == "sfn":
        return [params["stateMachineArn"]]
    if call.service == "eventbridge":
        return [entry.get("EventBusName", "default") for entry in params["Entries"]]
    return [params["QueueUrl"]]


def _allowed(world: World, mode: str, target: str) -> bool:
    """Whether REPLAY_TARGET_ARNS (none in `sqs` mode) lists it, or it is one of the stack's
    own queues."""
    allowed = set(world.own_queue_urls)
    if mode != "sqs":
        allowed |= {*world.allowed_targets, world.target_queue_url}
    if target in allowed or (target == "default" and mode != "sqs"):
        return True
    function, _, qualifier = target.rpartition(":")
    return mode != "sqs" and bool(qualifier) and function == world.function_arn
