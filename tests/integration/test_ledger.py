"""The request-id ledger: on moto's DynamoDB, in a table made exactly as template.yaml makes
the outage breaker's (the ledger lives in it), beside the breaker's own items; on botocore's
Stubber where DynamoDB leaves keys or items unprocessed or refuses; and the worker's, in memory.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from dlq_replay.breaker.breaker_state import BreakerState, Phase
from dlq_replay.breaker.function import PARTITION, DynamoBreakerStore
from dlq_replay.breaker.rule import BreakerPolicy, Counts
from dlq_replay.core.settings import SettingsError
from dlq_replay.targets.ledger import (
    MAX_REQUESTS,
    RETENTION_SECONDS,
    DynamoLedger,
    Invocation,
    InvocationLedger,
    LedgerError,
    MemoryLedger,
    invocation_ledger,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from integration.harness import REGION, breaker_table

TABLE = "shop-breaker"
NOW = 1_800_000_000.0


@pytest.fixture
def dynamodb(aws: None) -> Any:
    client = boto3.client("dynamodb", region_name=REGION)
    breaker_table(client, TABLE)
    return client


class Calls:
    """The ledger client's requests by operation, with their sizes (a botocore event hook)."""

    def __init__(self, client: Any) -> None:
        self.sizes: dict[str, list[int]] = {}
        client.meta.events.register("provide-client-params.dynamodb.*", self._seen)

    def _seen(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if "RequestItems" in params:
            (request,) = params["RequestItems"].values()
            size = len(request["Keys"]) if model.name == "BatchGetItem" else len(request)
            self.sizes.setdefault(model.name, []).append(size)


def counts_of(ledger: InvocationLedger, request_ids: Sequence[str]) -> dict[str, int]:
    """The attempt each known request id stands for, as the replay reads it."""
    return {rid: found.count for rid, found in ledger.invocations(request_ids).items()}


def test_two_returns_of_a_request_id_read_back(dynamodb: Any) -> None:
    ledger: InvocationLedger = DynamoLedger(lambda: dynamodb, TABLE)
    # The first delivery (attempt 1) returns as r1; replayed as attempt 2 it returns as r2.
    ledger.record({"r1": 1}, now=NOW)
    assert counts_of(ledger, ["r1", "never-invoked"]) == {"r1": 1}
    ledger.record({"r2": 2}, now=NOW + 60)

    assert counts_of(ledger, ["r2"]) == {"r2": 2}
    assert counts_of(ledger, ["r1", "r2", "r1"]) == {"r1": 1, "r2": 2}  # read twice: the same
    item = dynamodb.get_item(
        TableName=TABLE, Key={"pk": {"S": "invocation#r2"}, "sk": {"S": "count"}}
    )["Item"]
    assert item["count"] == {"N": "2"}
    assert item["expires_at"] == {"N": str(math.ceil(NOW + 60 + 14 * 86_400))}
    # When each invocation was made: what the outage breaker counts its return against.
    assert ledger.invocations(["r1", "r2", "gone"]) == {
        "r1": Invocation(1, NOW),
        "r2": Invocation(2, NOW + 60),
    }


def test_an_unknown_id_is_absent_and_nothing_asked_makes_no_client(dynamodb: Any) -> None:
    made: list[Any] = []

    def make() -> Any:
        made.append(dynamodb)
        return dynamodb

    ledger = DynamoLedger(make, TABLE)

    assert counts_of(ledger, []) == {}
    ledger.record({}, now=NOW)
    assert made == []
    assert counts_of(ledger, ["unknown"]) == {}
    assert len(made) == 1


def test_250_ids_are_read_and_written_in_chunks(dynamodb: Any) -> None:
    calls = Calls(dynamodb)
    ledger = DynamoLedger(lambda: dynamodb, TABLE)
    counts = {f"request-{n:03d}": n % 7 + 1 for n in range(250)}

    ledger.record(counts, now=NOW)
    found = counts_of(ledger, [*counts, "unknown"])

    assert found == counts
    assert calls.sizes == {"BatchWriteItem": [25] * 10, "BatchGetItem": [100, 100, 51]}


def test_the_ledger_and_the_breaker_share_the_table_apart(dynamodb: Any) -> None:
    """The breaker's Query reads its partition only: ledger items, whatever the request id
    (`breaker` too), never reach its window or state, nor its items the ledger."""
    store = DynamoBreakerStore(lambda: dynamodb, TABLE)
    ledger = DynamoLedger(lambda: dynamodb, TABLE)
    state = BreakerState(phase=Phase.OPEN, since=NOW - 10, version=1)
    assert store.save(state, 0)
    store.record([(NOW - 5, Counts(replays=3, returns=2, sent=3))])
    ledger.record({PARTITION: 4, "x#state": 5, "w#000360000000": 6}, now=NOW)

    read_state, window = store.read(NOW, BreakerPolicy())

    assert read_state == state
    assert [counts for _, counts in window] == [Counts(replays=3, returns=2, sent=3)]
    assert counts_of(ledger, [PARTITION, "x#state", "w#000360000000", "count"]) == {
        PARTITION: 4,
        "x#state": 5,
        "w#000360000000": 6,
    }
    partitions = {
        item["pk"]["S"]
        for item in dynamodb.scan(TableName=TABLE, ProjectionExpression="pk")["Items"]
    }
    assert partitions == {
        PARTITION,
        "invocation#breaker",
        "invocation#x#state",
        "invocation#w#000360000000",
    }


def test_an_id_too_long_for_a_key_is_unknown_and_not_written(dynamodb: Any) -> None:
    """A forged record's id must not fail the request for every other id."""
    ledger = DynamoLedger(lambda: dynamodb, TABLE)
    long_id = "x" * 2048
    ledger.record({"r1": 1}, now=NOW)

    assert counts_of(ledger, ["r1", long_id]) == {"r1": 1}
    with pytest.raises(LedgerError) as raised:
        ledger.record({long_id: 2, "r2": 2}, now=NOW)
    assert raised.value.request_ids == (long_id,)
    assert counts_of(ledger, ["r2"]) == {"r2": 2}


# Botocore's Stubber: what moto never does (unprocessed keys and items, refusals).


@pytest.fixture
def stubbed() -> Iterator[tuple[DynamoLedger, Stubber, list[float]]]:
    client = boto3.client("dynamodb", region_name=REGION)
    slept: list[float] = []
    with Stubber(client) as stubber:
        yield DynamoLedger(lambda: client, TABLE, sleep=slept.append), stubber, slept
        stubber.assert_no_pending_responses()


def key(request_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"invocation#{request_id}"}, "sk": {"S": "count"}}


