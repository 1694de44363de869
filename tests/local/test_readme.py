"""Every demo command that README.md and docs/ document (`make demo ...` and `dlq-replay demo
...`, in fenced blocks and in inline code) runs as written in the venv `make demo` makes
(.venv-demo: the package and its `demo` extra, requirements/demo.lock), not in the development
venv, which has every extra: a demo that needs a package the `demo` extra lacks fails here."""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO_VENV = ROOT / ".venv-demo"
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"`([^`]+)`")
COMMAND = re.compile(r"^(?:\$ )?((?:make demo|dlq-replay demo)\b.*)$")
# A word that stands for a value (`--outage-seconds N`): such a span shows an option, not a
# command to run.
PLACEHOLDER = re.compile(r"^[A-Z]+$")
# The longest outage a command runs with as documented: the outage rows of reliability.md
# (60 s, each run about 100 s) run with this one instead, appended (the last value counts): a
# staged outage too short to open the breaker and pause the run (with 30 % transient failures
# as well, a 2 s outage opened it once: 31 s; 1 s: 9 s).
SHORT_OUTAGE = ["--outage-seconds", "1"]
LONGEST_OUTAGE_SECONDS = 10
BOUND_SECONDS = 120


def documented_commands(*documents: Path) -> list[str]:
    """The demo command lines of `documents`, each once, in the order they first appear."""
    found: list[str] = []
    for document in documents:
        text = document.read_text(encoding="utf-8")
        lines = [line for block in FENCED.findall(text) for line in block.splitlines()]
        lines += [" ".join(span.split()) for span in INLINE.findall(FENCED.sub("", text))]
        for line in lines:
            match = COMMAND.match(line.strip())
            if match is None:
                continue
            command = match.group(1).split(" #")[0].strip()
            if not any(PLACEHOLDER.match(word) for word in shlex.split(command)):
                found.append(command)
    return list(dict.fromkeys(found))


def demo_arguments(command: str) -> tuple[str, ...]:
    """The options `dlq-replay demo` runs with for `command` (`make demo DEMO_ARGS=...` too)."""
    words = shlex.split(command.split("|", maxsplit=1)[0])
    if words[:2] == ["make", "demo"]:
        options = dict(word.split("=", 1) for word in words[2:])
        assert set(options) <= {"DEMO_ARGS"}, command
        return tuple(shlex.split(options.get("DEMO_ARGS", "")))
    return tuple(words[2:])


def distinct_runs(commands: list[str]) -> list[str]:
    """One command for each set of demo options (a `make demo` line when there is one: it runs
    the Makefile too)."""
    chosen: dict[tuple[str, ...], str] = {}
    for command in commands:
        arguments = demo_arguments(command)
        if arguments not in chosen or command.startswith("make "):
            chosen[arguments] = command
    return list(chosen.values())


def as_run(command: str) -> str:
    """`command`, with a shorter outage when the one it stages is longer than
    LONGEST_OUTAGE_SECONDS."""
    arguments = demo_arguments(command)
    outages = [
        int(arguments[index + 1])
        for index, word in enumerate(arguments[:-1])
        if word == "--outage-seconds"
    ]
    if not outages or max(outages) <= LONGEST_OUTAGE_SECONDS:
        return command
    head, bar, rest = command.partition("|")
    shorter = [*arguments, *SHORT_OUTAGE]
    if head.startswith("make "):
        return f"make demo DEMO_ARGS={shlex.quote(shlex.join(shorter))} {bar}{rest}".strip()
    return f"dlq-replay demo {shlex.join(shorter)} {bar}{rest}".strip()


COMMANDS = documented_commands(*DOCUMENTS)
RUNS = distinct_runs(COMMANDS)


def test_the_documents_show_the_demo_commands_this_test_runs() -> None:
    readme = documented_commands(ROOT / "README.md")
    assert "make demo" in readme
    assert any("DEMO_ARGS=" in command for command in readme), readme
    # Both kinds, the help and the console samples of docs/running-locally.md are among them.
    assert any(demo_arguments(command) == ("--kind", "eventbridge") for command in COMMANDS)
    assert any(demo_arguments(command) == ("--help",) for command in COMMANDS)
    assert any("| tail" in command for command in COMMANDS)
    assert len(RUNS) < len(COMMANDS)  # the same run documented twice runs once


def test_the_same_options_written_two_ways_are_one_run() -> None:
    assert demo_arguments('make demo DEMO_ARGS="--kind eventbridge"') == ("--kind", "eventbridge")
    assert distinct_runs(
        ["dlq-replay demo --kind eventbridge", 'make demo DEMO_ARGS="--kind eventbridge"']
    ) == ['make demo DEMO_ARGS="--kind eventbridge"']
    assert as_run("dlq-replay demo --outage-seconds 60 --plain").endswith(
        "--plain --outage-seconds 1"
    )
    assert as_run("dlq-replay demo --outage-seconds 5") == "dlq-replay demo --outage-seconds 5"
    assert as_run('make demo DEMO_ARGS="--outage-seconds 60" | tail -1') == (
        "make demo DEMO_ARGS='--outage-seconds 60 --outage-seconds 1' | tail -1"
    )


@pytest.fixture(scope="session")
def demo_venv() -> Path:
    """.venv-demo as `make demo` makes it (`make .venv-demo/.installed`: remade only when its
    lock or pyproject.toml changed), once across pytest-xdist's workers (a file lock)."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    lock_path = ROOT / "build" / "demo-venv.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["make", "--no-print-directory", ".venv-demo/.installed"],
            cwd=ROOT,
            env=demo_env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    return DEMO_VENV


def demo_env() -> dict[str, str]:
    """The environment of a newcomer's shell (proxies, certificates, pyenv kept), with
    .venv-demo/bin first on PATH (where the README says `dlq-replay` is) and nothing of the
    development venv or of an AWS setup."""
    left_out = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in left_out and not name.startswith("AWS_")
    }
    path = os.environ.get("PATH", "").split(os.pathsep)
    outside = [entry for entry in path if not entry.startswith(str(ROOT / ".venv"))]
    env["PATH"] = os.pathsep.join([str(DEMO_VENV / "bin"), *outside])
    return env


@pytest.mark.slow
@pytest.mark.parametrize("command", RUNS, ids=RUNS)
def test_a_documented_demo_command_runs_in_the_demo_venv(demo_venv: Path, command: str) -> None:
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", as_run(command)],
        cwd=ROOT,
        env=demo_env(),
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output
    assert "failed" not in result.stderr, output  # e.g. `PutEvents failed: 500`
    if demo_arguments(command) == ("--help",):
        assert result.stdout.startswith("usage: dlq-replay demo")
    else:
        assert re.search(r"demo complete in .*, not yet done 0, lost 0", result.stdout), output
