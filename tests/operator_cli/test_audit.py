"""The audit trail (docs/operator-audit.md) in moto: every command that moves, deletes or
pauses writes a begin before it changes anything and an end with its tally or error; who ran
it as STS named the caller; `dlq-replay audit` lists it newest first, from the stack's table or
this machine's file, and another process sees what this one wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.stub import Stubber
from dlq_replay.cli import deployment as cli_deployment
from dlq_replay.demo.emulator import create_queues, emulator, emulator_client

from .stack import deploy
from .support import Queues, assert_one_line_error, depth, park, run_cli

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.moto_only(reason="a stack with its table, deployed into moto")

MOTO_CALLER = "arn:aws:sts::123456789012:user/moto"  # what moto's STS says of any caller


@pytest.fixture
def cfn(aws: None) -> CloudFormationClient:
    return boto3.client("cloudformation")


@pytest.fixture
def shop(cfn: CloudFormationClient) -> dict[str, str]:
    return deploy(cfn, "shop")


def trail(capsys: pytest.CaptureFixture[str], *options: str) -> list[dict[str, Any]]:
    listed = run_cli(capsys, "audit", "--json", *options)
    assert listed.code == 0, listed
    actions: list[dict[str, Any]] = listed.json()["actions"]
    return actions


def stored_items(outputs: dict[str, str]) -> list[dict[str, Any]]:
    """The table's items themselves: two a finished action, in key order."""
    table = outputs["AuditTableName"]
    items = boto3.client("dynamodb").query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "audit"}},
    )["Items"]
    return [json.loads(item["record"]["S"]) for item in items]


def test_pause_and_resume_are_recorded_before_and_after_with_who_and_the_result(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str]
) -> None:
    assert run_cli(capsys, "pause", "--stack", "shop").code == 0
    assert run_cli(capsys, "resume", "--stack", "shop").code == 0

    actions = trail(capsys, "--stack", "shop")

    assert [a["command"] for a in actions] == ["resume", "pause"]  # newest first
    paused = actions[1]
    assert paused["identity"]["arn"] == MOTO_CALLER
    assert paused["identity"]["account"] == "123456789012"
    assert paused["origin"] == "cli"
    assert paused["request"]["stack"] == "shop"
    assert paused["outcome"] == "ok"
    assert paused["exit_code"] == 0
    assert paused["tally"]["changed"] is True
    assert paused["queues"] == [shop["DeadLetterQueueUrl"]]
    records = stored_items(shop)
    assert sorted((r["command"], r["phase"]) for r in records) == [
        ("pause", "begin"),
        ("pause", "end"),
        ("resume", "begin"),
        ("resume", "end"),
    ]
    # The begin was written first, before the end (and its time is the action's start).
    begin, end = (
        next(r for r in records if r["command"] == "pause" and r["phase"] == p)
        for p in ("begin", "end")
    )
    assert begin["started_at"] <= begin["at"] <= end["at"]
    assert "outcome" not in begin


def test_a_redrive_records_its_queues_selection_size_and_tally(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient
) -> None:
    park(sqs, shop["OperatorQueueUrl"], ["a", "b", "c"])
    park(sqs, shop["OperatorQueueUrl"], ["d"], reason="expired")

    moved = run_cli(
        capsys,
        "redrive",
        "--stack",
        "shop",
        "--filter-reason",
        "max-attempts",
        "--wait-seconds",
        "0",
    )

    assert moved.code == 0, moved
    (action,) = trail(capsys, "--stack", "shop")
    assert action["command"] == "redrive"
    assert action["queues"] == [shop["OperatorQueueUrl"], shop["MainQueueUrl"]]
    assert action["selection_size"] == 4  # what the source held when the work began
    assert action["request"]["reasons"] == ["max-attempts"]
    assert action["tally"]["moved"] == 3
    assert action["tally"]["skipped"] == 1
    assert action["tally"]["adds_up"] is True
    table = run_cli(capsys, "audit", "--stack", "shop")
    assert "redrive" in table.out, table.out
    assert "moved 3" in table.out, table.out


def test_a_dry_run_changes_nothing_and_is_not_recorded(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient
) -> None:
    park(sqs, shop["OperatorQueueUrl"], ["a"])
    dry = run_cli(capsys, "redrive", "--stack", "shop", "--dry-run", "--client-side")
    assert dry.code == 0, dry
    assert trail(capsys, "--stack", "shop") == []


def test_a_failed_action_is_recorded_with_its_error(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str]
) -> None:
    missing = "https://sqs.us-east-1.amazonaws.com/123456789012/nowhere"
    failed = run_cli(capsys, "redrive", "--stack", "shop", "--to", missing, "--client-side")
    assert failed.code == 1, failed

    (action,) = trail(capsys, "--stack", "shop")

    assert action["outcome"] == "error"
    assert "nowhere" in action["error"]
    assert action["request"]["destination"] == missing


