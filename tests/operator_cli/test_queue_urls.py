"""Every queue URL option follows the function's own rule: one line and exit 2 otherwise."""

from __future__ import annotations

import pytest

from .support import run_cli

GOOD = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
LONG_NAME = f"https://sqs.us-east-1.amazonaws.com/123456789012/{'a' * 80}"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["worker", "--dlq-url", "ftp://host/1/q", "--operator-queue-url", GOOD], "--dlq-url"),
        (["status", "--dlq-url", "https://host/1/bad.name"], "--dlq-url"),
        (["status", "--main-queue-url", "sqs.amazonaws.com/1/q"], "--main-queue-url"),
        (["status", "--operator-queue-url", f"{GOOD}\x1b[2J"], "--operator-queue-url"),
        (["peek", "https://host/1/bad.name"], "QUEUE"),
    ],
)
def test_a_bad_queue_url_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    result = run_cli(capsys, *argv)
    assert result.code == 2, result
    assert "Traceback" not in result.err
    assert fragment in result.err
    assert "is not an SQS queue URL" in result.err


def test_an_80_character_queue_name_is_accepted(
    capsys: pytest.CaptureFixture[str], aws: None
) -> None:
    """Accepted by the parser: the command gets as far as asking SQS about the queue."""
    result = run_cli(capsys, "peek", LONG_NAME, "--wait-seconds", "0")
    assert result.code == 1, result
    assert "queue not found" in result.err
