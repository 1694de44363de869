"""Recognising each serverless kind, the target rules, and the decision for such a record."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path

import pytest
from dlq_replay import targets
from dlq_replay.core.attributes import (
    NOT_BEFORE_ATTRIBUTE,
    PARK_ERROR_ATTRIBUTE,
    PARK_REASON_ATTRIBUTE,
    Attribute,
)
from dlq_replay.core.backoff import BackoffPolicy
from dlq_replay.core.decision import Action, Decision, ParkReason
from dlq_replay.core.kinds import KIND_ATTRIBUTE, TARGET_ATTRIBUTE, RecordKind, accepted_kinds
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.queues import TargetService, target_allowed, target_service
from dlq_replay.core.settings import Settings, SettingsError
from dlq_replay.engine.decide import RecordCase
from dlq_replay.engine.kinds import kind_of, recognise
from dlq_replay.targets.delivery import RefusalCode

from ._support import ACCOUNT, COUNT, DLQ, DLQ_ARN, NOW, OPERATOR, FixedRandom

FUNCTION = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:orders"
OTHER_FUNCTION = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:billing"
TARGET_QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-target"
RULE = f"arn:aws:events:us-east-1:{ACCOUNT}:rule/orders"
KINESIS = f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/orders"
EVENT = '{"version":"0","id":"e-1","detail-type":"Order","source":"shop","detail":{"n":1}}'


def string(value: str) -> Attribute:
    return Attribute("String", value)


def record(body: str = EVENT, /, **values: Attribute) -> InboundMessage:
    return InboundMessage(
        message_id="m-1", receipt_handle="r-1", body=body, attributes=values, queue_arn=DLQ_ARN
    )


def eventbridge(target: str = TARGET_QUEUE, /, **extra: Attribute) -> InboundMessage:
    return record(
        RULE_ARN=string(RULE),
        TARGET_ARN=string(target),
        ERROR_CODE=string("SQS.AccessDenied"),
        ERROR_MESSAGE=string("denied"),
        **extra,
    )


def lambda_dlq(**extra: Attribute) -> InboundMessage:
    return record(
        '{"order": 1}',
        RequestID=string("req-1"),
        ErrorCode=Attribute("Number", "200"),
        ErrorMessage=string("boom"),
        **extra,
    )


def destination(function: str = f"{FUNCTION}:$LATEST") -> InboundMessage:
    body = {
        "version": "1.0",
        "timestamp": "2026-11-27T10:00:00.000Z",
        "requestContext": {
            "requestId": "req-2",
            "functionArn": function,
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
        },
        "requestPayload": {"order": 2, "name": "café"},
        "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
        "responsePayload": {"errorMessage": "no stock", "errorType": "StockError"},
    }
    return record(json.dumps(body))


def settings(kind: str = "any", targets: frozenset[str] = frozenset()) -> Settings:
    return Settings(
        operator_queue_url=OPERATOR,
        backoff=BackoffPolicy(base_seconds=60, multiplier=2, cap_seconds=3600),
        dlq_kind=kind,
        replay_target_arns=targets or frozenset({FUNCTION, TARGET_QUEUE}),
    )


def decide(
    message: InboundMessage, s: Settings, rng: int = 30, ledger: int | None = None
) -> Decision:
    return RecordCase(
        message,
        s,
        dlq_url=DLQ,
        now=NOW,
        rng=FixedRandom(rng),
        recognised=recognise(message, s.replay_target_arns, s.accepted_kinds),
        ledger_count=ledger,
    ).decide()


def test_each_kind_is_recognised_with_what_its_delivery_needs() -> None:
    targets = frozenset({FUNCTION})
    bridge = recognise(eventbridge(), targets)
    assert (bridge.kind, bridge.target_arn, bridge.rule_arn) == (
        RecordKind.EVENTBRIDGE,
        TARGET_QUEUE,
        RULE,
    )
    assert (bridge.payload, bridge.error_code) == (EVENT, "SQS.AccessDenied")
    function = recognise(lambda_dlq(), targets)
    assert (function.kind, function.target_arn, function.request_id) == (
        RecordKind.LAMBDA,
        FUNCTION,
        "req-1",
    )
    assert function.payload == '{"order": 1}'  # the body, unchanged
    dest = recognise(destination(), targets)
    assert (dest.kind, dest.target_arn, dest.request_id) == (
        RecordKind.LAMBDA_DESTINATION,
        f"{FUNCTION}:$LATEST",
        "req-2",
    )
    assert json.loads(dest.payload) == {"order": 2, "name": "café"}
    assert (dest.error_code, dest.error_message) == ("StockError", "no stock")
    plain = recognise(record('{"requestContext": 1}'), targets)
    assert plain.kind is RecordKind.SQS


def test_a_lambda_record_needs_exactly_one_function_to_go_to() -> None:
    assert recognise(lambda_dlq(), frozenset({FUNCTION, OTHER_FUNCTION})).target_arn is None
    assert recognise(lambda_dlq(), frozenset({TARGET_QUEUE})).target_arn is None


@pytest.mark.parametrize(
    ("arn", "service"),
    [
        (FUNCTION, TargetService.LAMBDA),
        (f"{FUNCTION}:live", TargetService.LAMBDA),
        (TARGET_QUEUE, TargetService.SQS),
        (f"arn:aws:sns:us-east-1:{ACCOUNT}:topic.fifo", TargetService.SNS),
        (f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:flow", TargetService.STATES),
        (f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/default", TargetService.EVENTS),
        (RULE, TargetService.OTHER),
        (KINESIS, TargetService.OTHER),
        ("not an arn", TargetService.OTHER),
    ],
)
def test_target_service_by_arn(arn: str, service: TargetService) -> None:
    assert target_service(arn) is service


def test_an_unqualified_function_allows_its_versions_and_aliases_only() -> None:
    allowed = frozenset({FUNCTION})
    assert target_allowed(f"{FUNCTION}:$LATEST", allowed)
    assert target_allowed(f"{FUNCTION}:7", allowed)
    assert not target_allowed(f"{FUNCTION}x", allowed)
    assert not target_allowed(FUNCTION, frozenset({f"{FUNCTION}:live"}))


def test_dlq_kind_and_targets_are_checked_as_settings() -> None:
    assert accepted_kinds("lambda") == {RecordKind.LAMBDA, RecordKind.LAMBDA_DESTINATION}
    env = {"OPERATOR_QUEUE_URL": OPERATOR, "DLQ_KIND": "kinesis"}
    with pytest.raises(SettingsError, match="DLQ_KIND"):
        Settings.from_env(env)
    with pytest.raises(SettingsError, match="REPLAY_TARGET_ARNS"):
        Settings.from_env({"OPERATOR_QUEUE_URL": OPERATOR, "REPLAY_TARGET_ARNS": KINESIS})


def test_kinds_outside_dlq_kind_and_forged_targets_are_parked_with_their_reason() -> None:
    assert decide(eventbridge(), settings("lambda")).reason is ParkReason.UNEXPECTED_KIND
    assert decide(eventbridge(OTHER_FUNCTION), settings()).reason is ParkReason.TARGET_NOT_ALLOWED
    assert decide(eventbridge(KINESIS), settings()).reason is ParkReason.UNSUPPORTED_TARGET
    both = settings(targets=frozenset({FUNCTION, OTHER_FUNCTION}))
    assert decide(lambda_dlq(), both).reason is ParkReason.UNKNOWN_TARGET


def test_every_delay_is_a_wait_in_the_dlq() -> None:
    decision = decide(eventbridge(), settings())
    assert (decision.action, decision.destination, decision.attempt) == (Action.DEFER, DLQ, 1)
    assert decision.not_before == int(NOW) + 30  # the drawn delay
    recognised = recognise(eventbridge(), frozenset())
    copy = kind_of(recognised.kind).copy(eventbridge(), recognised, decision, settings())
    assert copy.queue_url == DLQ
    assert copy.body == EVENT
    assert copy.attributes[KIND_ATTRIBUTE].string_value == "eventbridge"
    assert copy.attributes[TARGET_ATTRIBUTE].string_value == TARGET_QUEUE
    assert copy.attributes["RULE_ARN"].string_value == RULE  # the service's own stay
    assert copy.attributes[COUNT].string_value == "1"
    # A drawn delay of 0 is delivered at once, to the target.
    now = decide(eventbridge(), settings(), rng=0)
    assert (now.action, now.destination, now.attempt) == (Action.REPLAY, TARGET_QUEUE, 1)


def test_a_waiting_copy_is_held_until_due_then_delivered_with_its_count() -> None:
    due = {COUNT: Attribute("Number", "2"), NOT_BEFORE_ATTRIBUTE: Attribute("Number", "0")}
    released = decide(eventbridge(**due), settings())
    assert (released.action, released.destination, released.attempt) == (
        Action.RELEASE,
        TARGET_QUEUE,
        2,
    )
    later = {**due, NOT_BEFORE_ATTRIBUTE: Attribute("Number", str(int(NOW) + 100))}
    held = decide(eventbridge(**later), settings())
    assert (held.action, held.delay) == (Action.HOLD, 100)


def test_the_ledger_counts_a_returning_invocation_and_the_limit_parks_it_with_its_error() -> None:
    assert decide(lambda_dlq(), settings(), ledger=1).attempt == 2
    parked = decide(lambda_dlq(), settings(), ledger=3)
    assert (parked.action, parked.reason, parked.attempt) == (
        Action.PARK,
        ParkReason.MAX_ATTEMPTS,
        3,
    )
    recognised = recognise(lambda_dlq(), settings().replay_target_arns)
    copy = kind_of(recognised.kind).copy(lambda_dlq(), recognised, parked, settings())
    assert copy.queue_url == OPERATOR
    assert copy.attributes[PARK_REASON_ATTRIBUTE].string_value == "max-attempts"
    assert copy.attributes[PARK_ERROR_ATTRIBUTE].string_value == "200: boom"
    # Our own count on a copy wins over the ledger's.
    assert (
        decide(lambda_dlq(**{COUNT: Attribute("Number", "0")}), settings(), ledger=3).attempt == 1
    )


def test_a_refusal_waits_for_the_next_attempt_and_the_last_one_parks() -> None:
    s = settings()
    first = decide(eventbridge(), s, rng=0)
    case = RecordCase(eventbridge(), s, DLQ, NOW, FixedRandom(0))
    waiting = case.after_refusal(first, error="Throttled: slow down")
    assert (waiting.action, waiting.attempt, waiting.destination) == (Action.DEFER, 2, DLQ)
    last = replace(first, attempt=3)
    keyed = RecordCase(eventbridge(), s, DLQ, NOW, None)
    parked = keyed.after_refusal(last, error="Throttled: slow down")
    assert (parked.action, parked.reason, parked.attempt, parked.error) == (
        Action.PARK,
        ParkReason.MAX_ATTEMPTS,
        3,
        "Throttled: slow down",
    )


def test_the_target_marker_is_the_first_to_go_at_ten_attributes() -> None:
    full = eventbridge(
        EXHAUSTED_RETRY_CONDITION=string("MaximumRetryAttempts"),
        RETRY_ATTEMPTS=Attribute("Number", "185"),
        tenant=string("acme"),
    )
    s = settings()
    decision = decide(full, s)
    recognised = recognise(full, s.replay_target_arns)
    copy = kind_of(recognised.kind).copy(full, recognised, decision, s)
    assert len(copy.attributes) == 10
    assert KIND_ATTRIBUTE in copy.attributes
    assert TARGET_ATTRIBUTE not in copy.attributes


def test_refusal_codes_are_one_enum_that_targets_write_and_the_kinds_read() -> None:
    """Every refusal a kind parks at once is a `RefusalCode`, and targets/ writes no code of
    its own as a bare string (a service's own code is passed on as it came)."""
    for record_kind in RecordKind:
        assert all(isinstance(code, RefusalCode) for code in kind_of(record_kind).refusals)
    written = []
    for path in sorted(Path(targets.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Refused":
                code = node.args[1] if len(node.args) > 1 else None
                if isinstance(code, ast.Constant):
                    written.append(f"{path.name}:{node.lineno}: {code.value!r}")
    assert written == []
    assert kind_of(RecordKind.EVENTBRIDGE).refusals[RefusalCode.NOT_AN_EVENT] is (
        ParkReason.NOT_AN_EVENT
    )
