"""A module's file name is used once in the package, so the name says which module it is; the
one exception (docs/development.md, "Code layout"): a `cli/` module that runs a command may
share its name with the `ops/` module whose work it shows."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import dlq_replay
import pytest

PACKAGE = Path(dlq_replay.__file__).parent


def command_modules() -> set[str]:
    """The module names of `cli/` that run a command (the command table's own list)."""
    from dlq_replay.cli.main import COMMANDS

    return {command.module for command in COMMANDS.values()}


def shared_names(root: Path, commands: set[str]) -> dict[str, list[str]]:
    """File names used by more than one module under `root`, but for the rule's exception."""
    homes: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            homes[path.name].append(path.parent.relative_to(root).as_posix())
    return {
        name: folders
        for name, folders in homes.items()
        if len(folders) > 1
        and not (sorted(folders) == ["cli", "ops"] and name.removesuffix(".py") in commands)
    }


def test_no_module_file_name_is_used_twice() -> None:
    assert shared_names(PACKAGE, command_modules()) == {}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ([("cli", "peek"), ("ops", "peek")], {}),
        ([("cli", "pacing"), ("ops", "pacing")], {"pacing.py": ["cli", "ops"]}),
        ([("breaker", "worker"), ("local", "worker")], {"worker.py": ["breaker", "local"]}),
        ([("cli", "peek"), ("ops", "peek"), ("sqs", "peek")], {"peek.py": ["cli", "ops", "sqs"]}),
        ([("cli", "__init__"), ("ops", "__init__")], {}),
    ],
)
def test_the_check_sees_a_shared_name(
    tmp_path: Path, files: list[tuple[str, str]], expected: dict[str, list[str]]
) -> None:
    for folder, stem in files:
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / f"{stem}.py").write_text("")

    assert shared_names(tmp_path, {"peek"}) == expected
