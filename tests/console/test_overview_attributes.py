"""A queue's attributes are written by whoever owns the queue: the overview reads any of them
without failing, keeps what is well formed exactly, and shows nothing it made up."""

from __future__ import annotations

import json
from typing import Any

from dlq_replay.cli.console.inventory import queue_of, redrive_policy
from dlq_replay.ops.queueinfo import DEFAULT_RETENTION_SECONDS
from hypothesis import given
from hypothesis import strategies as st

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
ARN = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
NAMES = (
    "QueueArn",
    "FifoQueue",
    "VisibilityTimeout",
    "RedrivePolicy",
    "MessageRetentionPeriod",
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
hostile_text = st.one_of(
    st.text(max_size=40),
    st.integers().map(str),
    st.sampled_from(["", "-1", "1e3", "٣", "²", "0x10", " 7", "99999999999999999999999"]),
    json_values.map(json.dumps),
)
hostile_values: st.SearchStrategy[Any] = st.one_of(hostile_text, json_values)
policies = st.fixed_dictionaries(
    {},
    optional={
        "deadLetterTargetArn": st.one_of(st.just(ARN), json_values),
        "maxReceiveCount": st.one_of(st.integers(-5, 10**6), json_values, hostile_text),
        "extra": json_values,
    },
).map(json.dumps)


@given(st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=10), hostile_values))
def test_any_attributes_give_a_queue_or_none_never_an_error(attributes: dict[str, Any]) -> None:
    queue = queue_of(URL, attributes)
    if queue is None:
        arn = attributes.get("QueueArn")
        assert not isinstance(arn, str) or not arn.rsplit(":", 1)[-1]
        return
    assert queue.info.arn == attributes["QueueArn"]
    assert queue.info.name == attributes["QueueArn"].rsplit(":", 1)[-1]
    for count in (queue.depth.visible, queue.depth.in_flight, queue.depth.delayed):
        assert count >= 0
    assert queue.info.visibility_timeout >= 0
    assert queue.info.retention_seconds >= 0
    if queue.info.redrive is not None:
        assert isinstance(queue.info.redrive.target_arn, str)
        assert queue.info.redrive.max_receive_count >= 0


@given(
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.integers(0, 43_200),
    st.booleans(),
    st.integers(1, 1000),
    st.booleans(),
)
def test_what_sqs_sends_is_read_exactly(
    visible: int,
    in_flight: int,
    delayed: int,
    timeout: int,
    fifo: bool,
    receives: int,
    count_as_text: bool,
) -> None:
    count = str(receives) if count_as_text else receives
    target = "arn:aws:sqs:us-east-1:123456789012:orders-operator"
    attributes = {
        "QueueArn": ARN,
        "FifoQueue": "true" if fifo else "false",
        "VisibilityTimeout": str(timeout),
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": target, "maxReceiveCount": count}),
        "ApproximateNumberOfMessages": str(visible),
        "ApproximateNumberOfMessagesNotVisible": str(in_flight),
        "ApproximateNumberOfMessagesDelayed": str(delayed),
    }
    queue = queue_of(URL, attributes)
    assert queue is not None
    assert (queue.depth.visible, queue.depth.in_flight, queue.depth.delayed) == (
        visible,
        in_flight,
        delayed,
    )
    assert queue.info.fifo is fifo
    assert queue.info.visibility_timeout == timeout
    assert queue.info.retention_seconds == DEFAULT_RETENTION_SECONDS
    assert queue.info.redrive is not None
    assert queue.info.redrive.target_name == "orders-operator"
    assert queue.info.redrive.max_receive_count == receives


@given(policies)
def test_a_redrive_policy_is_kept_only_when_well_formed(text: str) -> None:
    policy = json.loads(text)
    found = redrive_policy(text)
    target, count = policy.get("deadLetterTargetArn"), policy.get("maxReceiveCount")
    readable = (
        (isinstance(count, int) and not isinstance(count, bool) and count >= 0)
        or (isinstance(count, str) and count.isascii() and count.isdigit() and len(count) <= 18)
        or (isinstance(count, float) and count.is_integer() and count >= 0)
    )
    if isinstance(target, str) and target and readable:
        assert found is not None
        assert found.target_arn == target
        assert found.max_receive_count == int(count)
    else:
        assert found is None


def test_unreadable_policies_are_no_policy() -> None:
    for text in ("", "{", "[]", "null", '"x"', '{"deadLetterTargetArn": 1, "maxReceiveCount": 2}'):
        assert redrive_policy(text) is None
    assert redrive_policy(None) is None
    assert redrive_policy('{"deadLetterTargetArn": "a:b", "maxReceiveCount": true}') is None
