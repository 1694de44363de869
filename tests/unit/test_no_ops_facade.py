"""`dlq_replay.ops` re-exports nothing: every caller imports the module that defines what it
uses, so a name has one import path, and a command imports only the modules it uses (the
redrive's start-up)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import dlq_replay.ops
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("layers", "tests", "bench", "tools")
OPS = Path(dlq_replay.ops.__file__).parent
SUBMODULES = frozenset(path.stem for path in OPS.glob("*.py")) - {"__init__"}

# What a redrive never needs: other commands' modules and the breaker's.
NOT_FOR_A_REDRIVE = (
    "dlq_replay.ops.archive",
    "dlq_replay.ops.export",
    "dlq_replay.ops.importing",
    "dlq_replay.ops.peek",
    "dlq_replay.ops.plan",
    "dlq_replay.ops.status",
    "dlq_replay.ops.pause",
    "dlq_replay.ops.s3archive",
    "dlq_replay.breaker",
)


def through_the_package(source: str) -> list[str]:
    """The imports of `source` that take a name from the `dlq_replay.ops` package itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "dlq_replay":
            found += [f"from dlq_replay import {a.name}" for a in node.names if a.name == "ops"]
        elif isinstance(node, ast.ImportFrom) and node.module == "dlq_replay.ops":
            found += [
                f"from dlq_replay.ops import {a.name}"
                for a in node.names
                if a.name not in SUBMODULES
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"import {a.name} as {a.asname}"
                for a in node.names
                if a.name == "dlq_replay.ops" and a.asname
            ]
    return found


def python_files() -> list[Path]:
    return sorted(
        path
        for top in SOURCES
        for path in (ROOT / top).rglob("*.py")
        if ".aws-sam" not in path.parts and "__pycache__" not in path.parts
    )


@pytest.mark.parametrize(
    "source",
    [
        "from dlq_replay import ops\n",
        "from dlq_replay import audit, ops\n",
        "def f():\n    from dlq_replay import ops\n",
        "from dlq_replay.ops import QueueInfo\n",
        "import dlq_replay.ops as ops\n",
    ],
)
def test_the_check_sees_an_import_through_the_package(source: str) -> None:
    assert through_the_package(source)


@pytest.mark.parametrize(
    "source",
    [
        "from dlq_replay.ops.queueinfo import QueueInfo\n",
        "from dlq_replay.ops import peek\n",
        "from dlq_replay import audit\n",
        "import dlq_replay.ops.queueinfo\n",
    ],
)
def test_the_check_lets_a_defining_module_import_pass(source: str) -> None:
    assert through_the_package(source) == []


def test_no_module_imports_names_through_the_ops_package() -> None:
    files = python_files()
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in files
        if (found := through_the_package(path.read_text(encoding="utf-8")))
    }

    assert len(files) > 100
    assert offenders == {}


def test_the_ops_package_defines_nothing() -> None:
    tree = ast.parse((OPS / "__init__.py").read_text(encoding="utf-8"))

    assert ast.get_docstring(tree)
    assert len(tree.body) == 1


def test_the_redrive_command_imports_no_other_commands_modules() -> None:
    code = (
        "import sys; from dlq_replay.cli.main import build_parser; build_parser(['redrive']); "
        "import dlq_replay.ops.queueinfo, dlq_replay.ops.clientmove; "
        "print('\\n'.join(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()

    assert "dlq_replay.ops.clientmove" in loaded
    assert not [name for name in loaded if name.startswith(NOT_FOR_A_REDRIVE)]
