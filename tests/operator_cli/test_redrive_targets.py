"""`dlq-replay redrive --to source` on records a serverless service wrote: each delivered to the
target it names, by the replay's rules (only an ARN of --target-arn that the stack's
ReplayTargetArns allows too), the delivered ones
deleted, the others left in place and counted with why."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.core.queues import target_allowed
from dlq_replay.ops.receiving import drain, recognised
from dlq_replay.ops.redrive import SkipReason, both_allow, plan_delivery
from dlq_replay.targets.delivery import Delivery
from hypothesis import given
from hypothesis import strategies as st
from integration.harness import moto_function

from .records import EVENT, FUNCTION_ARN, destination_body, send_eventbridge, send_lambda
from .support import ACCOUNT, REGION, Queues, assert_one_line_error, depth, queue_arn, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

pytestmark = pytest.mark.emulator

FAST = ("--wait-seconds", "0")
FORGED = f"arn:aws:sqs:{REGION}:{ACCOUNT}:someone-elses-queue"


class Targets:
    """A rule target's DLQ (no queue's DLQ: the client-side move) and the target queue."""

    def __init__(self, sqs: SQSClient) -> None:
        self.dlq = sqs.create_queue(QueueName="rule-target-dlq")["QueueUrl"]
        self.queue = sqs.create_queue(QueueName="orders-target")["QueueUrl"]
        self.queue_arn = queue_arn(sqs, self.queue)


@pytest.fixture
def targets(sqs: SQSClient) -> Targets:
    return Targets(sqs)


@pytest.fixture(autouse=True)
def every_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """No stack: the environment's DLQ_KIND says how records are read (`any`: every kind)."""
    monkeypatch.setenv("DLQ_KIND", "any")


def redrive(
    capsys: pytest.CaptureFixture[str], queues: Queues, targets: Targets, *extra: str
) -> Any:
    return run_cli(
        capsys,
        "redrive",
        *queues.options(),
        *FAST,
        "--from",
        targets.dlq,
        "--to",
        "source",
        *extra,
    )


def test_eventbridge_records_are_delivered_to_their_target_and_a_forged_one_stays(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, targets: Targets
) -> None:
    bodies = [json.dumps({**EVENT, "detail": {"order": n}}) for n in range(3)]
    for body in bodies:
        send_eventbridge(sqs, targets.dlq, targets.queue_arn, body)
    forged = send_eventbridge(sqs, targets.dlq, FORGED)
    send_lambda(sqs, targets.dlq)  # its function is not among the targets

    result = redrive(capsys, queues, targets, "--target-arn", targets.queue_arn, "--json")

    assert result.code == 0, result
    tally = result.json()
    assert (tally["seen"], tally["moved"], tally["skipped"], tally["failed"]) == (5, 3, 2, 0)
    assert tally["delivered"] == {targets.queue_arn: 3}
    assert tally["skips"] == {"target-not-allowed": 1, "unknown-target": 1}
    assert tally["adds_up"] is True
    # The target received each event byte for byte, as EventBridge would have sent it.
    delivered = drain(sqs, targets.queue)
    assert sorted(m["Body"] for m in delivered) == sorted(bodies)
    # The delivered records left the DLQ; the forged one and the lambda one stay, visible.
    left = drain(sqs, targets.dlq)
    assert forged in {m["MessageId"] for m in left}
    assert len(left) == 2


def test_without_target_arn_serverless_records_stay_with_a_one_line_reason(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, targets: Targets
) -> None:
    send_eventbridge(sqs, targets.dlq, targets.queue_arn)
    send_eventbridge(sqs, targets.dlq, targets.queue_arn)

    result = redrive(capsys, queues, targets, "--json")

    assert result.code == 1, result  # nothing could be moved
    tally = result.json()
    assert tally["skips"] == {"target-arn-required": 2}
    assert tally["moved"] == 0
    reason = [line for line in result.err.splitlines() if "--target-arn" in line]
    assert reason == [
        "dlq-replay: 2 records of serverless kinds (Lambda, EventBridge) left in place: --to "
        "source delivers them to their targets only with --target-arn ARN"
    ]
    assert depth(sqs, targets.dlq) == (2, 0)
    assert depth(sqs, targets.queue) == (0, 0)


def test_dry_run_says_what_would_be_delivered_where_and_calls_no_target(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, targets: Targets
) -> None:
    send_eventbridge(sqs, targets.dlq, targets.queue_arn)
    send_eventbridge(sqs, targets.dlq, FORGED)

    result = redrive(capsys, queues, targets, "--target-arn", targets.queue_arn, "--dry-run")

    assert result.code == 0, result
    text = " ".join(result.out.split())
    assert f"would deliver to {targets.queue_arn} │ 1" in text
    assert "target-not-allowed │ 1" in text
    assert "dry run: no target was called" in result.out
    assert depth(sqs, targets.queue) == (0, 0)
    assert depth(sqs, targets.dlq) == (2, 0)


