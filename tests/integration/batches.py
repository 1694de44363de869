"""Hypothesis strategies for Lambda's SQS events as a DLQ delivers them, written by anyone who
can send to it: the services' own attribute names and random ones, values of every data type
(junk numbers too), and bodies that are text, JSON, JSON shaped like each kind's record, nested
past any parser's depth, or holding lone surrogate escapes.

A batch is drawn as specs; `event(batch, now)` makes the event, so values that mean a time
(`dlq-replay-not-before`) are drawn relative to the clock of the invocation.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from unit._support import EVENTBRIDGE_DLQ_ATTRIBUTES

from integration.world import ACCOUNT, COUNT, KIND, NOT_BEFORE, REGION, TARGET

# What moto names the world's resources (integration.world.moto_world checks it).
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:props-fn"
TARGET_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:props-target"
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:props-topic"
STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:props-gone"
BUS_ARN = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"
RULE_ARN = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/props-rule"
DLQ_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:props-dlq"
MAIN_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:props-main"

# ARNs a record may name that REPLAY_TARGET_ARNS does not list, and text that is no ARN.
FORBIDDEN_TARGETS = (
    f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:someone-elses",
    f"arn:aws:lambda:{REGION}:210987654321:function:props-fn",
    f"arn:aws:sqs:{REGION}:{ACCOUNT}:props-main",
    f"arn:aws:sqs:{REGION}:{ACCOUNT}:props-operator",
    f"arn:aws:sns:{REGION}:{ACCOUNT}:other-topic",
    f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:other",
    f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/other",
    f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/orders",
    "arn:aws:lambda:::function:",
    "not an arn",
)
ALLOWED_TARGETS = (
    FUNCTION_ARN,
    f"{FUNCTION_ARN}:live",
    f"{FUNCTION_ARN}:$LATEST",
    TARGET_QUEUE_ARN,
    TOPIC_ARN,
    STATE_MACHINE_ARN,
    BUS_ARN,
)
LAMBDA_NAMES = frozenset({"RequestID", "ErrorCode", "ErrorMessage"})
EVENTBRIDGE_NAMES = EVENTBRIDGE_DLQ_ATTRIBUTES
# Lambda's three, then EventBridge's six, sorted (SERVICE_NAMES[3:] is EventBridge's).
SERVICE_NAMES = ("RequestID", "ErrorCode", "ErrorMessage", *sorted(EVENTBRIDGE_NAMES))
OWN_NAMES = (COUNT, NOT_BEFORE, KIND, TARGET)

DEEP = 20_000  # past CPython's recursion limit for json.loads


@dataclass(frozen=True, slots=True)
class Value:
    """A message attribute's value: text or bytes; `after_now` makes it a time (epoch seconds,
    this many after the invocation's clock)."""

    data_type: str
    text: str | None = None
    data: bytes | None = None
    after_now: int | None = None

    def to_lambda(self, now: float) -> dict[str, Any]:
        value: dict[str, Any] = {
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": self.data_type,
        }
        if self.data is not None:
            value["binaryValue"] = base64.b64encode(self.data).decode("ascii")
        elif self.after_now is not None:
            value["stringValue"] = str(int(now) + self.after_now)
        else:
            value["stringValue"] = self.text
        return value


@dataclass(frozen=True, slots=True)
class Record:
    message_id: str
    body: str
    attributes: tuple[tuple[str, Value], ...]
    group_id: str | None
    source_arn: str | None
    trace_header: str | None

    @property
    def names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.attributes)

    @property
    def receipt_handle(self) -> str:
        return f"rh-{self.message_id}"

    def looks_like_a_kind(self) -> bool:
        """Whether anything in it is what one of the kinds is recognised by (or our own kind
        marker): the records `lambda`/`eventbridge` mode may take as theirs."""
        names = self.names
        return bool(
            names & (LAMBDA_NAMES | EVENTBRIDGE_NAMES | {KIND, TARGET})
            or "requestContext" in self.body
        )

    def to_lambda(self, now: float, *, fifo: bool = False) -> dict[str, Any]:
        """The record as Lambda delivers it from props-dlq (props-dlq.fifo: with a sequence
        number and a deduplication id, and the group id when it has one)."""
        system = {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": str(int(now * 1000) - 5000),
            "SenderId": "AIDAEXAMPLEPROPERTIES",
            "ApproximateFirstReceiveTimestamp": str(int(now * 1000) - 4000),
        }
        if self.trace_header is not None:
            system["AWSTraceHeader"] = self.trace_header
        if self.group_id is not None:
            system["MessageGroupId"] = self.group_id
        if self.source_arn is not None:
            system["DeadLetterQueueSourceArn"] = self.source_arn
        if fifo:
            system["SequenceNumber"] = str(18_000_000_000_000_000_000 + int(now))
            system["MessageDeduplicationId"] = f"dedup-{self.message_id}"
        body_bytes = self.body.encode("utf-8", "surrogatepass")
        return {
            "messageId": self.message_id,
            "receiptHandle": self.receipt_handle,
            "body": self.body,
            "attributes": system,
            "messageAttributes": {name: value.to_lambda(now) for name, value in self.attributes},
            "md5OfBody": hashlib.md5(body_bytes).hexdigest(),
            "md5OfMessageAttributes": None,
            "eventSource": "aws:sqs",
            "eventSourceARN": f"{DLQ_ARN}.fifo" if fifo else DLQ_ARN,
            "awsRegion": REGION,
        }


