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


@pytest.mark.parametrize("which", ["missing", "directory", "unreadable"])
def test_import_of_a_file_it_cannot_read_says_so_before_asking_aws(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, which: str
) -> None:
    """Was: the audit trail and the queue asked first (an endpoint that never answers: 20 s
    and more), then "no such file"."""
    import os

    from .test_fail_fast import SilentEndpoint

    path = tmp_path / "archive.jsonl"
    if which == "directory":
        path.mkdir()
    elif which == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads a file whatever its mode")
        path.write_text("")
        path.chmod(0)
    silent = SilentEndpoint()
    try:
        queue = f"{silent.url}/123456789012/orders"
        result = run_cli(capsys, "import", str(path), "--to", queue, "--endpoint-url", silent.url)
    finally:
        silent.close()
    reason = {
        "missing": "No such file or directory",
        "directory": "is a directory",
        "unreadable": "Permission denied",
    }[which]
    assert_one_line_error(result, 2, str(path), reason)
    assert silent.requests == 0  # nothing asked of AWS (nor of the audit trail's table)


# A command that needs an extra, with the module the extra brings made unimportable.
MISSING_EXTRA = [
    ("moto", ["demo", "--plain", "--messages", "5"], "the demo needs moto"),
    ("moto", ["console", "--demo"], "the demo needs moto"),
    ("flask", ["console", "--operator-queue-url", QUEUE], "the console needs its extra"),
]


@pytest.mark.parametrize(("module", "argv", "line"), MISSING_EXTRA, ids=str)
def test_a_missing_extra_is_a_usage_error_in_every_command(
    module: str, argv: list[str], line: str
) -> None:
    """One exit code (2, as a usage error: install the extra) wherever an extra is missing;
    the demo said 1, the console 2."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules[sys.argv[1]] = None\n"
        "from dlq_replay.cli.main import main\n"
        "sys.exit(main(sys.argv[2:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, module, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    (error,) = result.stderr.strip().splitlines()
    assert error.startswith("dlq-replay: error: "), error
    assert line in error, error
    assert "install" in error or "make demo" in error, error
