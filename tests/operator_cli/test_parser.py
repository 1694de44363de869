"""Every command refuses a wrong value at parse time, in one line with exit code 2, and its
help shows every option's default and range."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from dlq_replay import __version__
from dlq_replay.cli.main import build_parser
from dlq_replay.cli.worker import WORKER_OPTIONS
from dlq_replay.core.settings import SETTINGS

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


@pytest.mark.parametrize("command", ["status", "peek", "plan"])
def test_json_output_never_needs_rich(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sqs: SQSClient,
    queues: Queues,
    command: str,
) -> None:
    park(sqs, queues.operator, ["one"])
    monkeypatch.setitem(sys.modules, "rich", None)  # any import of rich fails
    argv = {
        "status": ["status", "--json", *queues.options()],
        "peek": ["peek", "operator", "--json", *queues.options()],
        "plan": ["plan", "--json"],
    }[command]

    result = run_cli(capsys, *argv)

    assert result.code == 0, result
    assert json.loads(result.out)


@pytest.mark.parametrize("argv", [["--help"], ["plan", "--help"], ["worker", "--help"]], ids=str)
def test_help_and_version_show_no_default(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    result = run_cli(capsys, *argv)
    assert result.code == 0
    lines = [line for line in result.out.splitlines() if re.match(r"\s+(-h|--version)\b", line)]
    assert lines, result.out
    for line in lines:
        assert "default" not in line, line


def test_worker_has_an_option_for_every_setting() -> None:
    worker = subcommands()["worker"]
    by_dest = {a.dest: a for a in worker._actions if a.help != argparse.SUPPRESS}
    for setting in SETTINGS:
        action = by_dest[setting.variable]
        # The worker's own name for the serverless kinds (--kind, ...), else the table's; the
        # table's name then works too, unlisted in --help.
        assert action.option_strings == [WORKER_OPTIONS.get(setting.variable, setting.option)]
        hidden = [a for a in worker._actions if a.dest == setting.variable and a is not action]
        if setting.variable in WORKER_OPTIONS:
            assert [a.option_strings for a in hidden] == [[setting.option]]
            assert all(a.help == argparse.SUPPRESS for a in hidden)
        else:
            assert hidden == []
        assert action.default is None  # the environment decides what is not given
        assert setting.help in (action.help or "")
        assert f"${setting.variable}" in (action.help or "")


def test_plan_takes_the_short_and_the_long_names(capsys: pytest.CaptureFixture[str]) -> None:
    short = run_cli(capsys, "plan", "--json", "--base", "5", "--cap", "20", "--multiplier", "3")
    long = run_cli(
        capsys,
        "plan",
        "--json",
        "--backoff-base-seconds",
        "5",
        "--backoff-cap-seconds",
        "20",
        "--backoff-multiplier",
        "3",
    )
    assert short.code == long.code == 0
    assert json.loads(short.out)["attempts"] == json.loads(long.out)["attempts"]


# An option's help ends with one parenthesis: its range or rule, then its default, or
# "(required)"; neither a range nor "default" appears elsewhere in it.
HELP_END = re.compile(r"\((?:(?P<rule>[^()]*); )?(?:default: [^()]+|required)\)$")
RANGE = re.compile(r"(?<![\w.-])\d+-\d+(?![\w-])")


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_option_shows_its_range_and_default_one_way(name: str) -> None:
    parser = subcommands()[name]
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        text = " ".join((formatter._get_help_string(action) or "").split())
        end = HELP_END.search(text)
        where = f"{name} {action.option_strings[0]}: {text!r}"
        assert end is not None, where
        before = text[: end.start()]
        assert "default" not in before, where
        assert not RANGE.search(before), where
        bounds: str | None = getattr(action.type, "range_text", None)
        if bounds:
            assert end.group("rule") == bounds or bounds in (end.group("rule") or ""), where


def test_the_form_check_sees_the_old_forms() -> None:
    """The two ways the help wrote them before: a range and a default each their own way."""
    for old in (
        "concurrent pollers (1-64, default 1)",
        "messages to show (default 10) (1-100)",
        "long-poll wait of each receive, 0-20 (default: 1)",
        "turn it off (by default it is on) (default: off)",
    ):
        end = HELP_END.search(old)
        before = old[: end.start()] if end else old
        assert end is None or "default" in before or RANGE.search(before), old


@pytest.mark.parametrize("old", ["--base", "--multiplier", "--cap"])
def test_plan_names_the_backoff_options_as_the_worker_does(
    capsys: pytest.CaptureFixture[str], old: str
) -> None:
    """One name each, the worker's; plan's old short names still work, unlisted."""
    plan, worker = run_cli(capsys, "plan", "--help"), run_cli(capsys, "worker", "--help")
    for name in ("--backoff-base-seconds", "--backoff-multiplier", "--backoff-cap-seconds"):
        assert name in plan.out
        assert name in worker.out
    assert not re.search(rf"{old}\b(?!-)", plan.out.replace("--backoff-", "")), plan.out
    assert run_cli(capsys, "plan", "--json", old, "7").code == 0


def test_help_links_the_sections_themselves_not_the_moved_stubs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A link to a section of docs/ in any --help names a heading above the page's "Sections that
    moved" (the stubs left for old links)."""
    from tools.sar import slug

    root = Path(__file__).resolve().parents[2]
    seen = []
    for name in sorted(subcommands()):
        text = " ".join(run_cli(capsys, name, "--help").out.split())
        for page, anchor in re.findall(r"docs/([\w.-]+\.md)#([\w-]+)", text):
            body = (
                (root / "docs" / page).read_text(encoding="utf-8").split("## Sections that moved")
            )
            headings = re.findall(r"^#{1,6} +(.+?) *$", body[0], re.MULTILINE)
            assert anchor in {slug(h) for h in headings}, f"{name}: docs/{page}#{anchor}"
            seen.append(anchor)
    assert len(seen) >= 3  # the check sees the links
