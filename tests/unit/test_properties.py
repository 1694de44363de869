"""Property-based: any well-formed record, whatever its attributes, count and body, and any
settings, gets an outcome and never an exception; the copy carries every attribute byte for
byte. SQS answers at botocore's HTTP boundary (the production client serialises and
validates every request), accepting every entry."""

from __future__ import annotations

import base64
import json
import logging
import random
from dataclasses import replace
from io import BytesIO
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from dlq_replay.aws_lambda.replay import LambdaReplay
from dlq_replay.core.attributes import INTERNAL_ATTRIBUTE_PREFIX
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE, Settings
from dlq_replay.engine.replayer import Replayer
from dlq_replay.sqs.client import sqs_client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from urllib3 import HTTPResponse

MAIN = "https://sqs.us-east-1.amazonaws.com/123456789012/main"
OPERATOR = "https://sqs.us-east-1.amazonaws.com/123456789012/operator"
DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:dlq"
COUNT = DEFAULT_COUNT_ATTRIBUTE


class AcceptingEndpoint:
    """Records each SendMessageBatch request as botocore serialised it; accepts every entry."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: Any, **kwargs: Any) -> AWSResponse:
        del kwargs
        payload = json.loads(request.body)
        self.sent.extend((payload["QueueUrl"], entry) for entry in payload["Entries"])
        ok = [
            {"Id": e["Id"], "MessageId": e["Id"], "MD5OfMessageBody": ""}
            for e in payload["Entries"]
        ]
        body = json.dumps({"Successful": ok, "Failed": []}).encode()
        return AWSResponse(
            request.url, 200, HTTPHeaders(), HTTPResponse(BytesIO(body), preload_content=False)
        )


names = st.from_regex(r"[A-Za-z0-9_\-]{1,24}", fullmatch=True).filter(
    lambda n: not n.startswith(INTERNAL_ATTRIBUTE_PREFIX) and n != COUNT
)
suffixes = st.one_of(st.just(""), st.from_regex(r"\.[A-Za-z0-9_\-]{1,12}", fullmatch=True))
texts = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    min_size=1,
    max_size=40,
)
attribute_values = st.one_of(
    st.builds(lambda v, s: {"dataType": "String" + s, "stringValue": v}, texts, suffixes),
    st.builds(
        lambda v, s: {"dataType": "Number" + s, "stringValue": str(v)},
        st.integers(-(10**12), 10**12),
        suffixes,
    ),
    st.builds(
        lambda v, s: {"dataType": "Binary" + s, "binaryValue": base64.b64encode(v).decode()},
        st.binary(min_size=1, max_size=64),
        suffixes,
    ),
)
counts = st.one_of(
    st.none(),
    st.integers(0, 6).map(str),
    st.sampled_from(["", "-1", "1.5", "abc", "99999999999"]),
)
bodies = st.one_of(
    texts,
    st.integers(0, 1_048_576).map(lambda n: "x" * n),
)


@st.composite
def records(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for index in range(draw(st.integers(1, 10))):
        attrs = draw(st.dictionaries(names, attribute_values, max_size=10))
        count = draw(counts)
        if count is not None:
            attrs[COUNT] = {"dataType": "Number", "stringValue": count}
        out.append(
            {
                "messageId": f"m-{index}",
                "receiptHandle": f"r-{index}",
                "body": f"{index}:{draw(bodies)}",
                "attributes": {"ApproximateReceiveCount": draw(st.sampled_from(["1", "", "x"]))},
                "messageAttributes": attrs,
                "eventSource": "aws:sqs",
                "eventSourceARN": DLQ_ARN,
                "awsRegion": "us-east-1",
            }
        )
    return out


def replay_with(endpoint: AcceptingEndpoint, max_attempts: int, jitter: Jitter) -> LambdaReplay:
    session = boto3.Session(
        aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
    )
    sqs = sqs_client(session=session)
    sqs.meta.events.register("before-send.sqs.SendMessageBatch", endpoint)  # type: ignore[arg-type]
    base = Settings(main_queue_url=MAIN, operator_queue_url=OPERATOR)
    chosen = replace(base, max_attempts=max_attempts, backoff=BackoffPolicy(jitter=jitter))
    quiet = logging.getLogger("properties")
    quiet.disabled = True
    return LambdaReplay(Replayer(chosen, sqs, logger=quiet, rng=random.Random(0)))


def sent_value(attribute: dict[str, Any]) -> tuple[str, bytes]:
    if "BinaryValue" in attribute:
        return attribute["DataType"], base64.b64decode(attribute["BinaryValue"])
    return attribute["DataType"], attribute["StringValue"].encode()


def record_value(attribute: dict[str, Any]) -> tuple[str, bytes]:
    if "binaryValue" in attribute:
        return attribute["dataType"], base64.b64decode(attribute["binaryValue"])
    return attribute["dataType"], attribute["stringValue"].encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), st.integers(1, 5), st.sampled_from(list(Jitter)))
def test_every_record_gets_one_copy_carrying_every_attribute(
    batch: list[dict[str, Any]], max_attempts: int, jitter: Jitter
) -> None:
    endpoint = AcceptingEndpoint()

    response = replay_with(endpoint, max_attempts, jitter)({"Records": batch})

    # SQS accepted every entry, and no record waits in its DLQ (delays stay within 900 s).
    assert response == {"batchItemFailures": []}
    by_body = {entry["MessageBody"]: (queue, entry) for queue, entry in endpoint.sent}
    assert len(endpoint.sent) == len(batch) == len(by_body)  # one copy each
    for record in batch:
        queue, entry = by_body[record["body"]]
        assert queue in (MAIN, OPERATOR)
        assert 0 <= entry.get("DelaySeconds", 0) <= 900
        sent = entry.get("MessageAttributes", {})
        for name, value in record["messageAttributes"].items():
            if name != COUNT:
                assert sent_value(sent[name]) == record_value(value), name
        if queue == MAIN:
            assert sent[COUNT]["DataType"] == "Number"
            assert 1 <= int(sent[COUNT]["StringValue"]) <= max_attempts


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
FIELDS = [
    "receiptHandle",
    "body",
    "attributes",
    "messageAttributes",
    "eventSource",
    "eventSourceARN",
    "awsRegion",
    "md5OfBody",
]


@settings(max_examples=100, deadline=None)
@given(records(), st.lists(st.tuples(st.sampled_from(FIELDS), json_values), max_size=6))
def test_a_records_own_defect_is_an_outcome_never_an_exception(
    batch: list[dict[str, Any]], defects: list[tuple[str, Any]]
) -> None:
    """Any field but the message id replaced by any JSON value: the batch is answered, and only
    records of the batch are reported failed."""
    for index, (field, value) in enumerate(defects):
        batch[index % len(batch)][field] = value

    response = replay_with(AcceptingEndpoint(), 3, Jitter.FULL)({"Records": batch})

    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    assert failed <= {record["messageId"] for record in batch}
