"""A malformed endpoint or region, from an option or the environment, in every command that
calls AWS: one line naming the value and the form expected, exit 2, never botocore's
`ValueError: Invalid endpoint` traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import assert_one_line_error, run_cli

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-operator"


def command_args(command: str, tmp_path: Path) -> list[str]:
    """The least each command needs to reach its first AWS client."""
    archive = tmp_path / "archive.jsonl"
    archive.write_text("")
    return {
        "worker": ["worker", "--dlq-url", QUEUE, "--main-queue-url", QUEUE + "-main"],
        "status": ["status", "--operator-queue-url", QUEUE],
        "pause": ["pause", "--stack", "shop"],
        "resume": ["resume", "--stack", "shop"],
        "peek": ["peek", QUEUE],
        "redrive": ["redrive", "--operator-queue-url", QUEUE, "--main-queue-url", QUEUE + "-m"],
        "export": ["export", QUEUE, "--file", str(tmp_path / "out.jsonl")],
        "import": ["import", str(archive), "--to", QUEUE],
        "plan": ["plan", "--stack", "shop"],
    }[command]


COMMANDS = ["worker", "status", "pause", "resume", "peek", "redrive", "export", "import", "plan"]


@pytest.mark.parametrize("value", ["localhost:5077", "", "notaurl", "http://", "http://a b"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_malformed_endpoint_option_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, value: str
) -> None:
    result = run_cli(capsys, *command_args(command, tmp_path), "--endpoint-url", value)
    assert_one_line_error(result, 2, f"--endpoint-url: {value!r}", "expected http://")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("AWS_ENDPOINT_URL", "notaurl"),
        ("AWS_ENDPOINT_URL_SQS", "localhost:5077"),
        ("AWS_ENDPOINT_URL", "http://"),
    ],
)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_malformed_endpoint_variable_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
    variable: str,
    value: str,
) -> None:
    monkeypatch.setenv(variable, value)
    if command in {"pause", "resume", "plan"} and variable == "AWS_ENDPOINT_URL_SQS":
        # Their first client is CloudFormation's: the SQS variable is not theirs to read.
        monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", value)
        variable = "AWS_ENDPOINT_URL_CLOUDFORMATION"
    result = run_cli(capsys, *command_args(command, tmp_path))
    assert_one_line_error(result, 2, f"{variable}={value!r}", "expected http://")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_mistyped_region_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    result = run_cli(capsys, *command_args(command, tmp_path), "--region", "us east-1")
    assert_one_line_error(result, 2, "--region: 'us east-1'", "e.g. us-east-1")


@pytest.mark.parametrize("command", ["status", "peek", "redrive", "export"])
def test_a_mistyped_region_in_the_environment_is_one_line(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us east-1")
    monkeypatch.delenv("AWS_REGION", raising=False)
    result = run_cli(capsys, *command_args(command, tmp_path))
    assert_one_line_error(result, 2, "us east-1", "AWS_DEFAULT_REGION")
