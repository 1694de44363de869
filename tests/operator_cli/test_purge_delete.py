"""`dlq-replay purge` and `dlq-replay delete` in moto: behind the queue's name typed back,
audited, the delete's tally adding up, its receives within the receive budget; the console's
way in (the same run functions, origin `console`)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.cli.console import Connection
from dlq_replay.cli.console.jobs import Job, run_purge
from dlq_replay.cli.errors import CommandError
from dlq_replay.cli.main import build_parser
from dlq_replay.ops.queueinfo import queue_info

from .stack import deploy
from .support import Queues, assert_one_line_error, depth, make_queues, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.moto_only(reason="a stack with its table, deployed into moto")


@pytest.fixture
def shop(aws: None) -> dict[str, str]:
    cfn: CloudFormationClient = boto3.client("cloudformation")
    return deploy(cfn, "shop")


def name_of(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def audit_of(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    listed = run_cli(capsys, "audit", "--stack", "shop", "--json")
    assert listed.code == 0, listed
    actions: list[dict[str, Any]] = listed.json()["actions"]
    return actions


def test_purge_with_the_name_typed_back_empties_the_queue_and_is_audited(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient
) -> None:
    operator = shop["OperatorQueueUrl"]
    park(sqs, operator, ["a", "b", "c"])

    purged = run_cli(capsys, "purge", "operator", "--stack", "shop", "--confirm", name_of(operator))

    assert purged.code == 0, purged
    assert f"purged {name_of(operator)}: about 3 messages" in purged.out
    assert depth(sqs, operator) == (0, 0)
    (action,) = audit_of(capsys)
    assert action["command"] == "purge"
    assert action["outcome"] == "ok"
    assert action["queues"] == [operator]
    assert action["selection_size"] == 3
    assert action["tally"]["purged"] == 3


def test_a_wrong_name_purges_nothing_in_one_line_and_the_attempt_is_recorded(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient
) -> None:
    operator = shop["OperatorQueueUrl"]
    park(sqs, operator, ["a"])

    refused = run_cli(capsys, "purge", "operator", "--stack", "shop", "--confirm", "orders")

    assert_one_line_error(refused, 2, "--confirm 'orders' is not the name", name_of(operator))
    assert depth(sqs, operator) == (1, 0)
    (action,) = audit_of(capsys)
    assert action["outcome"] == "error"
    assert "nothing was done" in action["error"]


def test_purge_without_confirm_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str]
) -> None:
    assert_one_line_error(run_cli(capsys, "purge", "operator", "--stack", "shop"), 2, "--confirm")


def test_a_purge_in_progress_is_one_line(
    capsys: pytest.CaptureFixture[str], queues: Queues, command_sqs: SQSClient
) -> None:
    """SQS's rule: one purge of a queue every 60 seconds (moto does not keep it: the client
    is answered as SQS answers)."""

    def refuse(**_: Any) -> tuple[Any, dict[str, Any]]:
        error = {"Code": "AWS.SimpleQueueService.PurgeQueueInProgress", "Message": "Only one"}
        return types.SimpleNamespace(status_code=403), {"Error": error}

    answer: Any = refuse  # a before-call handler's answer stands in for SQS's
    command_sqs.meta.events.register("before-call.sqs.PurgeQueue", answer)

    result = run_cli(
        capsys, "purge", "operator", *queues.options(), "--confirm", name_of(queues.operator)
    )

    assert_one_line_error(result, 1, "a purge is already in progress", "every 60 seconds")


def test_delete_removes_only_the_selection_and_the_tally_adds_up(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient
) -> None:
    operator = shop["OperatorQueueUrl"]
    park(sqs, operator, ["keep1", "keep2", "keep3"])
    park(sqs, operator, ["drop1", "drop2"], reason="invalid-count")

    deleted = run_cli(
        capsys,
        "delete",
        "operator",
        "--stack",
        "shop",
        "--confirm",
        name_of(operator),
        "--filter-reason",
        "invalid-count",
        "--wait-seconds",
        "0",
        "--json",
    )

    assert deleted.code == 0, deleted
    tally = deleted.json()
    assert (tally["deleted"], tally["skipped"], tally["failed"], tally["seen"]) == (2, 3, 0, 5)
    assert tally["adds_up"] is True
    assert depth(sqs, operator) == (3, 0)  # the others given back at once
    bodies = {
        m["Body"]
        for m in sqs.receive_message(QueueUrl=operator, MaxNumberOfMessages=10)["Messages"]
    }
    assert bodies == {"keep1", "keep2", "keep3"}
    (action,) = audit_of(capsys)
    assert action["command"] == "delete"
    assert action["request"]["reasons"] == ["invalid-count"]
    assert action["tally"]["deleted"] == 2
    assert action["selection_size"] == 5


def test_delete_limit_deletes_at_most_n(
    capsys: pytest.CaptureFixture[str], queues: Queues, sqs: SQSClient
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(5)])

    deleted = run_cli(
        capsys,
        "delete",
        "operator",
        *queues.options(),
        "--confirm",
        name_of(queues.operator),
        "--limit",
        "2",
        "--wait-seconds",
        "0",
    )

    assert deleted.code == 0, deleted
    assert depth(sqs, queues.operator) == (3, 0)


def test_delete_on_a_dlq_keeps_the_receive_budget(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    """A DLQ whose messages arrive with 3 receives and move on at 3: one look would move them
    to the operator queue, so the delete refuses before any receive (docs/design.md, "Operator
    tools")."""
    wired = make_queues(sqs, "tight", main_max_receive_count=3, dlq_max_receive_count=3)
    park(sqs, wired.dlq, ["a"])

    refused = run_cli(capsys, "delete", "dlq", *wired.options(), "--confirm", name_of(wired.dlq))

    assert_one_line_error(refused, 1, "leaves no receive to spare")
    assert depth(sqs, wired.dlq) == (1, 0)
    assert depth(sqs, wired.operator) == (0, 0)


def test_the_console_purge_is_recorded_as_the_console_s_with_the_cli_s_request(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient
) -> None:
    """The console purges through `ops` (no run function, no Namespace): its records say
    `console`, with the options `dlq-replay purge` records, by the same names."""
    operator = shop["OperatorQueueUrl"]
    dlq = shop["DeadLetterQueueUrl"]
    park(sqs, dlq, ["a"])
    typed = run_cli(capsys, "purge", "dlq", "--stack", "shop", "--confirm", name_of(dlq))
    assert typed.code == 0, typed
    park(sqs, operator, ["b"])
    args = build_parser(["console"]).parse_args(["console", "--stack", "shop"])
    job = Job("purge", name_of(operator), "purge")

    connection, queue = Connection.from_args(args), queue_info(sqs, operator)

    with pytest.raises(CommandError, match="is not the name of the queue"):
        run_purge(connection, queue, "x", job)
    run_purge(connection, queue, queue.name, job)

    console, wrong, cli = audit_of(capsys)
    assert (console["origin"], console["command"], console["outcome"]) == ("console", "purge", "ok")
    assert console["request"].keys() == cli["request"].keys() == {"queue", "confirm", "stack"}
    assert cli["origin"] == "cli"
    assert console["tally"]["purged"] == 1
    assert console["queues"] == [operator]
    assert wrong["outcome"] == "error"
    assert "is not the name of the queue" in wrong["error"]
    assert depth(sqs, operator) == (0, 0)