def get(request_ids: list[str]) -> dict[str, Any]:
    return {
        TABLE: {
            "Keys": [key(r) for r in request_ids],
            "ConsistentRead": True,
            "ProjectionExpression": "pk, #count, #at",
            "ExpressionAttributeNames": {"#count": "count", "#at": "invoked_at"},
        }
    }


def answer_get(
    stub: Stubber, asked: list[str], found: dict[str, int], left: Sequence[str] = ()
) -> None:
    """One BatchGetItem of `asked` answered with `found`, `left` unprocessed."""
    items = [{**key(r), "count": {"N": str(count)}} for r, count in found.items()]
    stub.add_response(
        "batch_get_item",
        {"Responses": {TABLE: items}, "UnprocessedKeys": get(list(left)) if left else {}},
        {"RequestItems": get(asked)},
    )


def put(request_id: str, count: int) -> dict[str, Any]:
    expires = str(math.ceil(NOW + RETENTION_SECONDS))
    item = {
        **key(request_id),
        "count": {"N": str(count)},
        "invoked_at": {"N": str(NOW)},
        "expires_at": {"N": expires},
    }
    return {"PutRequest": {"Item": item}}


def test_unprocessed_keys_are_asked_again(
    stubbed: tuple[DynamoLedger, Stubber, list[float]],
) -> None:
    ledger, stub, slept = stubbed
    answer_get(stub, ["a", "b"], {"a": 1}, ["b"])
    answer_get(stub, ["b"], {"b": 3})

    assert counts_of(ledger, ["b", "a"]) == {"a": 1, "b": 3}
    assert slept == [0.05]


