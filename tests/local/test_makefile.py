"""The Makefile finds its Python by itself: python3.13 of any patch (PATH or pyenv) for the
toolchain, any Python 3.11+ for the demo, and one line saying what to install otherwise; uv
makes every venv (the one on PATH, or fetched from PyPI once by the Makefile itself), and a
first `make demo` prints one short line of what it does, not its recipe."""

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


def make(
    tmp_path: Path, *args: str, path: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`make ARGS` on a copy of the Makefile (with empty lock files unless written before),
    under PATH=`path` and the variables of `env`."""
    (tmp_path / "requirements").mkdir(exist_ok=True)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for name in ("requirements/dev.lock", "requirements/demo.lock", "pyproject.toml"):
        if not (tmp_path / name).exists():
            (tmp_path / name).touch()
    home = os.environ.get("HOME", "/root")
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=tmp_path,
        env={"HOME": home, "PATH": path, "PYENV_ROOT": "/nonexistent", **(env or {})},
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


def test_a_venv_first_on_path_is_never_taken_for_the_python(tmp_path: Path) -> None:
    """An activated venv (here the one running the tests) is first on PATH; the recipes that
    remake a venv remove it first, so PY and DEMO_PY are the interpreters it was made from."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a venv")
    venv_bin = Path(sys.prefix) / "bin"
    result = make(
        tmp_path,
        "--eval",
        "show: ; @echo $(PY) $(DEMO_PY)",
        "show",
        path=f"{venv_bin}:{Path(sys.base_prefix) / 'bin'}:/usr/bin:/bin",
    )
    assert result.returncode == 0, result.stderr
    pythons = result.stdout.split()
    assert len(pythons) == 2, result.stdout
    assert not any(python.startswith(sys.prefix) for python in pythons), pythons


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


# Stand-ins for uv and python3 (and python3.13): each records its calls in $CALLS. `uv venv
# ... DIR` makes DIR/bin/python; `uv pip install` fails when $UV_FAILS is 1; `uv --version` says
# $UV_SAYS. python3's `-m pip install ... --target DIR uv==X` puts a copy of the fake uv in
# DIR/bin, as the real wheel does; its `-c` checks (the Makefile's Python version) pass, naming
# itself as the interpreter.
FAKE_UV = r"""#!/bin/bash
if [ "$1" = --version ]; then echo "uv $UV_SAYS"; exit 0; fi
echo "uv $*" >> "$CALLS"
case "$1 $2" in
  "venv "*) mkdir -p "${@: -1}/bin" && touch "${@: -1}/bin/python" ;;
  "pip install") [ "$UV_FAILS" != 1 ] ;;
esac
"""
FAKE_PYTHON = r"""#!/bin/bash
if [ "$1" = -c ]; then
  case "$2" in *_base_executable*) echo "$0" ;; esac
  exit 0
fi
echo "$(basename "$0") $*" >> "$CALLS"
if [ "$1 $2 $3" = "-m pip install" ]; then
  [ "$PIP_FAILS" = 1 ] && exit 1
  while [ $# -gt 0 ]; do [ "$1" = --target ] && target=$2; shift; done
  mkdir -p "$target/bin" && cp "$FAKE_UV" "$target/bin/uv"
fi
"""


def fake_tools(tmp_path: Path, *, uv_on_path: bool, **env: str) -> tuple[str, dict[str, str], Path]:
    """A PATH with the fake python3 and python3.13 (and uv, `uv_on_path`), the variables
    the fakes read, and the file of their calls."""
    fake = tmp_path / "fake"
    fake.mkdir()
    uv = tmp_path / "fake-uv"
    uv.write_text(FAKE_UV)
    uv.chmod(0o755)
    for name in ("python3", "python3.13"):
        (fake / name).write_text(FAKE_PYTHON)
        (fake / name).chmod(0o755)
    if uv_on_path:
        shutil.copy(uv, fake / "uv")
    calls = tmp_path / "calls"
    variables = {
        "CALLS": str(calls),
        "FAKE_UV": str(uv),
        "UV_SAYS": "0.13.8",
        "UV_FAILS": "0",
        "PIP_FAILS": "0",
    }
    return f"{fake}:/usr/bin:/bin", {**variables, **env}, calls