def test_import_is_recorded_with_its_tally(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient, tmp_path: Path
) -> None:
    park(sqs, shop["OperatorQueueUrl"], ["a", "b"])
    archive = tmp_path / "parked.jsonl"
    exported = run_cli(
        capsys,
        "export",
        "operator",
        "--stack",
        "shop",
        "--file",
        str(archive),
        "--delete",
        "--wait-seconds",
        "0",
    )
    assert exported.code == 0, exported

    imported = run_cli(capsys, "import", "--stack", "shop", str(archive), "--to", "main")

    assert imported.code == 0, imported
    action, export = trail(capsys, "--stack", "shop")
    assert action["command"] == "import"
    assert action["tally"]["sent"] == 2
    assert action["request"]["path"] == str(archive)
    # export --delete deletes what it archived: recorded too (a plain export changes nothing).
    assert export["command"] == "export"
    assert export["tally"]["deleted"] == 2


def test_an_unknown_identity_is_recorded_with_the_reason_and_the_action_runs(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint without STS (an emulator) must not block an operator mid-incident."""
    sts = boto3.client("sts")
    stubber = Stubber(sts)
    stubber.add_client_error("get_caller_identity", "InvalidAction", http_status_code=400)
    stubber.activate()
    original = cli_deployment.make_client

    def make_client(args: argparse.Namespace, service: str) -> Any:
        return sts if service == "sts" else original(args, service)

    monkeypatch.setattr(cli_deployment, "make_client", make_client)

    assert run_cli(capsys, "pause", "--stack", "shop").code == 0

    (action,) = trail(capsys, "--stack", "shop")
    assert action["identity"]["arn"] == "unknown"
    assert "InvalidAction" in action["identity"]["unknown_because"]
    assert action["outcome"] == "ok"
    table = run_cli(capsys, "audit", "--stack", "shop")
    assert "unknown (GetCallerIdentity failed: InvalidAction)" in table.out, table.out


def test_an_action_that_cannot_be_recorded_does_not_run(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient
) -> None:
    park(sqs, shop["OperatorQueueUrl"], ["a"])

    refused = run_cli(
        capsys, "redrive", "--stack", "shop", "--audit-table", "no-such-table", "--client-side"
    )

    assert_one_line_error(refused, 2, "audit", "did not run", "ResourceNotFound")
    assert depth(sqs, shop["OperatorQueueUrl"]) == (1, 0)
    assert depth(sqs, shop["MainQueueUrl"]) == (0, 0)


def test_without_a_table_the_trail_is_a_local_file_and_says_it_is_not_shared(
    capsys: pytest.CaptureFixture[str], queues: Queues, sqs: SQSClient
) -> None:
    park(sqs, queues.operator, ["a"])

    moved = run_cli(capsys, "redrive", *queues.options(), "--wait-seconds", "0", "--client-side")

    assert moved.code == 0, moved
    path = Path(os.environ["XDG_STATE_HOME"]) / "dlq-replay" / "audit.jsonl"
    assert f"audit: recorded in {path}, which no other operator sees" in moved.err
    assert [json.loads(line)["phase"] for line in path.read_text().splitlines()] == [
        "begin",
        "end",
    ]
    listed = run_cli(capsys, "audit", "--json")
    assert listed.json()["where"] == str(path)
    assert listed.json()["shared"] is False
    assert listed.json()["actions"][0]["tally"]["moved"] == 1


def test_since_and_limit_choose_the_newest_actions(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str]
) -> None:
    for command in ("pause", "resume", "pause"):
        assert run_cli(capsys, command, "--stack", "shop").code == 0

    assert [a["command"] for a in trail(capsys, "--stack", "shop", "--limit", "2")] == [
        "pause",
        "resume",
    ]
    assert len(trail(capsys, "--stack", "shop", "--since", "1h")) == 3
    assert trail(capsys, "--stack", "shop", "--since", "2999-01-01") == []


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (["--since", "yesterday"], "neither a duration"),
        (["--limit", "0"], "--limit"),
        (["--since"], "--since"),
    ],
)
def test_wrong_audit_options_are_one_line(
    capsys: pytest.CaptureFixture[str], aws: None, options: list[str], fragment: str
) -> None:
    assert_one_line_error(run_cli(capsys, "audit", *options), 2, fragment)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with emulator() as endpoint_url:
        yield endpoint_url


@pytest.mark.moto_only(reason="moto's own server, shared by two processes")
def test_another_process_lists_what_this_one_wrote(
    capsys: pytest.CaptureFixture[str], server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = emulator_client(server)
    wired = create_queues(client, prefix="durable")
    park(client, wired.operator, ["x", "y"])
    dynamodb = boto3.client("dynamodb", endpoint_url=server)
    dynamodb.create_table(
        TableName="trail",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    )
    monkeypatch.setenv("DLQ_REPLAY_AUDIT_TABLE", "trail")
    options = ["--endpoint-url", server, "--operator-queue-url", wired.operator]
    moved = run_cli(
        capsys,
        "redrive",
        *options,
        "--main-queue-url",
        wired.main,
        "--wait-seconds",
        "0",
        "--client-side",
    )
    assert moved.code == 0, moved

    other = subprocess.run(
        [sys.executable, "-m", "dlq_replay.cli.main", "audit", "--json", "--endpoint-url", server],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ},
        timeout=60,
    )

    assert other.returncode == 0, other.stderr
    (action,) = json.loads(other.stdout)["actions"]
    assert action["command"] == "redrive"
    assert action["tally"]["moved"] == 2
    assert action["identity"]["arn"] == MOTO_CALLER
