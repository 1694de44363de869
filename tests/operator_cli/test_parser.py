"""Every command refuses a wrong value at parse time, in one line with exit code 2, and its
help shows every option's default and range."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

import pytest
from dlq_replay import __version__
from dlq_replay.cli.main import build_parser

from .support import Queues, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

Q = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
WORKER = ["worker", "--dlq-url", Q, "--operator-queue-url", Q]

BAD_INPUTS = [
    [*WORKER, "--batch-size", "11"],
    [*WORKER, "--batch-size", "0"],
    [*WORKER, "--pollers", "0"],
    [*WORKER, "--pollers", "many"],
    [*WORKER, "--wait-seconds", "30"],
    [*WORKER, "--wait-seconds", "-1"],
    [*WORKER, "--log-level", "foo"],
    [*WORKER, "--max-attempts", "0"],
    [*WORKER, "--max-attempts", "101"],
    [*WORKER, "--backoff-base-seconds", "0"],
    [*WORKER, "--backoff-multiplier", "0.5"],
    [*WORKER, "--backoff-cap-seconds", "43201"],
    [*WORKER, "--jitter", "foo"],
    [*WORKER, "--replay-count-attribute", "dlq-replay-park-reason"],
    [*WORKER, "--allowed-source-queue-arns", "not-an-arn"],
    [*WORKER, "--log-message-body", "maybe"],
    [*WORKER, "--main-queue-url", "ftp://x/1/q"],
    ["worker", "--dlq-url", "not a url", "--operator-queue-url", Q],
    ["worker"],
    ["status", "--dlq-url", "x"],
    ["peek", "operator", "--limit", "0"],
    ["peek", "operator", "--limit", "101"],
    ["peek", "operator", "--reserve", "0"],
    ["peek", "operator", "--wait-seconds", "21"],
    ["peek"],
    ["redrive", "--limit", "0"],
    ["redrive", "--rate", "0"],
    ["redrive", "--rate", "nan"],
    ["redrive", "--filter-reason", "bogus"],
    ["redrive", "--hide-seconds", "0"],
    ["redrive", "--poll-seconds", "-1"],
    ["plan", "--max-attempts", "0"],
    ["plan", "--jitter", "foo"],
    ["plan", "--cap", "50000"],
    ["plan", "--base", "x"],
    ["plan", "--multiplier", "inf"],
    ["demo", "--jitter", "foo"],
    ["demo", "--max-attempts", "0"],
    ["demo", "--messages", "-5"],
    ["demo", "--failure-rate", "2"],
    ["demo", "--pollers", "0"],
    ["nonsense"],
    ["--bogus"],
    [],
]


@pytest.mark.parametrize("argv", BAD_INPUTS, ids=" ".join)
def test_every_bad_value_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    result = run_cli(capsys, *argv)
    assert result.code == 2, result
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("dlq-replay: error: "), lines[0]
    assert result.out == ""


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_option_help_shows_its_default(name: str) -> None:
    parser = subcommands()[name]
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        text = formatter._get_help_string(action) or ""
        shown = "required" in text if action.required else "default" in text
        assert shown, f"{name} {action.option_strings[0]}: {text!r}"
        bounds: str | None = getattr(action.type, "range_text", None)
        if bounds:
            assert bounds in text, f"{name} {action.option_strings[0]}: {text!r}"


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_help_never_breaks_a_word_at_a_hyphen(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    result = run_cli(capsys, name, "--help")
    assert result.code == 0
    assert not re.search(r"[A-Za-z]-\n", result.out), result.out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--version")
    assert result.code == 0
    assert result.out.strip() == f"dlq-replay {__version__}"


@pytest.mark.parametrize("command", ["status", "peek", "plan", "redrive"])
def test_without_the_local_extra_one_line_before_any_message_is_touched(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sqs: SQSClient,
    queues: Queues,
    command: str,
) -> None:
    park(sqs, queues.operator, ["untouched"])
    monkeypatch.setitem(sys.modules, "rich", None)  # as after a plain `pip install .`
    argv = {
        "status": ["status", *queues.options()],
        "peek": ["peek", "operator", *queues.options()],
        "redrive": ["redrive", *queues.options()],
        "plan": ["plan"],
    }[command]

    result = run_cli(capsys, *argv)

    assert result.code == 1, result
    assert "Traceback" not in result.err
    assert result.err.strip() == (
        "dlq-replay: error: this command needs rich, from the package's `local` extra: "
        "pip install 'sqs-dlq-replay[local]'"
    )
    (message,) = sqs.receive_message(
        QueueUrl=queues.operator, AttributeNames=["ApproximateReceiveCount"]
    )["Messages"]
    assert message["Attributes"]["ApproximateReceiveCount"] == "1"  # never received before