def calls_of(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def test_the_demo_venv_is_made_by_uv_compiled_with_the_package_editable(tmp_path: Path) -> None:
    path, env, calls = fake_tools(tmp_path, uv_on_path=True)

    result = make(tmp_path, ".venv-demo/.installed", path=path, env=env)

    assert result.returncode == 0, result.stderr
    fake = tmp_path / "fake"
    assert calls_of(calls) == [
        f"uv venv --quiet --python {fake}/python3 .venv-demo",
        "uv pip install --quiet --python .venv-demo/bin/python --no-deps --verify-hashes -e . "
        "--compile-bytecode -r requirements/demo.lock",
    ]
    assert (tmp_path / ".venv-demo" / ".installed").exists()
    # Quiet: one short line of what it does, no recipe echoed.
    assert result.stdout.splitlines() == [
        "make: installing the demo's environment (requirements/demo.lock) into .venv-demo with uv"
    ]


def test_the_toolchain_venv_is_python_313_not_compiled_ahead(tmp_path: Path) -> None:
    path, env, calls = fake_tools(tmp_path, uv_on_path=True)

    result = make(tmp_path, "venv", path=path, env=env)

    assert result.returncode == 0, result.stderr
    fake = tmp_path / "fake"
    assert calls_of(calls) == [
        f"uv venv --quiet --python {fake}/python3.13 .venv",
        "uv pip install --quiet --python .venv/bin/python --no-deps --verify-hashes -e . "
        "-r requirements/dev.lock",
    ]


def test_without_uv_the_makefile_fetches_it_from_pypi_once(tmp_path: Path) -> None:
    path, env, calls = fake_tools(tmp_path, uv_on_path=False)

    first = make(tmp_path, ".venv-demo/.installed", path=path, env=env)
    second = make(tmp_path, "venv", path=path, env=env)

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    fetches = [call for call in calls_of(calls) if " -m pip " in call]
    assert fetches == [
        "python3 -m pip install --quiet --disable-pip-version-check --no-deps "
        "--only-binary=:all: --target build/uv uv==0.13.8"
    ]
    assert first.stdout.splitlines()[0] == (
        "make: fetching uv 0.13.8 from PyPI into build/uv (once; or put uv on your PATH)"
    )
    made = [call.split()[-1] for call in calls_of(calls) if call.startswith("uv venv")]
    assert made == [".venv-demo", ".venv"]  # by the uv it fetched


def test_where_pip_cannot_fetch_uv_one_line_says_what_to_install(tmp_path: Path) -> None:
    path, env, _ = fake_tools(tmp_path, uv_on_path=False, PIP_FAILS="1")

    result = make(tmp_path, ".venv-demo/.installed", path=path, env=env)

    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if not line.startswith("make: ***")]
    assert errors == [
        f"make: could not fetch uv with {tmp_path}/fake/python3's pip: install uv "
        "(docs.astral.sh/uv) or pip for that Python"
    ]
    assert not (tmp_path / "build" / "uv").exists()
    assert not (tmp_path / ".venv-demo").exists()


def test_a_uv_older_than_0_5_on_path_is_not_used(tmp_path: Path) -> None:
    path, env, calls = fake_tools(tmp_path, uv_on_path=True, UV_SAYS="0.4.30")

    result = make(tmp_path, ".venv-demo/.installed", path=path, env=env)

    assert result.returncode == 0, result.stderr
    assert any(call.endswith("--target build/uv uv==0.13.8") for call in calls_of(calls))
    assert (tmp_path / "build" / "uv" / "bin" / "uv").exists()


def test_a_failed_install_leaves_no_venv_taken_for_made(tmp_path: Path) -> None:
    path, env, _ = fake_tools(tmp_path, uv_on_path=True, UV_FAILS="1")

    result = make(tmp_path, ".venv-demo/.installed", path=path, env=env)

    assert result.returncode != 0
    assert not (tmp_path / ".venv-demo" / ".installed").exists()


@pytest.mark.parametrize("code", [0, 3])
def test_make_demo_says_where_dlq_replay_is_and_keeps_the_demos_exit_code(
    tmp_path: Path, code: int
) -> None:
    bin_dir = tmp_path / ".venv-demo" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "dlq-replay").write_text(f'#!/bin/sh\necho "ran $*"\nexit {code}\n')
    (bin_dir / "dlq-replay").chmod(0o755)
    path, env, _ = fake_tools(tmp_path, uv_on_path=True)

    result = make(
        tmp_path, "-o", ".venv-demo/.installed", "demo", "DEMO_ARGS=--plain", path=path, env=env
    )

    assert (result.returncode == 0) is (code == 0), result.stderr
    assert result.stdout.splitlines() == [
        "ran demo --plain",
        "make: the web console on demo queues (parked samples): make console-demo (Ctrl-C stops "
        "it)",
        "make: `dlq-replay` is .venv-demo/bin/dlq-replay; `source .venv-demo/bin/activate` puts "
        "it on your PATH",
    ]
