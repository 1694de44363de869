"""`peek`, `export` and `status --sample` name each record's kind, its target and the error
the service recorded: an EventBridge rule target's record, a Lambda function's asynchronous
invocation record and an OnFailure destination record, beside an SQS one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.cli.status import kinds_json, kinds_lines

from .records import (
    DESTINATION_REQUEST_ID,
    FUNCTION_ARN,
    RULE_ARN,
    send_destination,
    send_eventbridge,
    send_lambda,
)
from .support import ACCOUNT, REGION, Queues, depth, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

NO_WAIT = ("--wait-seconds", "0")
TARGET_QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-target"


@pytest.fixture
def records(sqs: SQSClient, queues: Queues, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """One record of each kind in the DLQ, by kind: its message id. The function a `lambda`
    record goes back to is the one function of REPLAY_TARGET_ARNS (no stack: the
    environment's)."""
    monkeypatch.setenv("REPLAY_TARGET_ARNS", f"{FUNCTION_ARN},{TARGET_QUEUE}")
    monkeypatch.setenv("DLQ_KIND", "any")  # no stack: the environment's mode, every kind
    return {
        "eventbridge": send_eventbridge(sqs, queues.dlq, TARGET_QUEUE),
        "lambda": send_lambda(sqs, queues.dlq),
        "lambda-destination": send_destination(sqs, queues.dlq),
        "sqs": park(sqs, queues.dlq, ['{"order": 4}'], reason=None, count=None)[0],
    }


EXPECTED: dict[str, dict[str, Any]] = {
    "eventbridge": {
        "kind": "eventbridge",
        "target_arn": TARGET_QUEUE,
        "error_code": "SDK_CLIENT_ERROR",
        "error_message": "Unable to invoke target: rate exceeded",
    },
    "lambda": {
        "kind": "lambda",
        "target_arn": FUNCTION_ARN,
        "error_code": "200",
        "error_message": "Task timed out after 3.00 seconds",
    },
    "lambda-destination": {
        "kind": "lambda-destination",
        "target_arn": f"{FUNCTION_ARN}:$LATEST",
        "error_code": "ValueError",
        "error_message": "order 3 has no lines",
    },
    "sqs": {"kind": "sqs", "target_arn": None, "error_code": None, "error_message": None},
}


def test_peek_json_names_kind_target_and_error(
    capsys: pytest.CaptureFixture[str], queues: Queues, records: dict[str, str]
) -> None:
    result = run_cli(capsys, "peek", "dlq", *queues.options(), *NO_WAIT, "--json")

    assert result.code == 0, result
    shown = {m["message_id"]: m for m in result.json()["messages"]}
    for kind, message_id in records.items():
        fields = {key: shown[message_id][key] for key in EXPECTED[kind]}
        assert fields == EXPECTED[kind], kind
    assert shown[records["eventbridge"]]["error"] == (
        "SDK_CLIENT_ERROR: Unable to invoke target: rate exceeded"
    )
    assert shown[records["sqs"]]["error"] is None
    # The older fields are all still there.
    assert {"replay_count", "park_reason", "attribute_names", "receive_count"} <= set(
        shown[records["sqs"]]
    )


def test_peek_table_shows_the_kind_columns_only_for_serverless_records(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, records: dict[str, str]
) -> None:
    wide = run_cli(capsys, "peek", "dlq", *queues.options(), *NO_WAIT, "--limit", "10")
    park(sqs, queues.operator, ['{"order": 5}'])
    narrow = run_cli(capsys, "peek", "operator", *queues.options(), *NO_WAIT)

    assert wide.code == narrow.code == 0
    text = " ".join(wide.out.split())
    for heading in ("kind", "target", "error"):
        assert f" {heading} " in f" {text} "
    for kind in ("eventbridge", "lambda-destination"):
        assert kind in text
    assert "orders-target" in text
    assert "kind" not in narrow.out  # an SQS queue's table is as it was


def test_export_lines_carry_kind_target_and_error(
    capsys: pytest.CaptureFixture[str], queues: Queues, records: dict[str, str], tmp_path: Path
) -> None:
    archive = tmp_path / "dlq.jsonl"

    result = run_cli(
        capsys, "export", "dlq", *queues.options(), *NO_WAIT, "--json", "--file", str(archive)
    )

    assert result.code == 0, result
    lines = {
        line["message_id"]: line
        for line in map(json.loads, archive.read_text(encoding="utf-8").splitlines())
    }
    assert len(lines) == 4
    for kind, message_id in records.items():
        line = lines[message_id]
        assert {key: line[key] for key in EXPECTED[kind]} == EXPECTED[kind], kind
        # The fields an archive always had are kept, and import reads the line back.
        assert line["format"] == "dlq-replay/1"
        assert {"body", "attributes", "source_arn", "receive_count"} <= set(line)
    eventbridge = lines[records["eventbridge"]]["attributes"]
    assert eventbridge["RULE_ARN"]["StringValue"] == RULE_ARN


def test_status_sample_counts_the_dlq_by_kind_target_and_error(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, records: dict[str, str]
) -> None:
    plain = run_cli(capsys, "status", *queues.options(), "--json")
    sampled = run_cli(capsys, "status", *queues.options(), "--json", "--sample", "10")
    table = run_cli(capsys, "status", *queues.options(), "--sample", "10")

    assert plain.code == sampled.code == table.code == 0
    assert plain.json()["kinds"]["sample"] is None  # status alone receives nothing
    sample = sampled.json()["kinds"]["sample"]
    assert sample["sampled"] == 4
    assert sample["kinds"] == {"eventbridge": 1, "lambda": 1, "lambda-destination": 1, "sqs": 1}
    assert sample["targets"] == {
        f"eventbridge -> {TARGET_QUEUE}": 1,
        f"lambda -> {FUNCTION_ARN}": 1,
        f"lambda-destination -> {FUNCTION_ARN}:$LATEST": 1,
    }
    assert sample["errors"] == {"SDK_CLIENT_ERROR": 1, "200": 1, "ValueError": 1}
    lines = table.out.splitlines()
    assert any(
        line.startswith("DLQ sample: 4 records looked at: 1 eventbridge, 1 lambda")
        for line in lines
    ), table.out
    assert f"  eventbridge -> {TARGET_QUEUE}: 1" in lines
    # A sample is a peek: every record is visible again at once.
    assert depth(sqs, queues.dlq) == (4, 0)
    assert DESTINATION_REQUEST_ID  # the destination's request id stays the record's own


def test_status_sample_is_checked_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "status", "--sample", "101", "--dlq-url", "http://x/1/q")

    assert result.code == 2
    assert "argument --sample: must be from 0 to 100, got 101" in result.err


