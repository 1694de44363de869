"""The `make demo` commands of the README and docs/, copied from their fenced blocks, run as
written (with a small message count appended) and account for every message."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
SMALL = ["--messages", "20", "--seed", "1"]


def fenced_make_demo_lines(*documents: Path) -> list[str]:
    lines = [
        line.strip()
        for document in documents
        for block in FENCED.findall(document.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if line.strip().startswith("make demo")
    ]
    return list(dict.fromkeys(lines))


DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))


def test_the_readme_shows_the_demo_with_and_without_options() -> None:
    lines = fenced_make_demo_lines(ROOT / "README.md")
    assert any("DEMO_ARGS=" in line for line in lines), lines
    assert any(shlex.split(line, comments=True) == ["make", "demo"] for line in lines), lines


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("line", fenced_make_demo_lines(*DOCUMENTS))
def test_a_readme_make_demo_line_runs_as_written(line: str) -> None:
    words = shlex.split(line, comments=True)
    options = {word.split("=", 1)[0]: word.split("=", 1)[1] for word in words[2:]}
    assert words[:2] == ["make", "demo"], line
    assert set(options) <= {"DEMO_ARGS"}, line
    demo_args = shlex.join([*shlex.split(options.get("DEMO_ARGS", "")), *SMALL])
    # `make demo` as written, on the environment these tests run in: the Makefile is told its
    # demo environment is this one, already installed (-o: not remade).
    environment = Path(sys.prefix)
    result = subprocess.run(
        [
            "make",
            "--no-print-directory",
            f"DEMO_VENV={environment}",
            "-o",
            f"{environment}/.installed",
            "demo",
            f"DEMO_ARGS={demo_args}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "demo complete" in result.stdout
    assert "sent 20, " in result.stdout
    assert "not yet done 0, lost 0" in result.stdout
    assert "0:20 (first deliveries)" in result.stdout
