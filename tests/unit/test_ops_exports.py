"""`dlq_replay.ops` re-exports its modules' public names lazily: each name is its module's own
object, and a command imports only the modules it uses (the redrive's start-up)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import dlq_replay.ops as ops
import pytest

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


def test_every_public_name_has_a_home() -> None:
    assert sorted(ops.__all__) == sorted(ops._HOME)


@pytest.mark.parametrize("name", sorted(ops._HOME))
def test_a_name_is_its_modules_own(name: str) -> None:
    home = ops._HOME[name]
    module = importlib.import_module(home if "." in home else f"dlq_replay.ops.{home}")

    assert getattr(ops, name) is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        ops.no_such_name  # noqa: B018 - the attribute access is the test


def test_the_redrive_command_imports_no_other_commands_modules() -> None:
    code = (
        "import sys; from dlq_replay.cli.main import build_parser; build_parser(['redrive']); "
        "import dlq_replay.ops.preflight, dlq_replay.ops.clientmove; "
        "print('\\n'.join(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()

    assert "dlq_replay.ops.clientmove" in loaded
    assert not [name for name in loaded if name.startswith(NOT_FOR_A_REDRIVE)]