def test_status_names_the_kinds_and_targets_the_function_replays() -> None:
    settings = {"DLQ_KIND": "eventbridge", "REPLAY_TARGET_ARNS": f" {TARGET_QUEUE} ,{FUNCTION_ARN}"}

    kinds = kinds_json(settings, None)

    assert kinds == {
        "dlq_kind": "eventbridge",
        "replay_target_arns": sorted([TARGET_QUEUE, FUNCTION_ARN]),
        "sample": None,
    }
    assert kinds_lines(kinds) == [
        f"kinds: the function replays eventbridge records; targets: {FUNCTION_ARN}, {TARGET_QUEUE}"
    ]
    # A function of SQS records (or an unknown one) and no sample: nothing is said.
    assert kinds_lines(kinds_json({"DLQ_KIND": "sqs"}, None)) == []
    assert kinds_lines(kinds_json({}, None)) == []


@pytest.mark.parametrize("mode", [None, "sqs", "eventbridge"])
def test_a_look_alike_reads_as_the_stacks_mode_reads_it(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    monkeypatch: pytest.MonkeyPatch,
    mode: str | None,
) -> None:
    """Lambda's attribute names on a record of a DLQ whose stack replays SQS records (the
    default) or EventBridge ones: anyone who may send to the DLQ can write them, so the tools
    read the record as the replay does, an SQS record with no target."""
    monkeypatch.setenv("REPLAY_TARGET_ARNS", FUNCTION_ARN)
    if mode is None:
        monkeypatch.delenv("DLQ_KIND", raising=False)
    else:
        monkeypatch.setenv("DLQ_KIND", mode)
    look_alike = send_lambda(sqs, queues.dlq)

    peeked = run_cli(capsys, "peek", "dlq", *queues.options(), *NO_WAIT, "--json")
    moved = run_cli(
        capsys,
        "redrive",
        *queues.options(),
        *NO_WAIT,
        "--from",
        "dlq",
        "--to",
        "source",
        "--target-arn",
        FUNCTION_ARN,
        "--json",
    )

    assert peeked.code == 0, peeked
    (shown,) = peeked.json()["messages"]
    assert (shown["message_id"], shown["kind"], shown["target_arn"]) == (look_alike, "sqs", None)
    tally = moved.json()
    assert tally["delivered"] == {}, tally  # never to the function
    assert tally["moved"] == 0
    assert depth(sqs, queues.dlq)[0] + depth(sqs, queues.dlq)[1] == 1


def test_a_dlq_kind_that_is_none_of_the_modes_is_one_line(
    capsys: pytest.CaptureFixture[str], queues: Queues, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLQ_KIND", "kinesis")

    result = run_cli(capsys, "peek", "dlq", *queues.options(), *NO_WAIT)

    assert result.code == 2
    assert "Traceback" not in result.err
    assert result.err.strip().splitlines()[-1] == (
        "dlq-replay: error: DLQ_KIND 'kinesis' is none of sqs, lambda, eventbridge, any"
    )