def test_a_target_that_refuses_leaves_the_record_counted_with_its_error(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, targets: Targets
) -> None:
    missing = f"arn:aws:sqs:{REGION}:{ACCOUNT}:deleted-target"
    send_eventbridge(sqs, targets.dlq, missing)
    send_eventbridge(sqs, targets.dlq, targets.queue_arn)

    result = redrive(
        capsys, queues, targets, "--target-arn", f"{missing},{targets.queue_arn}", "--json"
    )

    assert result.code == 1, result  # a failure: rerun to retry it
    tally = result.json()
    assert (tally["moved"], tally["failed"]) == (1, 1)
    ((code, count),) = tally["failures"].items()
    assert count == 1
    assert "NonExistentQueue" in code
    assert tally["errors"][code]
    assert tally["adds_up"] is True
    assert depth(sqs, targets.dlq) == (1, 0)
    assert depth(sqs, targets.queue) == (1, 0)


def test_target_arn_is_only_for_to_source_and_checked_by_the_parser(
    capsys: pytest.CaptureFixture[str], queues: Queues, targets: Targets
) -> None:
    to_main = run_cli(
        capsys, "redrive", *queues.options(), "--target-arn", targets.queue_arn, "--to", "main"
    )
    not_an_arn = redrive(capsys, queues, targets, "--target-arn", "orders-target")

    assert_one_line_error(to_main, 2, "--target-arn", "only with --to source")
    assert_one_line_error(not_an_arn, 2, "argument --target-arn: 'orders-target'")


def test_a_fifo_target_gets_its_rules_group_and_a_deduplication_id_per_record(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, targets: Targets
) -> None:
    fifo = sqs.create_queue(QueueName="orders-target.fifo", Attributes={"FifoQueue": "true"})
    fifo_arn = queue_arn(sqs, fifo["QueueUrl"])
    # The rule the records name (RULE_ARN, on the default bus) configures the group id.
    events = boto3.client("events", region_name=REGION)
    events.put_rule(Name="orders-rule", EventPattern='{"source": ["shop.orders"]}')
    events.put_targets(
        Rule="orders-rule",
        Targets=[{"Id": "fifo", "Arn": fifo_arn, "SqsParameters": {"MessageGroupId": "orders"}}],
    )
    ids = [send_eventbridge(sqs, targets.dlq, fifo_arn) for _ in range(3)]

    result = redrive(capsys, queues, targets, "--target-arn", fifo_arn, "--json")

    assert result.code == 0, result
    assert result.json()["delivered"] == {fifo_arn: 3}
    delivered = drain(sqs, fifo["QueueUrl"])
    assert {m["Attributes"]["MessageGroupId"] for m in delivered} == {"orders"}
    assert sorted(m["Attributes"]["MessageDeduplicationId"] for m in delivered) == sorted(
        f"{message_id}-redrive" for message_id in ids
    )
    assert depth(sqs, targets.dlq) == (0, 0)


def test_a_lambda_record_goes_back_to_its_function_with_the_payload_the_replay_delivers() -> None:
    """What `plan_copy` makes of Lambda's records for `--to source`: a destination record's
    request payload to its function (a `$LATEST` of a function listed unqualified), a
    function's own DLQ record's body to the one function listed."""
    targets = frozenset({FUNCTION_ARN})
    destination: MessageTypeDef = {"MessageId": "d-1", "Body": destination_body()}
    own: MessageTypeDef = {
        "MessageId": "l-1",
        "Body": '{"order": 2}',
        "MessageAttributes": {
            "RequestID": {"DataType": "String", "StringValue": "r-1"},
            "ErrorCode": {"DataType": "Number", "StringValue": "200"},
        },
    }

    assert plan_delivery(destination, recognised(destination, targets), targets) == Delivery(
        record_id="d-1",
        target_arn=f"{FUNCTION_ARN}:$LATEST",
        payload='{"order": 3}',  # the record's own text of it, as the replay delivers it
        dedup_id="d-1-redrive",
    )
    assert plan_delivery(own, recognised(own, targets), targets) == Delivery(
        record_id="l-1", target_arn=FUNCTION_ARN, payload='{"order": 2}', dedup_id="l-1-redrive"
    )
    # Another function, or none to name: left in place, with the replay's reasons.
    other = frozenset({f"{FUNCTION_ARN}-v2"})
    assert plan_delivery(destination, recognised(destination, other), other) == (
        SkipReason.TARGET_NOT_ALLOWED
    )
    assert plan_delivery(own, recognised(own, frozenset()), frozenset()) == SkipReason.NO_TARGETS
    queue_only = frozenset({FORGED})
    assert plan_delivery(own, recognised(own, queue_only), queue_only) == (
        SkipReason.UNKNOWN_TARGET
    )


