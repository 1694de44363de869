"""The layer ships bytecode Lambda can use: tools/check_build.py refuses a module without an
unchecked-hash .pyc for the runtime beside it (the layer's Makefile compiles them)."""

from __future__ import annotations

import py_compile
from pathlib import Path

from tools.check_build import RUNTIME_CACHE_TAG, missing_bytecode


def module(layer: Path, name: str, mode: py_compile.PycInvalidationMode | None) -> None:
    source = layer / "pkg" / f"{name}.py"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("VALUE = 1\n")
    if mode is not None:
        compiled = source.parent / "__pycache__" / f"{name}.{RUNTIME_CACHE_TAG}.pyc"
        py_compile.compile(str(source), cfile=str(compiled), invalidation_mode=mode, doraise=True)


def test_only_unchecked_hash_bytecode_counts(tmp_path: Path) -> None:
    module(tmp_path, "ready", py_compile.PycInvalidationMode.UNCHECKED_HASH)
    module(tmp_path, "timestamped", py_compile.PycInvalidationMode.TIMESTAMP)
    module(tmp_path, "checked", py_compile.PycInvalidationMode.CHECKED_HASH)
    module(tmp_path, "bare", None)

    assert missing_bytecode(tmp_path) == ["pkg/bare.py", "pkg/checked.py", "pkg/timestamped.py"]


def test_the_layer_makefile_compiles_for_the_runtime(root: Path) -> None:
    makefile = (root / "layers" / "replay" / "Makefile").read_text()
    assert "compileall" in makefile
    assert "--invalidation-mode unchecked-hash" in makefile
    assert "PYTHON ?= python3.13" in makefile