def test_keys_still_unprocessed_after_the_last_request_are_an_error(
    stubbed: tuple[DynamoLedger, Stubber, list[float]],
) -> None:
    ledger, stub, slept = stubbed
    answer_get(stub, ["a", "b"], {"a": 1}, ["b"])
    for _ in range(MAX_REQUESTS - 1):
        answer_get(stub, ["b"], {}, ["b"])

    with pytest.raises(LedgerError) as raised:
        counts_of(ledger, ["a", "b"])

    assert raised.value.request_ids == ("b",)
    assert {rid: found.count for rid, found in raised.value.found.items()} == {"a": 1}
    assert slept == [0.05, 0.1, 0.2, 0.4]
    assert str(raised.value) == (
        "invocation ledger: 1 request ids not read: still unprocessed after 5 requests"
    )


def test_unprocessed_items_are_written_again(
    stubbed: tuple[DynamoLedger, Stubber, list[float]],
) -> None:
    ledger, stub, slept = stubbed
    stub.add_response(
        "batch_write_item",
        {"UnprocessedItems": {TABLE: [put("b", 2)]}},
        {"RequestItems": {TABLE: [put("a", 1), put("b", 2)]}},
    )
    stub.add_response(
        "batch_write_item", {"UnprocessedItems": {}}, {"RequestItems": {TABLE: [put("b", 2)]}}
    )

    ledger.record({"b": 2, "a": 1}, now=NOW)

    assert slept == [0.05]


def test_items_still_unprocessed_or_refused_are_an_error_naming_them(
    stubbed: tuple[DynamoLedger, Stubber, list[float]],
) -> None:
    ledger, stub, slept = stubbed
    counts = {f"r{n:02d}": 1 for n in range(30)}  # two chunks: 25 and 5
    puts = [put(r, 1) for r in sorted(counts)]
    stub.add_client_error(
        "batch_write_item",
        "AccessDeniedException",
        "not authorized to perform: dynamodb:BatchWriteItem",
        expected_params={"RequestItems": {TABLE: puts[:25]}},
    )
    for _ in range(MAX_REQUESTS):
        stub.add_response(
            "batch_write_item",
            {"UnprocessedItems": {TABLE: puts[25:]}},
            {"RequestItems": {TABLE: puts[25:]}},
        )

    with pytest.raises(LedgerError) as raised:
        ledger.record(counts, now=NOW)

    assert raised.value.request_ids == tuple(sorted(counts))
    assert "30 request ids not written" in str(raised.value)
    assert len(slept) == MAX_REQUESTS - 1


def test_a_refused_read_is_an_error_not_unknown_ids(
    stubbed: tuple[DynamoLedger, Stubber, list[float]],
) -> None:
    ledger, stub, _ = stubbed
    stub.add_client_error("batch_get_item", "ResourceNotFoundException", "no table")

    with pytest.raises(LedgerError, match="ResourceNotFoundException") as raised:
        counts_of(ledger, ["a"])

    assert raised.value.request_ids == ("a",)
    assert raised.value.found == {}


# From the function's environment.


def test_the_lambdas_ledger_is_the_named_table_or_none(dynamodb: Any) -> None:
    assert invocation_ledger({}) is None
    assert invocation_ledger({"INVOCATION_LEDGER_TABLE": "  "}) is None
    ledger = invocation_ledger(
        {"INVOCATION_LEDGER_TABLE": f" {TABLE} "}, session=boto3.Session(region_name=REGION)
    )

    assert isinstance(ledger, DynamoLedger)
    ledger.record({"r1": 1}, now=NOW)
    assert counts_of(DynamoLedger(lambda: dynamodb, TABLE), ["r1"]) == {"r1": 1}


def test_a_bad_table_name_is_one_line() -> None:
    with pytest.raises(SettingsError) as raised:
        invocation_ledger({"INVOCATION_LEDGER_TABLE": "a b"})

    assert str(raised.value) == (
        "INVOCATION_LEDGER_TABLE='a b' is invalid: must be empty, or a DynamoDB table name "
        "(3-255 of A-Z a-z 0-9 _ - .)"
    )


# The worker's.


