"""Every command's --help in one form, checked on the argparse objects so that a new option
cannot break it: one label for seconds (SECONDS) and one for counts (N), defaults written one
way (no needless ".0"), closed lists of values one way ("one of: a, b, c"), seconds spelled
one way, and --endpoint-url naming every service the command calls."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest
from dlq_replay.cli.main import build_parser
from dlq_replay.cli.options import SERVICES_CALLED
from dlq_replay.cli.parsing import int_between, one_of, value_text

# Options whose value is a number of seconds without saying so in their name.
SECONDS_OPTIONS = {"--timeout", "--start-up-patience"}
# Integers that are not counts.
NOT_COUNTS = {"--port"}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.Action, str]]:
    """Each listed option of a command, with its help as --help shows it (on one line)."""
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        yield action, " ".join((formatter._get_help_string(action) or "").split())


def is_seconds(action: argparse.Action) -> bool:
    name = action.option_strings[0]
    return name.endswith("-seconds") or name in SECONDS_OPTIONS


def is_count(action: argparse.Action) -> bool:
    """An integer option (a range of integers, or a setting with one) that is not seconds."""
    kind = action.type
    setting = getattr(kind, "setting", None)
    integer = (
        isinstance(kind, int_between)
        or kind is int
        or (setting is not None and isinstance(setting.rule.constraints.get("MaxValue"), int))
    )
    return integer and not is_seconds(action) and action.option_strings[0] not in NOT_COUNTS


COMMANDS = sorted(subcommands())


@pytest.mark.parametrize("name", COMMANDS)
def test_seconds_are_labelled_seconds(name: str) -> None:
    for action, text in options(subcommands()[name]):
        where = f"{name} {action.option_strings[0]}: {action.metavar!r} {text!r}"
        if is_seconds(action):
            assert action.metavar == "SECONDS", where
        else:
            assert action.metavar != "SECONDS", where
        # A number followed by "seconds", "sec" or "secs" is spelled "s", as elsewhere.
        assert not re.search(r"\d\s*(seconds?|secs?)\b", text), where


@pytest.mark.parametrize("name", COMMANDS)
def test_counts_are_labelled_n(name: str) -> None:
    for action, text in options(subcommands()[name]):
        if is_count(action):
            assert action.metavar == "N", f"{name} {action.option_strings[0]}: {text!r}"


@pytest.mark.parametrize("name", COMMANDS)
def test_defaults_are_written_one_way(name: str) -> None:
    for action, text in options(subcommands()[name]):
        where = f"{name} {action.option_strings[0]}: {text!r}"
        assert not re.search(r"\b\d+\.0\b(?!\.)", text), where  # 2, not 2.0
        assert not re.search(r"\(default [^:]", text), where  # "default: 2", not "default 2"
        if isinstance(action.default, float):
            assert f"default: {value_text(action.default)}" in text, where


@pytest.mark.parametrize("name", COMMANDS)
def test_closed_value_lists_are_written_one_way(name: str) -> None:
    for action, text in options(subcommands()[name]):
        where = f"{name} {action.option_strings[0]}: {text!r}"
        choices = action.choices or getattr(action.type, "choices", ())
        if choices:
            assert one_of([str(choice) for choice in choices]) in text, where
        assert " | " not in text, where
        assert "{" not in str(action.metavar or ""), where  # argparse's {a,b} form
        assert not re.search(r"\bone of (?!:)", text), where


def test_a_list_in_another_form_is_seen() -> None:
    """The checks above would pass on nothing if their patterns never matched."""
    assert re.search(r"\bone of (?!:)", "one of DEBUG, INFO")
    assert re.search(r"\b\d+\.0\b(?!\.)", "(default: 2.0)")
    assert re.search(r"\d\s*(seconds?|secs?)\b", "(default: 60 seconds)")
    assert value_text(2.0) == "2"
    assert value_text(0.05) == "0.05"
    assert value_text(None) == "none"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_endpoint_help_names_every_service_the_command_calls(name: str) -> None:
    parser = subcommands()[name]
    found = {action.option_strings[0]: text for action, text in options(parser)}
    if "--endpoint-url" not in found:
        assert name == "demo"  # its own emulator, no endpoint to name
        return
    text = found["--endpoint-url"]
    for service in SERVICES_CALLED[name]:
        assert service in text, f"{name}: {service} not in {text!r}"
    # What the options themselves say the command reaches, named too.
    implied = {
        "--stack": "CloudFormation",
        "--function-name": "Lambda",
        "--audit-table": "DynamoDB",
        "--s3-uri": "S3",
        "--dlq-url": "SQS",
        "--main-queue-url": "SQS",
    }
    for option, service in implied.items():
        if option in found:
            assert service in text, f"{name} has {option}: {service} not in {text!r}"


def test_a_new_command_must_say_which_services_it_calls() -> None:
    parser = argparse.ArgumentParser(prog="dlq-replay brand-new")
    from dlq_replay.cli.options import add_aws_options

    with pytest.raises(KeyError):
        add_aws_options(parser)