def event(batch: list[Record], now: float, *, fifo: bool = False) -> dict[str, Any]:
    return {"Records": [record.to_lambda(now, fifo=fifo) for record in batch]}


# --- attribute values --------------------------------------------------------------------

_VALID_CHARS = st.characters(
    codec="utf-8", exclude_categories=["Cs", "Cc"], exclude_characters="\ufffe\uffff"
)
texts = st.text(alphabet=_VALID_CHARS, min_size=1, max_size=40)
good_numbers = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
    st.sampled_from(["0", "2", "3", "1e3", "-0.5", "00042", "1E+2"]),
)
junk_numbers = st.sampled_from(["abc", "1e400", "NaN", "Infinity", "-", "1.2.3", " 7", "0x10"])
suffixes = st.sampled_from(["", "", "", ".int", ".custom", ".gzip", ".x-y_z"])


@st.composite
def any_value(draw: st.DrawFn) -> Value:
    base = draw(st.sampled_from(["String", "Number", "Binary"]))
    data_type = base + draw(suffixes)
    if base == "Binary":
        return Value(data_type, data=draw(st.binary(min_size=1, max_size=24)))
    if base == "Number":
        return Value(data_type, text=draw(st.one_of(good_numbers, good_numbers, junk_numbers)))
    return Value(data_type, text=draw(texts))


def _string(values: st.SearchStrategy[str]) -> st.SearchStrategy[Value]:
    return values.map(lambda text: Value("String", text=text))


# Half of them allowed: enough records reach the delivery, enough are refused before it.
targets = st.one_of(
    st.sampled_from(ALLOWED_TARGETS), st.sampled_from(ALLOWED_TARGETS + FORBIDDEN_TARGETS)
)
request_ids = st.uuids().map(str)

# What each service (or our own copy) writes under its names; any value may still come instead.
_NAMED: dict[str, st.SearchStrategy[Value]] = {
    "RequestID": _string(request_ids),
    "ErrorCode": st.one_of(
        st.sampled_from(["200", "429", "500"]).map(lambda code: Value("Number", text=code)),
        _string(st.sampled_from(["200", "Unhandled"])),
    ),
    "ErrorMessage": _string(st.sampled_from(["Task timed out after 3.00 seconds", "boom"])),
    "RULE_ARN": _string(st.sampled_from([RULE_ARN, RULE_ARN, f"{RULE_ARN}-gone", "rule"])),
    "TARGET_ARN": _string(targets),
    "ERROR_CODE": _string(st.sampled_from(["THROTTLING", "SQS.AWS.SQS.NonExistentQueue"])),
    "ERROR_MESSAGE": _string(texts),
    "EXHAUSTED_RETRY_CONDITION": _string(
        st.sampled_from(["MaximumRetryAttempts", "MaximumEventAgeInSeconds"])
    ),
    "RETRY_ATTEMPTS": st.integers(0, 185).map(lambda n: Value("Number", text=str(n))),
    COUNT: st.one_of(
        st.integers(0, 6).map(lambda n: Value("Number", text=str(n))),
        st.sampled_from(["abc", "-1", "2.5", "1e9", "1000000000"]).map(
            lambda text: Value("Number", text=text)
        ),
        st.just(Value("Binary", data=b"\x02")),
    ),
    NOT_BEFORE: st.one_of(
        st.sampled_from([-7200, -1, 0, 30, 1000, 50_000]).map(
            lambda offset: Value("Number", after_now=offset)
        ),
        st.sampled_from(["abc", "1e400", "-5", "99999999999999"]).map(
            lambda text: Value("Number", text=text)
        ),
    ),
    KIND: _string(st.sampled_from(["sqs", "lambda", "lambda-destination", "eventbridge", "x"])),
    TARGET: _string(targets),
}

random_names = st.from_regex(r"[A-Za-z0-9_\-]{1,20}", fullmatch=True).filter(
    lambda name: not name.lower().startswith(("aws", "amazon", "dlq-replay-")) and name != COUNT
)
names = st.one_of(
    st.sampled_from(SERVICE_NAMES), st.sampled_from(OWN_NAMES), random_names, random_names
)


@st.composite
def attribute(draw: st.DrawFn, name: str) -> tuple[str, Value]:
    named = _NAMED.get(name)
    if named is not None and draw(st.integers(0, 3)) > 0:
        return name, draw(named)
    return name, draw(any_value())


@st.composite
def attributes(draw: st.DrawFn, names: st.SearchStrategy[str] = names) -> tuple[Any, ...]:
    chosen = draw(st.lists(names, max_size=10, unique=True))
    return tuple(draw(attribute(name)) for name in chosen)


