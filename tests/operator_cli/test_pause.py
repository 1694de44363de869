"""`dlq-replay pause | resume` on a stack deployed into moto: the event source on the DLQ."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay import ops
from dlq_replay.ops.errors import OpsError

from .stack import deploy
from .support import assert_one_line_error, run_cli

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient

pytestmark = pytest.mark.moto_only(reason="a stack with a Lambda function, deployed into moto")


@pytest.fixture
def cfn(aws: None) -> CloudFormationClient:
    return boto3.client("cloudformation")


@pytest.fixture
def lam(aws: None) -> LambdaClient:
    return boto3.client("lambda")


def mapping_state(lam: LambdaClient, outputs: dict[str, str]) -> str:
    function = outputs["ReplayFunctionName"]
    state = ops.event_source_status(lam, function, outputs["DeadLetterQueueArn"]).state
    return str(state)


def test_pause_disables_and_resume_enables_the_event_source_on_the_dlq(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient, lam: LambdaClient
) -> None:
    outputs = deploy(cfn, "shop")
    assert mapping_state(lam, outputs) == "Enabled"

    paused = run_cli(capsys, "pause", "--stack", "shop")

    assert paused.code == 0, paused
    assert "paused:" in paused.out
    assert "dlq-replay resume --stack shop" in paused.out
    assert mapping_state(lam, outputs) in ("Disabling", "Disabled")
    status = run_cli(capsys, "status", "--stack", "shop", "--json")
    assert status.json()["event_source"]["enabled"] is False

    resumed = run_cli(capsys, "resume", "--stack", "shop", "--json")

    assert resumed.code == 0, resumed
    report: dict[str, Any] = resumed.json()
    assert report["changed"] is True
    assert report["before"] in ("Disabling", "Disabled")
    assert mapping_state(lam, outputs) in ("Enabling", "Enabled")
    assert run_cli(capsys, "status", "--stack", "shop", "--json").json()["event_source"]["enabled"]


def test_pausing_twice_says_so_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient, lam: LambdaClient
) -> None:
    deploy(cfn, "shop")
    run_cli(capsys, "pause", "--stack", "shop")

    again = run_cli(capsys, "pause", "--stack", "shop", "--json")

    assert again.code == 0, again
    assert again.json()["changed"] is False
    assert "already paused" in run_cli(capsys, "pause", "--stack", "shop").out


def test_wait_follows_the_state_until_it_is_reached(
    cfn: CloudFormationClient, lam: LambdaClient
) -> None:
    outputs = deploy(cfn, "shop")
    function, dlq = outputs["ReplayFunctionName"], outputs["DeadLetterQueueArn"]
    result = ops.set_event_source(lam, function, dlq, enabled=False)
    assert result.changed
    assert ops.wait_for_state(lam, result.uuid, "Disabled", timeout=5, poll_seconds=0.01) == (
        "Disabled"
    )
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(OpsError, match="still Disabled after 3s"):
        ops.wait_for_state(
            lam,
            result.uuid,
            "Enabled",
            timeout=3,
            poll_seconds=1,
            clock=lambda: now[0],
            sleep=sleep,
        )


def test_no_mapping_or_no_function_is_one_line(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient, lam: LambdaClient
) -> None:
    outputs = deploy(cfn, "shop")
    (mapping,) = lam.list_event_source_mappings(FunctionName=outputs["ReplayFunctionName"])[
        "EventSourceMappings"
    ]
    lam.delete_event_source_mapping(UUID=mapping["UUID"])

    missing = run_cli(capsys, "pause", "--stack", "shop")

    assert_one_line_error(missing, 1, "has no event source mapping on the DLQ")
    nameless = run_cli(capsys, "resume", "--dlq-url", outputs["DeadLetterQueueUrl"])
    assert_one_line_error(nameless, 2, "--function-name")


def test_timeout_is_checked_by_the_parser(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient
) -> None:
    for value in ("0", "-1", "soon"):
        result = run_cli(capsys, "pause", "--stack", "shop", "--wait", "--timeout", value)
        assert_one_line_error(result, 2, "--timeout")
