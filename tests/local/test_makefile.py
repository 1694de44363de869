"""The Makefile finds its Python by itself: python3.13 of any patch (PATH or pyenv) for the
toolchain, any Python 3.11+ for the demo, and one line saying what to install otherwise; the
demo's venv is made without a pip of its own and filled by pips side by side."""

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
    for name in (
        "requirements/dev.lock",
        "requirements/demo.lock",
        "requirements/wheels.html",
        "pyproject.toml",
    ):
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


# A stand-in for python3 and pip: records each call, makes a venv a folder with a copy of
# itself, records the path entry it is asked to write, and as pip records the requirements it
# was given (a -r file's lines, then the rest), marked `wheels` when given the wheel links and
# no index. It fails for FAILING, and given the links when NO_WHEELS is 1.
FAKE_PYTHON = r"""#!/bin/bash
case "$1 $2" in
  "-c "*pip.__version__*) exit "$OLD_PIP" ;;
  "-c "*sqs_dlq_replay.pth*) echo "path entry ${@: -1}" >> "$CALLS"; exit 0 ;;
  "-c "*) exit 0 ;;
  "-m venv") mkdir -p "${@: -1}/bin" && cp "$0" "${@: -1}/bin/python"
    echo "$(basename "$0") $*" >> "$CALLS"; exit 0 ;;
esac
requirements=()
source=index
while [ $# -gt 0 ]; do
  case "$1" in
    -r) requirements+=($(cat "$2")); shift ;;
    -e) requirements+=("-e $2"); shift ;;
    --find-links) [[ "$2" == */requirements/wheels.html ]] && source=wheels; shift ;;
  esac
  shift
done
(IFS=,; echo "pip $source ${requirements[*]}") >> "$CALLS"
[[ $source != wheels || $NO_WHEELS != 1 ]] && [[ " ${requirements[*]} " != *" $FAILING "* ]]
"""
LOCK = ["botocore==1", "moto==5", "boto3==1", "rich==15", "six==1"]  # biggest wheel first


def install_demo_venv(
    tmp_path: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`make .venv-demo/.installed` with the fake python3 (the result, calls in order)."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "python3").write_text(FAKE_PYTHON)
    (fake / "python3").chmod(0o755)
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "demo.lock").write_text("# pinned\n" + "\n".join(LOCK) + "\n")
    (tmp_path / "requirements" / "wheels.html").touch()
    calls = tmp_path / "calls"
    variables = {"CALLS": str(calls), "OLD_PIP": "0", "FAILING": "none", "NO_WHEELS": "0", **env}
    result = make(tmp_path, ".venv-demo/.installed", path=f"{fake}:/usr/bin:/bin", env=variables)
    return result, calls.read_text().splitlines() if calls.exists() else []


def pip_runs(calls: list[str], source: str) -> list[list[str]]:
    """The requirements of each pip run from `source` (wheels or index), in order."""
    prefix = f"pip {source} "
    return [call.removeprefix(prefix).split(",") for call in calls if call.startswith(prefix)]


def test_the_demo_venv_has_no_pip_and_its_lock_is_dealt_out_to_pips_side_by_side(
    tmp_path: Path,
) -> None:
    result, calls = install_demo_venv(tmp_path)

    assert result.returncode == 0, result.stderr
    assert calls[0] == "python3 -m venv --without-pip .venv-demo"
    # From the wheel links alone, the lock's lines dealt back and forth: 0 1 1 0 0.
    assert sorted(pip_runs(calls, "wheels")) == sorted(
        [["botocore==1", "rich==15", "six==1"], ["moto==5", "boto3==1"]]
    )
    assert pip_runs(calls, "index") == []
    # The package itself: a path entry to its source, no build.
    assert calls[-1] == f"path entry {tmp_path}/layers/replay"
    assert (tmp_path / ".venv-demo" / ".installed").exists()


def test_with_a_pip_older_than_22_3_the_demo_venv_gets_its_own(tmp_path: Path) -> None:
    result, calls = install_demo_venv(tmp_path, OLD_PIP="1")

    assert result.returncode == 0, result.stderr
    assert calls[0] == "python3 -m venv .venv-demo"
    assert sorted(name for run in pip_runs(calls, "wheels") for name in run) == sorted(LOCK)


def test_where_the_wheel_links_fail_each_pip_tries_again_through_the_index(
    tmp_path: Path,
) -> None:
    result, calls = install_demo_venv(tmp_path, NO_WHEELS="1")

    assert result.returncode == 0, result.stderr
    assert sorted(pip_runs(calls, "index")) == sorted(pip_runs(calls, "wheels"))
    assert sorted(name for run in pip_runs(calls, "index") for name in run) == sorted(LOCK)
    assert result.stderr.count("make: trying again through the package index") == 2
    assert (tmp_path / ".venv-demo" / ".installed").exists()


def test_one_failing_pip_fails_the_demo_venv_after_all_have_ended(tmp_path: Path) -> None:
    result, calls = install_demo_venv(tmp_path, FAILING="moto==5")

    assert result.returncode != 0
    assert len(pip_runs(calls, "wheels")) == 2
    assert pip_runs(calls, "index") == [["moto==5", "boto3==1"]]  # only the failed one again
    assert not (tmp_path / ".venv-demo" / ".installed").exists()
