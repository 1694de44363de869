"""The layer ships exactly the modules the replay function (and the consumer toolkit users
import from the layer) can import: layers/replay/modules.txt is that closure, computed from
the sources with ast, and the layer's Makefile copies that list and nothing else."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tools.check_build import LAYER_LIST, LAYER_MODULES, imported_names, layer_closure


def test_the_layer_list_is_what_the_function_imports() -> None:
    assert list(LAYER_MODULES) == layer_closure()


def test_what_only_the_local_worker_uses_stays_out() -> None:
    for local_only in ("dlq_replay/breaker/worker_side.py", "dlq_replay/sqs/sources.py"):
        assert local_only not in LAYER_MODULES
    assert not [
        name for name in LAYER_MODULES if name.startswith(("dlq_replay/cli/", "dlq_replay/ops/"))
    ]
    # Reached only through imports inside functions (the replay's deliveries).
    assert "dlq_replay/targets/deliverer.py" in LAYER_MODULES


def test_imports_inside_functions_count_and_type_checking_ones_do_not() -> None:
    source = """
from typing import TYPE_CHECKING
import dlq_replay.a
from dlq_replay.b import c
if TYPE_CHECKING:
    from dlq_replay.typing_only import T
else:
    import dlq_replay.otherwise
def f() -> None:
    from dlq_replay.lazy import g
"""
    names = imported_names(source)

    assert {"dlq_replay.a", "dlq_replay.b", "dlq_replay.b.c", "dlq_replay.lazy.g"} <= names
    assert "dlq_replay.otherwise" in names
    assert not [name for name in names if "typing_only" in name]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_layer_makefile_copies_the_list_and_nothing_else(tmp_path: Path) -> None:
    subprocess.run(
        ["make", "--no-print-directory", "-s", "layer-modules", f"ARTIFACTS_DIR={tmp_path}"],
        cwd=LAYER_LIST.parent,
        check=True,
        capture_output=True,
    )
    site = tmp_path / "python"
    copied = sorted(path.relative_to(site).as_posix() for path in site.rglob("*") if path.is_file())

    assert copied == sorted([*LAYER_MODULES, "dlq_replay/py.typed"])