def make_replay_function(name: str, replay_targets: str) -> None:
    """The stack's replay function, as far as the redrive reads it: its REPLAY_TARGET_ARNS."""
    moto_function(name, {"REPLAY_TARGET_ARNS": replay_targets})


@pytest.mark.moto_only(
    reason="the function's REPLAY_TARGET_ARNS: Lambda, not in the LocalStack step"
)
def test_only_targets_the_stack_allows_too_are_called_and_one_line_names_the_rest(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, targets: Targets
) -> None:
    other = sqs.create_queue(QueueName="audit-target")["QueueUrl"]
    other_arn = queue_arn(sqs, other)
    send_eventbridge(sqs, targets.dlq, targets.queue_arn)
    send_eventbridge(sqs, targets.dlq, other_arn)
    make_replay_function("replay", targets.queue_arn)  # the stack allows the first only

    result = redrive(
        capsys,
        queues,
        targets,
        *("--function-name", "replay"),
        *("--target-arn", f"{targets.queue_arn},{other_arn}"),
        "--json",
    )

    assert result.code == 0, result
    tally = result.json()
    assert tally["delivered"] == {targets.queue_arn: 1}
    assert tally["skips"] == {"target-not-allowed": 1}
    assert depth(sqs, other) == (0, 0)  # never called
    assert depth(sqs, targets.dlq) == (1, 0)
    assert [line for line in result.err.splitlines() if "ReplayTargetArns" in line] == [
        f"dlq-replay: --target-arn: the stack's ReplayTargetArns does not allow {other_arn}: "
        "its records stay where they are"
    ]


def test_a_stack_that_allows_none_delivers_nothing(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sqs: SQSClient,
    queues: Queues,
    targets: Targets,
) -> None:
    """No stack named: the environment's REPLAY_TARGET_ARNS is the replay's list."""
    monkeypatch.setenv("REPLAY_TARGET_ARNS", "")
    send_eventbridge(sqs, targets.dlq, targets.queue_arn)

    result = redrive(capsys, queues, targets, "--target-arn", targets.queue_arn, "--json")

    assert result.code == 1, result  # nothing could be moved
    assert result.json()["skips"] == {"target-not-allowed": 1}
    assert depth(sqs, targets.queue) == (0, 0)
    assert f"does not allow {targets.queue_arn}: its records stay" in result.err


def test_no_list_of_the_stack_leaves_the_operators_and_says_so(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sqs: SQSClient,
    queues: Queues,
    targets: Targets,
) -> None:
    monkeypatch.delenv("REPLAY_TARGET_ARNS", raising=False)
    send_eventbridge(sqs, targets.dlq, targets.queue_arn)

    result = redrive(capsys, queues, targets, "--target-arn", targets.queue_arn, "--json")

    assert result.code == 0, result
    assert result.json()["delivered"] == {targets.queue_arn: 1}
    assert "the stack's ReplayTargetArns is unknown" in result.err


def test_a_function_record_needs_both_lists_to_allow_its_version() -> None:
    """An unqualified function ARN allows its versions and aliases in either list."""
    latest = f"{FUNCTION_ARN}:$LATEST"  # the version the record names
    destination: MessageTypeDef = {"MessageId": "d-1", "Body": destination_body()}
    operator = frozenset({FUNCTION_ARN})

    def planned(stack: frozenset[str] | None) -> Delivery | SkipReason:
        return plan_delivery(destination, recognised(destination, operator), operator, stack)

    assert isinstance(planned(frozenset({latest})), Delivery)
    assert isinstance(planned(frozenset({FUNCTION_ARN})), Delivery)
    assert isinstance(planned(None), Delivery)
    assert planned(frozenset({f"{FUNCTION_ARN}:canary"})) == SkipReason.TARGET_NOT_ALLOWED
    assert planned(frozenset()) == SkipReason.TARGET_NOT_ALLOWED


FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:"
ARNS = st.builds(
    lambda name, qualifier: FUNCTION + name + qualifier,
    st.sampled_from(["a", "b"]),
    st.sampled_from(["", ":1", ":live"]),
) | st.sampled_from([f"arn:aws:sqs:{REGION}:{ACCOUNT}:q1", f"arn:aws:sqs:{REGION}:{ACCOUNT}:q2"])


@given(st.frozensets(ARNS), st.frozensets(ARNS), ARNS)
def test_both_allow_allows_exactly_what_each_list_allows(
    listed: frozenset[str], allowed: frozenset[str], target: str
) -> None:
    both = both_allow(listed, allowed)

    assert target_allowed(target, both) == (
        target_allowed(target, listed) and target_allowed(target, allowed)
    )