def test_the_memory_ledger_reads_back_overwrites_and_expires() -> None:
    ledger: InvocationLedger = MemoryLedger()
    ledger.record({"r1": 1, "r2": 1}, now=NOW)
    ledger.record({"r2": 2, "r3": 1}, now=NOW + 10)

    assert counts_of(ledger, ["r1", "r2", "r3", "unknown"]) == {"r1": 1, "r2": 2, "r3": 1}
    ledger.record({"r4": 1}, now=NOW + RETENTION_SECONDS + 5)  # r1 expired, r2 rewritten later
    assert counts_of(ledger, ["r1", "r2", "r3", "r4"]) == {"r2": 2, "r3": 1, "r4": 1}
    assert ledger.invocations(["r2"]) == {"r2": Invocation(2, NOW + 10)}


# The items are typed by boto3's TypeSerializer: every request keeps the shape the stores
# wrote by hand before it (numbers as the digits str() writes, keys, conditions), here spelt
# out as they were.


@pytest.fixture(scope="module")
def bare_client() -> Any:
    """One client for every example (a Stubber is put on it per example)."""
    return boto3.client("dynamodb", region_name=REGION)


def breaker_key(sort_key: str) -> dict[str, Any]:
    return {"pk": {"S": "breaker"}, "sk": {"S": sort_key}}


@given(
    buckets=st.dictionaries(
        st.integers(0, 10**11), st.tuples(*[st.integers(0, 10**12)] * 3), max_size=4
    ),
    version=st.integers(0, 10**12),
)
@settings(max_examples=50, deadline=None)
def test_the_breaker_store_writes_and_reads_the_items_it_always_did(
    bare_client: Any, buckets: dict[int, tuple[int, int, int]], version: int
) -> None:
    store = DynamoBreakerStore(lambda: bare_client, TABLE)
    state = BreakerState(phase=Phase.OPEN, since=NOW, openings=2, version=version + 1)
    state_text = json.dumps(state.to_item(), sort_keys=True)
    window = [(f"w#{bucket:012d}", counts) for bucket, counts in sorted(buckets.items())]
    with Stubber(bare_client) as stub:
        for (key_, (replays, returns, sent)), bucket in zip(window, sorted(buckets), strict=True):
            update = {
                "TableName": TABLE,
                "Key": breaker_key(key_),
                "UpdateExpression": "ADD replays :r, #ret :t, sent :s SET expires_at = :e",
                "ExpressionAttributeNames": {"#ret": "returns"},
                "ExpressionAttributeValues": {
                    ":r": {"N": str(replays)},
                    ":t": {"N": str(returns)},
                    ":s": {"N": str(sent)},
                    ":e": {"N": str(bucket * 5 + 86_400)},
                },
            }
            stub.add_response("update_item", {}, update)
        put = {
            "TableName": TABLE,
            "Item": {
                "pk": {"S": "breaker"},
                "sk": {"S": "x#state"},
                "state": {"S": state_text},
                "version": {"N": str(version + 1)},
            },
            "ConditionExpression": "attribute_not_exists(version) OR version = :v",
            "ExpressionAttributeValues": {":v": {"N": str(version)}},
        }
        stub.add_response("put_item", {}, put)
        items = [
            {**breaker_key(key_), **{n: {"N": str(v)} for n, v in zip(NAMES, counts, strict=True)}}
            for key_, counts in window
        ]
        state_item = {**breaker_key("x#state"), "state": {"S": state_text}}
        query = {
            "TableName": TABLE,
            "KeyConditionExpression": "pk = :p AND sk >= :from",
            "ExpressionAttributeValues": {":p": {"S": "breaker"}, ":from": {"S": "w#000000000000"}},
            "ConsistentRead": True,
        }
        stub.add_response("query", {"Items": [*items, state_item]}, query)
        get = {"TableName": TABLE, "Key": breaker_key("x#state"), "ConsistentRead": True}
        stub.add_response("get_item", {"Item": state_item}, get)
        stub.add_response("get_item", {}, get)

        store.record([(bucket * 5.0 + 1, Counts(*counts)) for bucket, counts in buckets.items()])
        assert store.save(state, version)
        read_state, read_window = store.read(5.0, BreakerPolicy(window_seconds=5.0))
        assert (store.load(), store.load()) == (state, BreakerState())
        stub.assert_no_pending_responses()

    assert read_state == state
    assert [counts for _, counts in read_window] == [Counts(*c) for _, c in window]


