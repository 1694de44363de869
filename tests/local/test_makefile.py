"""The Makefile finds its Python by itself: python3.13 of any patch (PATH or pyenv) for the
toolchain, any Python 3.11+ for the demo, and one line saying what to install otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make(tmp_path: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    """`make ARGS` on a copy of the Makefile (with empty lock files), under PATH=`path`."""
    (tmp_path / "requirements").mkdir(exist_ok=True)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for name in ("requirements/dev.lock", "requirements/demo.lock", "pyproject.toml"):
        (tmp_path / name).touch()
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": path, "PYENV_ROOT": "/nonexistent"}
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_python313_one_line_says_what_to_install(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    make_dir = str(Path(shutil.which("make") or "/usr/bin/make").parent)
    result = make(tmp_path, "venv", path=f"{empty}:{make_dir}:/bin")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if not line.startswith("make: ***")]
    assert errors == [
        "make: Python 3.13 not found (neither python3.13 on PATH nor pyenv's 3.13.x): install "
        "it, e.g. `pyenv install 3.13` or your system's python3.13"
    ]
    assert not (tmp_path / ".venv").exists()


def test_any_python313_on_path_is_found_without_pyenv_version(tmp_path: Path) -> None:
    # The interpreter running these tests is a 3.13 (the toolchain's); its own installation.
    python = Path(sys.base_prefix) / "bin" / "python3.13"
    if not python.exists():
        pytest.skip("no python3.13 installation next to the test interpreter")
    bin_dir = str(python.parent)
    result = make(
        tmp_path,
        "--eval",
        "show: ; @echo PY=$(PY) DEMO=$(DEMO_PY)",
        "show",
        path=f"{bin_dir}:/usr/bin:/bin",
    )
    assert result.returncode == 0, result.stderr
    assert f"PY={bin_dir}/python3.13" in result.stdout
    assert "DEMO=" in result.stdout
    assert "DEMO= " not in result.stdout  # a 3.11+ Python for the demo


def test_sam_build_runs_again_only_when_what_it_reads_changed(tmp_path: Path) -> None:
    """`make test` builds before pytest, and tests/release's `make publish` reuses that build:
    `make build` calls `sam build` (and the import check) only when an input is newer."""
    calls = tmp_path / "calls"
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool, effect in (("sam", "mkdir -p .aws-sam/build"), ("python", "true")):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho {tool} "$@" >> {calls}\n{effect}\n')
        script.chmod(0o755)
    layer_module = tmp_path / "layers" / "replay" / "dlq_replay" / "core" / "backoff.py"
    for name in (
        "template.yaml",
        "samconfig.toml",
        "tools/check_build.py",
        "functions/replay/app.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    layer_module.parent.mkdir(parents=True)
    layer_module.touch()

    def build() -> list[str]:
        # -o: the fake toolchain counts as installed whatever the lock files' times.
        result = make(tmp_path, "-o", ".venv/.installed", "build", path="/usr/bin:/bin")
        assert result.returncode == 0, result.stdout + result.stderr
        return calls.read_text().splitlines()

    assert build() == ["sam build --template-file template.yaml", "python tools/check_build.py"]
    assert len(build()) == 2  # nothing changed: no second build
    later = time.time() + 5
    os.utime(layer_module, (later, later))
    assert len(build()) == 4
