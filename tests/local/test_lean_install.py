"""A plain `pip install sqs-dlq-replay` (no extra: no moto) runs every operator command, and
`--json` never needs rich; `dlq-replay --help` imports neither boto3 nor rich. Each command runs
in a fresh process with moto (and rich) made unimportable by a `PYTHONPATH` folder whose
package of that name raises ImportError, as on a machine where it is not installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dlq_replay.cli.demo import install_hint

from .support import clean_env, dlq_replay_command

PREFIX = "dlq-replay: error: "


@pytest.fixture
def missing(tmp_path: Path) -> Path:
    """A PYTHONPATH folder in which moto and rich cannot be imported."""
    for name in ("moto", "rich"):
        package = tmp_path / name
        package.mkdir()
        (package / "__init__.py").write_text(f"raise ImportError('no module named {name}')\n")
    return tmp_path


def run(missing: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*dlq_replay_command(), *args],
        env=clean_env(PYTHONPATH=str(missing), AWS_DEFAULT_REGION="us-east-1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("command", ["status", "peek", "redrive", "export", "plan", "worker"])
def test_help_without_moto_or_rich(missing: Path, command: str) -> None:
    result = run(missing, command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: dlq-replay {command}")


def test_plan_json_without_moto_or_rich(missing: Path) -> None:
    result = run(missing, "plan", "--json", "--base", "10", "--max-attempts", "2")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["settings"]["base_seconds"] == 10
    assert len(report["attempts"]) == 2


def test_the_fake_packages_really_are_missing(missing: Path) -> None:
    # The test above would prove nothing if the folder did not hide the installed packages.
    result = subprocess.run(
        [sys.executable, "-c", "import rich"],
        env=clean_env(PYTHONPATH=str(missing)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "no module named rich" in result.stderr


def test_demo_without_moto_says_how_to_install_it_in_one_line(missing: Path) -> None:
    result = run(missing, "demo", "--plain", "--messages", "5")
    assert result.returncode == 2  # a missing extra is a usage error, in every command
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    root = Path(__file__).resolve().parents[2]  # this checkout
    assert line == (
        f"{PREFIX}the demo needs moto, from the `demo` extra: in {root} run `make demo`, or "
        "pip install -e '.[demo]'"
    )


# What moto's `server` extra adds to moto[sqs] (the `demo` extra), hidden the same way: the
# demo's emulator must serve SQS without any of it.
SERVER_EXTRA_ONLY = (
    "flask",
    "flask_cors",
    "cfnlint",
    "docker",
    "sympy",
    "joserfc",
    "jsonpath_ng",
    "graphql",
    "openapi_spec_validator",
    "py_partiql_parser",
    "aws_xray_sdk",
    "antlr4",
)


@pytest.mark.slow
def test_the_demo_runs_on_moto_sqs_alone(tmp_path: Path) -> None:
    for name in SERVER_EXTRA_ONLY:
        package = tmp_path / name
        package.mkdir()
        (package / "__init__.py").write_text(f"raise ImportError('no module named {name}')\n")

    result = run(tmp_path, "demo", "--plain", "--messages", "5", "--seed", "1")

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_install_hint_from_a_checkout(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    package = tmp_path / "layers" / "replay" / "dlq_replay"
    package.mkdir(parents=True)
    assert install_hint(package) == f"in {tmp_path} run `make demo`, or pip install -e '.[demo]'"


@pytest.mark.parametrize(
    "relative",
    [
        "lib/python3.13/site-packages/dlq_replay",  # installed from PyPI or a wheel
        "layers/replay/dlq_replay",  # the same tree without the project around it
    ],
)
def test_install_hint_when_installed(tmp_path: Path, relative: str) -> None:
    package = tmp_path / relative
    package.mkdir(parents=True)
    assert install_hint(package) == "pip install 'sqs-dlq-replay[demo]'"


# -- start-up: what `dlq-replay --help` imports ----------------------------------------------

_IMPORTED = """
import contextlib, io, sys
from dlq_replay.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
heavy = ("boto3", "botocore", "rich", "moto", "aws_lambda_powertools", "dlq_replay.ops")
print(" ".join(sorted(name for name in heavy if name in sys.modules)))
"""


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"]], ids=repr)
def test_the_command_line_starts_without_boto3_or_rich(argv: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORTED, *argv],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_a_command_still_imports_what_it_needs() -> None:
    # The check above can fail: the same probe sees boto3 once a command is parsed.
    result = subprocess.run(
        [sys.executable, "-c", _IMPORTED, "status", "--help"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "boto3" in result.stdout.split()


def test_output_cut_short_by_the_reader_is_no_traceback(missing: Path) -> None:
    # `dlq-replay plan --json | head -1`: the pipe closes while the command still writes.
    with subprocess.Popen(
        [*dlq_replay_command(), "plan", "--json", "--max-attempts", "100"],
        env=clean_env(PYTHONPATH=str(missing)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()  # long before the command writes (its start-up alone takes more)
        stderr = process.stderr.read()
        code = process.wait(timeout=60)
    assert "Traceback" not in stderr
    assert code == 141


# -- pip's plain path: `pip install .` into a user's own venv ---------------------------------


@pytest.mark.slow
def test_pip_install_of_the_checkout_gives_the_command_compiled(tmp_path: Path) -> None:
    """Users who install the operator CLI into a venv of their own use pip, not uv or the
    Makefile: `pip install .` builds the package (setuptools, pyproject.toml) and installs the
    `dlq-replay` command with its modules compiled. --no-deps: `--help` and `--version` need
    none of the dependencies (above), so the test fetches only the build backend."""
    venv = tmp_path / "venv"
    root = Path(__file__).resolve().parents[2]
    # The venv without a pip of its own (ensurepip is most of the time): the pip of the Python
    # it is made from installs into it (`pip --python`).
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    pip = [str(base), "-m", "pip", "--python", str(venv / "bin" / "python")]
    install = subprocess.run(
        [*pip, "install", "--quiet", "--disable-pip-version-check", "--no-deps", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert install.returncode == 0, install.stderr

    script = venv / "bin" / "dlq-replay"
    version = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert version.stdout.startswith("dlq-replay ")
    packages = list(venv.glob("lib/python3*/site-packages/dlq_replay"))
    assert len(packages) == 1
    assert list(packages[0].glob("cli/__pycache__/main.*.pyc"))