NAMES = ("replays", "returns", "sent")


@given(
    counts=st.dictionaries(
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=40),
        st.integers(1, 10**9),
        max_size=30,
    ),
    now=st.floats(0, 1e11),
)
@settings(max_examples=50, deadline=None)
def test_the_ledger_writes_the_items_it_always_did(
    bare_client: Any, counts: dict[str, int], now: float
) -> None:
    ledger = DynamoLedger(lambda: bare_client, TABLE)
    puts = [
        {
            "PutRequest": {
                "Item": {
                    **key(request_id),
                    "count": {"N": str(count)},
                    "invoked_at": {"N": str(round(now, 3))},
                    "expires_at": {"N": str(math.ceil(now + 14 * 86_400))},
                }
            }
        }
        for request_id, count in sorted(counts.items())
    ]
    with Stubber(bare_client) as stub:
        for start in range(0, len(puts), 25):
            chunk = {"RequestItems": {TABLE: puts[start : start + 25]}}
            stub.add_response("batch_write_item", {"UnprocessedItems": {}}, chunk)
        ledger.record(counts, now=now)
        stub.assert_no_pending_responses()


# What DynamoDB may answer in the ledger's attributes, valid or not as numbers.
number_text = st.one_of(
    st.integers(-(10**40), 10**40).map(str),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.floats().map(str),
    st.text(max_size=12),
)
attribute_value = st.one_of(
    st.builds(lambda text: {"N": text}, number_text),
    st.builds(lambda text: {"S": text}, st.text(max_size=12)),
    st.builds(lambda flag: {"BOOL": flag}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda texts: {"NS": texts}, st.lists(number_text, min_size=1, max_size=3)),
    st.builds(lambda texts: {"SS": texts}, st.lists(st.text(max_size=5), min_size=1, max_size=3)),
)


def read_back(client: Any, found: dict[str, dict[str, Any]]) -> dict[str, Invocation]:
    """What the ledger reads of `found` (request id -> its item's attributes), answered so."""
    ledger = DynamoLedger(lambda: client, TABLE)
    items = [{**key(request_id), **attributes} for request_id, attributes in found.items()]
    with Stubber(client) as stub:
        asked = {"RequestItems": get(["r1", "r2", "r3"])}
        stub.add_response("batch_get_item", {"Responses": {TABLE: items}}, asked)
        return ledger.invocations(["r1", "r2", "r3"])


@given(
    found=st.dictionaries(
        st.sampled_from(["r1", "r2", "r3"]),
        st.fixed_dictionaries(
            {}, optional={"count": attribute_value, "invoked_at": attribute_value}
        ),
    )
)
@settings(max_examples=200, deadline=None)
def test_whatever_the_ledgers_items_hold_a_read_never_fails_and_takes_only_whole_counts(
    bare_client: Any, found: dict[str, dict[str, Any]]
) -> None:
    read = read_back(bare_client, found)

    for request_id, invocation in read.items():
        count = found[request_id]["count"]["N"]
        assert Decimal(count) == invocation.count  # a whole number, nothing else
        if invocation.at is not None:
            assert math.isfinite(invocation.at)
            assert invocation.at == float(found[request_id]["invoked_at"]["N"])


@given(
    found=st.dictionaries(
        st.sampled_from(["r1", "r2", "r3"]),
        st.fixed_dictionaries(
            {"count": st.integers(-(10**37), 10**37).map(lambda n: {"N": str(n)})},
            optional={"invoked_at": st.floats(0, 1e11).map(lambda f: {"N": str(round(f, 3))})},
        ),
    )
)
@settings(max_examples=100, deadline=None)
def test_every_item_the_ledger_writes_reads_back_exactly(
    bare_client: Any, found: dict[str, dict[str, Any]]
) -> None:
    read = read_back(bare_client, found)

    assert set(read) == set(found)
    for request_id, attributes in found.items():
        at = attributes.get("invoked_at")
        expected = Invocation(int(attributes["count"]["N"]), at and float(at["N"]))
        assert read[request_id] == expected