@st.composite
def service_attributes(draw: st.DrawFn, names: tuple[str, ...]) -> tuple[Any, ...]:
    """A service's whole set of attributes (its values mostly as it writes them), and perhaps
    a few others: the records its recognition takes."""
    extra = draw(st.lists(st.one_of(random_names, st.sampled_from(OWN_NAMES)), max_size=3))
    chosen = list(dict.fromkeys([*names, *extra]))
    return tuple(draw(attribute(name)) for name in chosen)


# Any attributes: random sets, or Lambda's or EventBridge's whole set.
any_attributes = st.one_of(
    attributes(),
    attributes(),
    service_attributes(("RequestID", "ErrorCode", "ErrorMessage")),
    service_attributes(SERVICE_NAMES[3:]),
)


# --- bodies --------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def destination_record(draw: st.DrawFn) -> str:
    """An OnFailure invocation record (Lambda's destination), naming any function."""
    function = draw(st.sampled_from((*ALLOWED_TARGETS[:3], *FORBIDDEN_TARGETS[:2], "x")))
    payload = draw(
        st.one_of(
            json_values.map(json.dumps),
            st.sampled_from(['{"n": 1e400}', '{"a": 1, "a": 2}', "0.1000000000000000055511"]),
        )
    )
    return (
        '{"version":"1.0","timestamp":"2026-11-27T10:00:00.000Z","requestContext":'
        f'{{"requestId":"{draw(request_ids)}","functionArn":{json.dumps(function)},'
        '"condition":"RetriesExhausted","approximateInvokeCount":3},'
        f'"requestPayload":{payload},"responseContext":{{"statusCode":200,'
        '"executedVersion":"$LATEST","functionError":"Unhandled"},'
        '"responsePayload":{"errorType":"KeyError","errorMessage":"boom"}}'
    )


eventbridge_events = st.builds(
    lambda detail, source: json.dumps(
        {
            "version": "0",
            "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
            "detail-type": "OrderPlaced",
            "source": source,
            "account": ACCOUNT,
            "time": "2026-11-27T10:00:00Z",
            "region": REGION,
            "resources": [],
            "detail": detail,
        }
    ),
    json_values,
    st.sampled_from(["props", "shop.orders"]),
)

DESTINATION_HEAD = (
    '{"requestContext":{"requestId":"8c1b1d57-0000-4000-8000-000000000001",'
    f'"functionArn":"{FUNCTION_ARN}"}},"requestPayload":'
)
# Bodies nested past every parser's depth, alone or where recognition reads JSON.
deep_bodies = st.sampled_from(
    [
        "[" * DEEP,
        "[" * DEEP + "]" * DEEP,
        '{"a":' * DEEP + "1" + "}" * DEEP,
        DESTINATION_HEAD + "[" * DEEP + "]" * DEEP + "}",
        DESTINATION_HEAD + "[" * DEEP + "}",
    ]
)
# JSON text whose escapes decode to lone surrogates (the text itself is valid for SQS).
surrogate_escape_bodies = st.sampled_from(
    [
        '"\\ud800"',
        '{"k": "\\udfff tail"}',
        DESTINATION_HEAD + '"\\ud800"}',
        DESTINATION_HEAD + '{"\\udc00": 1}}',
    ]
)

plain_bodies = st.one_of(
    st.text(alphabet=_VALID_CHARS, max_size=60),
    json_values.map(json.dumps),
    json_values.map(lambda value: json.dumps(value, ensure_ascii=False)),
)
ordinary_bodies = st.one_of(
    plain_bodies, plain_bodies, destination_record(), eventbridge_events, surrogate_escape_bodies
)
hostile_bodies = st.one_of(ordinary_bodies, deep_bodies)
# Text no SQS message can hold (a lone surrogate itself): no copy of it can be written.
unwritable_bodies = st.just("lone \ud800 surrogate")


@st.composite
def records(
    draw: st.DrawFn,
    bodies: st.SearchStrategy[str] = hostile_bodies,
    attribute_sets: st.SearchStrategy[tuple[Any, ...]] | None = None,
) -> Record:
    return Record(
        message_id=str(draw(st.uuids())),
        body=draw(bodies),
        attributes=draw(attribute_sets if attribute_sets is not None else any_attributes),
        group_id=draw(st.none() | st.sampled_from(["tenant-a", "tenant-b"])),
        source_arn=draw(st.none() | st.sampled_from([MAIN_ARN, TARGET_QUEUE_ARN])),
        trace_header=draw(
            st.none() | st.just("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
        ),
    )


def batches(
    bodies: st.SearchStrategy[str] = hostile_bodies,
    attribute_sets: st.SearchStrategy[tuple[Any, ...]] | None = None,
) -> st.SearchStrategy[list[Record]]:
    return st.lists(
        records(bodies, attribute_sets),
        min_size=1,
        max_size=10,
        unique_by=lambda record: record.message_id,
    )


def plain(record: Record) -> bool:
    """An SQS record no kind's recognition can take (no kind's names, no destination body)."""
    return not record.looks_like_a_kind()


def writable(record: Record) -> bool:
    """Whether a copy of it can be written: no lone surrogate in its text."""
    texts = [record.body, *(value.text or "" for _, value in record.attributes)]
    return all(_encodable(text) for text in texts)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
