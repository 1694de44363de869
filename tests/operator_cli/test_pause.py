"""`dlq-replay pause | resume` in moto: the replay function's event source on the DLQ, named by
--stack (the tests' small stack, and template.yaml itself) or by --function-name/--dlq-url."""

from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.config import Config
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.pause import set_event_source, wait_for_state
from dlq_replay.ops.status import event_source_status

from .stack import deploy
from .support import REGION, Queues, assert_one_line_error, queue_arn, run_cli

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.moto_only(reason="a stack with a Lambda function, deployed into moto")


@pytest.fixture
def cfn(aws: None) -> CloudFormationClient:
    return boto3.client("cloudformation")


@pytest.fixture
def lam(aws: None) -> LambdaClient:
    return boto3.client("lambda")


def mapping_state(lam: LambdaClient, outputs: dict[str, str]) -> str:
    function = outputs["ReplayFunctionName"]
    state = event_source_status(lam, function, outputs["DeadLetterQueueArn"]).state
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
    result = set_event_source(lam, function, dlq, enabled=False)
    assert result.changed
    assert wait_for_state(lam, result.uuid, "Disabled", timeout=5, poll_seconds=0.01) == (
        "Disabled"
    )
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(OpsError, match="still Disabled after 3s"):
        wait_for_state(
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


def make_function(lam: LambdaClient, name: str, *sources: str) -> dict[str, str]:
    """A function with an enabled event source mapping on each source queue ARN; their UUIDs."""
    role = boto3.client("iam").create_role(
        RoleName=f"{name}-role",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "lambda.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return {}\n")
    lam.create_function(
        FunctionName=name,
        Runtime="python3.13",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": code.getvalue()},
    )
    return {
        arn: lam.create_event_source_mapping(FunctionName=name, EventSourceArn=arn, Enabled=True)[
            "UUID"
        ]
        for arn in sources
    }


def test_function_name_and_dlq_url_choose_the_mapping(
    capsys: pytest.CaptureFixture[str], lam: LambdaClient, sqs: SQSClient, queues: Queues
) -> None:
    """Without a stack: --function-name, and --dlq-url picks which of its mappings."""
    dlq, other = queue_arn(sqs, queues.dlq), queue_arn(sqs, queues.main)
    uuids = make_function(lam, "replay", other, dlq)

    def state(arn: str) -> str:
        return lam.get_event_source_mapping(UUID=uuids[arn])["State"]

    paused = run_cli(capsys, "pause", "--function-name", "replay", "--dlq-url", queues.dlq)

    assert paused.code == 0, paused
    assert paused.out.startswith("paused: replay on the DLQ is Disabl")
    assert "(was Enabled)" in paused.out
    assert f"`dlq-replay resume --function-name replay --dlq-url {queues.dlq}`" in paused.out
    assert len(paused.out.splitlines()) == 1
    assert (state(dlq), state(other)) == ("Disabled", "Enabled")
    status = run_cli(capsys, "status", "--function-name", "replay", "--dlq-url", queues.dlq)
    assert "event source: replay on the DLQ is DISABLED" in status.out

    resumed = run_cli(
        capsys, "resume", "--function-name", "replay", "--dlq-url", queues.dlq, "--wait"
    )

    assert resumed.code == 0, resumed
    assert resumed.out.strip() == "resumed: replay on the DLQ is Enabled (was Disabled)"
    assert state(dlq) == "Enabled"
    again = run_cli(capsys, "resume", "--function-name", "replay", "--dlq-url", queues.dlq)
    assert again.out.strip() == "already resumed: replay on the DLQ is Enabled"


def test_wait_reports_the_final_state_as_json(
    capsys: pytest.CaptureFixture[str], lam: LambdaClient, sqs: SQSClient, queues: Queues
) -> None:
    (uuid,) = make_function(lam, "replay", queue_arn(sqs, queues.dlq)).values()

    paused = run_cli(
        capsys, "pause", "--function-name", "replay", "--dlq-url", queues.dlq, "--wait", "--json"
    )

    assert paused.code == 0, paused
    action_id = paused.json()["action_id"]  # what `dlq-replay audit` lists the pause as
    assert re.fullmatch("[0-9a-f]{32}", action_id)
    assert paused.json() == {
        "function_name": "replay",
        "uuid": uuid,
        "before": "Enabled",
        "after": "Disabled",
        "changed": True,
        "waited": True,
        "action_id": action_id,
    }


def test_a_function_without_a_mapping_on_the_dlq_is_one_line(
    capsys: pytest.CaptureFixture[str], lam: LambdaClient, sqs: SQSClient, queues: Queues
) -> None:
    make_function(lam, "replay", queue_arn(sqs, queues.main))

    result = run_cli(capsys, "pause", "--function-name", "replay", "--dlq-url", queues.dlq)

    assert_one_line_error(result, 1, "replay has no event source mapping on the DLQ")
    assert result.out == ""


def test_start_paused_on_the_deployed_template_then_resume(
    capsys: pytest.CaptureFixture[str], aws: None
) -> None:
    """template.yaml itself (tools/moto_stack), created with StartPaused=true."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    moto_stack = pytest.importorskip("tools.moto_stack")
    s3 = boto3.client("s3", region_name=REGION, config=Config(s3={"addressing_style": "path"}))
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    moto_stack.deploy_stack(cloudformation, s3, {"StartPaused": "true"}, stack_name="shop")

    status = run_cli(capsys, "status", "--stack", "shop", "--json")
    assert status.json()["event_source"]["state"] == "Disabled"
    assert "already paused" in run_cli(capsys, "pause", "--stack", "shop").out

    resumed = run_cli(capsys, "resume", "--stack", "shop", "--wait", "--timeout", "5")

    assert resumed.code == 0, resumed
    assert "on the DLQ is Enabled (was Disabled)" in resumed.out
    assert run_cli(capsys, "status", "--stack", "shop", "--json").json()["event_source"]["enabled"]


def test_until_failing_warns_while_the_replay_takes_messages_off_the_dlq(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient, lam: LambdaClient
) -> None:
    deploy(cfn, "shop")
    argv = ("redrive", "--stack", "shop", "--until-failing", "--wait-seconds", "0")

    running = run_cli(capsys, *argv)

    assert running.code == 0, running
    assert "is taking messages off shop-DeadLetterQueue" in running.err
    assert "run `dlq-replay pause` first" in running.err
    run_cli(capsys, "pause", "--stack", "shop")
    paused = run_cli(capsys, *argv)
    assert paused.code == 0, paused
    assert "is taking messages off" not in paused.err


def test_a_function_that_does_not_exist_is_named_so(
    capsys: pytest.CaptureFixture[str], lam: LambdaClient, sqs: SQSClient
) -> None:
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]

    for command in ("pause", "resume"):
        result = run_cli(capsys, command, "--function-name", "nope", "--dlq-url", dlq)
        assert_one_line_error(result, 1, "no such function: nope")
    status = run_cli(capsys, "status", "--function-name", "nope", "--dlq-url", dlq)
    assert "event source: no such function: nope" in status.out, status
