"""Error paths: one line on stderr, exit 1 (failed) or 2 (usage), never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.stub import Stubber
from dlq_replay.cli import deployment as cli_deployment

from .support import REGION, Queues, assert_one_line_error, run_cli

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-operator"


def test_no_credentials(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))

    for argv in (["status", "--operator-queue-url", QUEUE], ["peek", QUEUE]):
        assert_one_line_error(run_cli(capsys, *argv), 1, "no AWS credentials found")


def test_unknown_profile_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    result = run_cli(capsys, "status", "--operator-queue-url", QUEUE, "--profile", "ghost")
    assert_one_line_error(result, 2, "ghost")


def test_missing_queue(capsys: pytest.CaptureFixture[str], sqs: SQSClient) -> None:
    for argv in (
        ["status", "--operator-queue-url", QUEUE],
        ["peek", QUEUE],
        ["redrive", "--operator-queue-url", QUEUE, "--main-queue-url", QUEUE + "-main"],
    ):
        assert_one_line_error(run_cli(capsys, *argv), 1, "queue not found")


@pytest.fixture
def denied(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    client = boto3.client("sqs", region_name=REGION)

    def make_client(args: argparse.Namespace, service: str) -> Any:
        return client

    monkeypatch.setattr(cli_deployment, "make_client", make_client)
    with Stubber(client) as stubber:
        yield stubber


def test_access_denied(capsys: pytest.CaptureFixture[str], denied: Stubber) -> None:
    denied.add_client_error(
        "get_queue_attributes",
        service_error_code="AccessDenied",
        service_message="User is not authorized to perform: sqs:getqueueattributes",
        http_status_code=403,
    )

    result = run_cli(capsys, "peek", QUEUE)

    assert_one_line_error(result, 1, "access denied (GetQueueAttributes)", "not authorized")


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str], queues: Queues) -> None:
    for argv in (
        ["status", "--no-such-option"],
        ["peek"],
        ["peek", "operator", "--limit", "101"],
        ["peek", "operator", "--wait-seconds", "21"],
        ["redrive", "--hide-seconds", "0"],
        ["plan", "--base"],
        ["no-such-command"],
    ):
        result = run_cli(capsys, *argv)
        assert result.code == 2, argv
        assert "Traceback" not in result.err
