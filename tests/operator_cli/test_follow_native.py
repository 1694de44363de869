"""What is not followed says so: SQS's own move task cannot carry the action's id, so a
native `redrive` prints one line saying it is not followed and how to follow (`--client-side`),
`--json` and its audit record have `followed: null`; purge and pause, which send nothing,
still print and give their action id."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.follow.journal import default_follow_path

from .stack import deploy
from .support import Queues, make_queues, park, run_cli
from .test_native_move import MAIN_ARN, OPERATOR_ARN, QUEUES, expect_queues, stub

if TYPE_CHECKING:
    from botocore.stub import Stubber
    from mypy_boto3_sqs import SQSClient

__all__ = ["stub"]  # the fixture, used by name


def audit_end(action_id: str) -> dict[str, Any]:
    path = Path(os.environ["XDG_STATE_HOME"]) / "dlq-replay" / "audit.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    (end,) = [r for r in records if r["action_id"] == action_id and r["phase"] == "end"]
    assert isinstance(end, dict)
    return end


def start_task(stub: Stubber, handle: str) -> None:
    expect_queues(stub)
    stub.add_response(
        "start_message_move_task",
        {"TaskHandle": handle},
        {"SourceArn": OPERATOR_ARN, "DestinationArn": MAIN_ARN},
    )


def test_a_native_redrive_says_it_is_not_followed_and_how_to_follow(
    capsys: pytest.CaptureFixture[str], stub: Stubber
) -> None:
    start_task(stub, "handle-f1")

    result = run_cli(capsys, "redrive", *QUEUES)

    assert result.code == 0, result
    (line,) = [line for line in result.out.splitlines() if line.startswith("action ")]
    action_id = line.split()[1]
    assert line == (
        f"action {action_id} is not followed: SQS's own move task cannot carry its id "
        "(to follow the copies, redrive with --client-side)"
    )
    end = audit_end(action_id)
    assert end["tally"]["followed"] is None
    assert end["tally"]["task_handle"] == "handle-f1"
    assert not default_follow_path().exists()  # nothing recorded to follow


def test_a_native_redrive_s_json_has_its_action_id_and_followed_null(
    capsys: pytest.CaptureFixture[str], stub: Stubber
) -> None:
    start_task(stub, "handle-f2")

    result = run_cli(capsys, "redrive", *QUEUES, "--json")

    assert result.code == 0, result
    report = result.json()
    assert report["followed"] is None
    assert audit_end(report["action_id"])["tally"]["followed"] is None


@pytest.mark.emulator
def test_purge_prints_and_gives_its_action_id_and_follows_nothing(
    capsys: pytest.CaptureFixture[str], setup_client: SQSClient
) -> None:
    sqs = setup_client
    queues: Queues = make_queues(sqs, "purged")
    park(sqs, queues.operator, ["a"])
    name = queues.operator.rsplit("/", 1)[-1]

    park(sqs, queues.dlq, ["b"])  # SQS purges a queue once a minute: the other one

    human = run_cli(capsys, "purge", "operator", *queues.options(), "--confirm", name)
    dlq = queues.dlq.rsplit("/", 1)[-1]
    as_json = run_cli(capsys, "purge", "dlq", *queues.options(), "--confirm", dlq, "--json")

    assert (human.code, as_json.code) == (0, 0), (human, as_json)
    (line,) = [line for line in human.out.splitlines() if line.startswith("action ")]
    assert audit_end(line.split()[1])["command"] == "purge"
    assert line == f"action {line.split()[1]}"
    assert audit_end(as_json.json()["action_id"])["command"] == "purge"
    assert not default_follow_path().exists()


@pytest.mark.moto_only(reason="a stack with a Lambda function, deployed into moto")
def test_pause_and_resume_print_and_give_their_action_ids(
    capsys: pytest.CaptureFixture[str], aws: None
) -> None:
    deploy(boto3.client("cloudformation"), "shop")

    paused = run_cli(capsys, "pause", "--stack", "shop")
    resumed = run_cli(capsys, "resume", "--stack", "shop", "--json")

    assert (paused.code, resumed.code) == (0, 0), (paused, resumed)
    # On stderr: a pause's stdout stays its one line of state.
    (line,) = [line for line in paused.err.splitlines() if "action " in line]
    listed = run_cli(capsys, "audit", "--stack", "shop", "--json").json()["actions"]
    by_command = {action["command"]: action["action_id"] for action in listed}
    assert line == f"dlq-replay: action {by_command['pause']}"
    assert "action" not in paused.out
    assert resumed.json()["action_id"] == by_command["resume"]
