"""Checks before work: what can be judged before a message is received is refused at once, in
one line (usage errors exit 2, the rest 1)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from .support import Queues, assert_one_line_error, depth, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize("command", ["peek", "redrive", "export"])
def test_an_unknown_jmespath_function_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], queues: Queues, command: str
) -> None:
    where = ["operator"] if command != "redrive" else []
    for expression, fragment in (
        ("foo(bar)", "not a JMESPath function: foo()"),
        ("length(a, b)", "length() takes 1 argument(s), got 2"),
    ):
        result = run_cli(capsys, command, *where, *queues.options(), "--match", expression)
        assert_one_line_error(result, 2, "--match", fragment)


def test_an_empty_age_window_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["m"])
    for command in (["peek", "operator"], ["redrive"]):
        result = run_cli(
            capsys, *command, *queues.options(), "--older-than", "2h", "--newer-than", "1h"
        )
        assert_one_line_error(result, 2, "--older-than 2h and --newer-than 1h select nothing")
    assert depth(sqs, queues.operator) == (1, 0)  # nothing received
    window = run_cli(
        capsys, "peek", "operator", *queues.options(), "--older-than", "1h", "--newer-than", "2h"
    )
    assert window.code == 0, window


def worker(capsys: pytest.CaptureFixture[str], queues: Queues, main: str) -> object:
    return run_cli(
        capsys,
        "worker",
        "--dlq-url",
        queues.dlq,
        "--main-queue-url",
        main,
        "--operator-queue-url",
        queues.operator,
        "--start-up-patience",
        "0",
        "--region",
        "us-east-1",
    )


def test_the_worker_refuses_a_main_queue_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.dlq, ["m"], reason=None, count=None)
    missing = queues.main.rsplit("/", 1)[0] + "/no-such-queue"

    result = worker(capsys, queues, missing)

    assert_one_line_error(result, 1, "the main queue does not exist", "no-such-queue")  # type: ignore[arg-type]
    assert depth(sqs, queues.dlq) == (1, 0)  # nothing received


def test_the_worker_refuses_a_fifo_main_queue_behind_a_standard_dlq(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    fifo = sqs.create_queue(QueueName="main.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]

    result = worker(capsys, queues, fifo)

    assert_one_line_error(result, 1, "is a FIFO queue and the DLQ is standard")  # type: ignore[arg-type]


def test_the_worker_names_a_missing_dlq_first_when_the_main_queue_is_missing_too(
    capsys: pytest.CaptureFixture[str], queues: Queues
) -> None:
    """The DLQ and the destinations are checked at once; the DLQ's error is the one shown,
    as when the checks came one after the other."""
    base = queues.main.rsplit("/", 1)[0]
    missing = replace(queues, dlq=f"{base}/no-such-dlq")

    result = worker(capsys, missing, f"{base}/no-such-main")

    assert_one_line_error(result, 1, "no-such-dlq")  # type: ignore[arg-type]
    assert "no-such-main" not in str(result)
