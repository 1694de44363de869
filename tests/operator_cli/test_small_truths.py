"""Small things an operator reads in an incident, each said truly: a selection that matched
nothing is not an empty queue, a non-finite number is not "below 0", a missing queue and a
missing setting are named with what to pass, every option in `--help` is one the command
takes, a usage error points at the command's own help, a `--to source` move that could move
nothing fails, and `--help` says the receive-count rule once and points at the docs."""

from __future__ import annotations

import pytest

from .support import Queues, assert_one_line_error, park, run_cli, string

NO_WAIT = ("--wait-seconds", "0")
MISSING = "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue"


def test_a_selection_that_matches_nothing_is_not_an_empty_queue(
    capsys: pytest.CaptureFixture[str], sqs: object, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a", "b", "c"], extra={"tenant": string("acme")})  # type: ignore[arg-type]
    result = run_cli(
        capsys, "peek", "operator", *queues.options(), *NO_WAIT, "--where", "tenant=café"
    )
    assert result.code == 0, result
    assert "0 of 3 messages selected" in result.out
    assert "no visible messages" not in result.out


@pytest.mark.parametrize("value", ["nan", "1e309", "inf", "-inf"])
def test_a_rate_that_is_not_a_finite_number_says_so(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    result = run_cli(capsys, "redrive", f"--rate={value}")
    assert_one_line_error(result, 2, f"not a finite number: {value!r}")
    assert "above 0" not in result.err


@pytest.mark.usefixtures("sqs")
@pytest.mark.parametrize(
    "argv",
    [
        ["peek", MISSING],
        ["status", "--operator-queue-url", MISSING],
        ["redrive", "--operator-queue-url", MISSING, "--main-queue-url", MISSING + "-main"],
        ["export", MISSING, "--file", "unused.jsonl"],
    ],
    ids=["peek", "status", "redrive", "export"],
)
def test_a_missing_queue_is_named(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert_one_line_error(run_cli(capsys, *argv), 1, "queue not found", MISSING)


def test_a_missing_setting_names_its_option(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "worker", "--dlq-url", MISSING)
    assert_one_line_error(
        result, 2, "OPERATOR_QUEUE_URL=<missing>", "pass --operator-queue-url or set"
    )


def test_plan_takes_the_main_queue_its_help_speaks_of(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "plan", "--main-queue-url", MISSING + ".fifo", "--json")
    assert result.code == 0, result
    assert result.json()["settings"]["fifo"] is True


@pytest.mark.parametrize(
    "argv",
    [["peek", "operator"], ["redrive"], ["worker", "--dlq-url", MISSING], ["plan"]],
    ids=["peek", "redrive", "worker", "plan"],
)
def test_an_unknown_option_points_at_the_commands_own_help(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    command = argv[0]
    result = run_cli(capsys, *argv, "--no-such-option")
    assert_one_line_error(result, 2, "--no-such-option", f"(see: dlq-replay {command} --help)")


@pytest.mark.usefixtures("sqs")
def test_a_move_to_source_that_moves_nothing_fails(
    capsys: pytest.CaptureFixture[str], sqs: object, queues: Queues
) -> None:
    park(sqs, queues.operator, ["parked by the replay", "another"])  # type: ignore[arg-type]
    result = run_cli(
        capsys, "redrive", *queues.options(), *NO_WAIT, "--to", "source", "--client-side"
    )
    assert result.code == 1, result
    assert "nothing could be moved: 2 messages skipped (2 no-source-queue)" in result.err


def test_no_breaker_does_not_read_as_breaker_off_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = " ".join(run_cli(capsys, "worker", "--help").out.split())
    (entry,) = [part for part in text.split("--no-breaker ")[1:] if "breaker" in part][:1]
    assert "default: off" not in entry[:200]
    assert "default: breaker on" in entry[:200]


@pytest.mark.parametrize("command", ["redrive", "export", "peek"])
def test_help_says_the_receive_count_rule_once_and_points_at_the_docs(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    text = " ".join(run_cli(capsys, command, "--help").out.split())
    assert text.count("Every receive raises a message's receive count") == 1
    assert "ListDeadLetterSourceQueues" not in text
    rule = "docs/operator-inspect.md#the-receive-count-rule-why-peek-and-redrive-may-refuse"
    assert rule in text
