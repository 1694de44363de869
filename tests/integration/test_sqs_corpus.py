"""The SQS replay unchanged, proven: today's handler, in its default mode (`DLQ_KIND` unset:
sqs), makes every copy that the last commit before the serverless kinds (88f404a) made of a
recorded corpus of SQS dead letters, byte for byte.

The corpus (tests/corpus/sqs/*.json: the records, the settings, and the requests 88f404a made)
was recorded with `.venv/bin/python tools/record_sqs_corpus.py`. The same tool replays it here
through today's tree, in a fresh interpreter with the same fixed clock, on moto, capturing every
request at botocore's boundary. Compared per event: the batch item failures; every copy sent
(destination URL, body, attributes, DelaySeconds, MessageGroupId, MessageDeduplicationId,
system attributes: every parameter but the batch entry's Id), as a multiset, and in order within
each FIFO group; every visibility change and delete.

The `lookalike-*` cases are SQS dead letters whose own attributes or body look like another
kind's record: today's engine recognises them in sqs mode (issue 44), so they fail until the
engine branch is merged.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tools.record_sqs_corpus import CORPUS, ROOT, replay_with

LOOKALIKES = {
    "lookalike-lambda-attributes",
    "lookalike-eventbridge-attributes",
    "lookalike-destination-body",
}


def _corpus() -> list[dict[str, Any]]:
    paths = sorted(CORPUS.glob("*.json"))
    assert paths, f"no corpus in {CORPUS}"
    return [json.loads(path.read_text(encoding="utf-8")) for path in paths]


CASES = _corpus()


@pytest.fixture(scope="module")
def replayed() -> dict[str, list[dict[str, Any]]]:
    """Today's tree over every case, once (one interpreter, about 2 s)."""
    results = replay_with(Path(ROOT), CASES)
    return {result["name"]: result["answers"] for result in results}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def copies(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every message sent, as the parameters of one SendMessage (a batch entry without its
    Id), in request order."""
    sent: list[dict[str, Any]] = []
    for request in requests:
        params = request["params"]
        if request["operation"] == "SendMessage":
            sent.append(dict(params))
        elif request["operation"] == "SendMessageBatch":
            sent += [
                {"QueueUrl": params["QueueUrl"], **{k: v for k, v in e.items() if k != "Id"}}
                for e in params["Entries"]
            ]
    return sent


def _entries(requests: list[dict[str, Any]], single: str) -> list[str]:
    """The visibility changes (or deletes) as sorted canonical texts, batched or not."""
    found = []
    for request in requests:
        params = request["params"]
        if request["operation"] == single:
            found.append(dict(params))
        elif request["operation"] == f"{single}Batch":
            found += [
                {"QueueUrl": params["QueueUrl"], **{k: v for k, v in e.items() if k != "Id"}}
                for e in params["Entries"]
            ]
    return sorted(_canonical(entry) for entry in found)


def fifo_orders(sent: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The bodies sent to each FIFO queue's group, in the order sent."""
    orders: dict[str, list[str]] = defaultdict(list)
    for message in sent:
        if message["QueueUrl"].endswith(".fifo"):
            orders[f"{message['QueueUrl']} {message.get('MessageGroupId')}"].append(
                message["MessageBody"]
            )
    return dict(orders)


def assert_same_answer(recorded: dict[str, Any], today: dict[str, Any]) -> None:
    assert today["batchItemFailures"] == recorded["batchItemFailures"]
    then_sent, now_sent = copies(recorded["requests"]), copies(today["requests"])
    assert sorted(map(_canonical, now_sent)) == sorted(map(_canonical, then_sent))
    assert fifo_orders(now_sent) == fifo_orders(then_sent)
    for operation in ("ChangeMessageVisibility", "DeleteMessage"):
        assert _entries(today["requests"], operation) == _entries(recorded["requests"], operation)


def _param(case: dict[str, Any]) -> Any:
    return pytest.param(case, id=case["name"])


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_todays_handler_makes_the_recorded_copies(
    replayed: dict[str, list[dict[str, Any]]], case: dict[str, Any]
) -> None:
    assert "DLQ_KIND" not in case["env"]  # the default mode
    answers = replayed[case["name"]]
    assert len(answers) == len(case["answers"])
    for recorded, today in zip(case["answers"], answers, strict=True):
        assert_same_answer(recorded, today)


def test_the_corpus_covers_what_it_promises() -> None:
    """Standard, FIFO, fair and shared-DLQ records, every attribute type, counts, long delays
    and the look-alikes are all in it, and it stays small."""
    records = [r for case in CASES for event in case["events"] for r in event]
    types = {v["dataType"] for r in records for v in r["messageAttributes"].values()}
    assert {"String", "Number", "Binary", "Number.int", "Binary.gzip", "String.custom"} <= types
    system = [r["attributes"] for r in records]
    assert any("MessageGroupId" in s and "SequenceNumber" not in s for s in system)  # fair
    assert any("SequenceNumber" in s for s in system)  # FIFO
    assert any("DeadLetterQueueSourceArn" in s for s in system)
    assert any("AWSTraceHeader" in s for s in system)
    names = {name for r in records for name in r["messageAttributes"]}
    assert {"dlq-replay-not-before", "sqs-dlq-replay-nb", "RequestID", "RULE_ARN"} <= names
    assert {case["name"] for case in CASES} >= LOOKALIKES
    assert sum(path.stat().st_size for path in CORPUS.glob("*.json")) < 200_000
