"""One version in one place: `dlq_replay.__version__`, which pyproject.toml reads, and which
the template's SemanticVersion and CHANGELOG.md must match (`release.py check-version`, part
of `make lint`)."""

from __future__ import annotations

import datetime
import shutil
from importlib.metadata import version as installed_version
from pathlib import Path

import dlq_replay
import pytest

from tools.release import (
    CHANGELOG,
    NESTED_EXAMPLE,
    PYPROJECT,
    TEMPLATE,
    VERSION_FILE,
    ReleaseError,
    main,
    package_version,
    set_version,
    template_version,
    version_problems,
)

from .conftest import ROOT


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The four files that carry the version, laid out as in the repository."""
    for path in (VERSION_FILE, TEMPLATE, CHANGELOG, PYPROJECT, NESTED_EXAMPLE):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    return tmp_path


def test_the_repository_agrees_with_itself() -> None:
    assert version_problems() == []
    assert package_version() == dlq_replay.__version__ == template_version()
    assert installed_version("sqs-dlq-replay") == dlq_replay.__version__


def test_a_template_of_another_version_fails(copy: Path) -> None:
    template = copy / TEMPLATE
    template.write_text(
        template.read_text().replace(
            f"SemanticVersion: {package_version()}", "SemanticVersion: 9.9.9"
        )
    )
    assert version_problems(copy) == [
        f"template.yaml: SemanticVersion 9.9.9 differs from __version__ {package_version()}"
    ]


def test_a_version_without_its_changelog_section_fails(copy: Path) -> None:
    init = copy / VERSION_FILE
    init.write_text(init.read_text().replace(package_version(), "7.0.0"))
    problems = version_problems(copy)
    assert "CHANGELOG.md: no `## [7.0.0]` section" in problems
    assert "examples/nested-app.yaml: its SemanticVersion is not 7.0.0" in problems
    assert any("SemanticVersion" in p for p in problems)


def test_a_second_version_in_pyproject_fails(copy: Path) -> None:
    pyproject = copy / PYPROJECT
    pyproject.write_text(
        pyproject.read_text().replace('dynamic = ["version"]', 'version = "0.1.0"')
    )
    assert version_problems(copy) == [
        'pyproject.toml: the version must be dynamic = ["version"], read from it'
    ]


def test_set_version_writes_every_place_and_dates_the_unreleased_notes(copy: Path) -> None:
    changelog = copy / CHANGELOG
    changelog.write_text(
        changelog.read_text().replace("## [Unreleased]\n", "## [Unreleased]\n\n- A fix.\n")
    )
    set_version("0.2.0", copy, today=datetime.date(2026, 12, 1))

    assert version_problems(copy) == []
    assert package_version(copy) == template_version(copy) == "0.2.0"
    assert "SemanticVersion: 0.2.0" in (copy / NESTED_EXAMPLE).read_text()
    text = changelog.read_text()
    assert "## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n\n- A fix.\n" in text
    set_version("0.2.0", copy)  # again: nothing new
    assert changelog.read_text() == text


def test_set_version_refuses_what_is_not_a_semantic_version(copy: Path) -> None:
    with pytest.raises(ReleaseError, match="not a semantic version"):
        set_version("1.2", copy)
    assert version_problems(copy) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["set-version", "v1.0.0"],
        ["set-version", "01.0.0"],
        [],
        ["share"],
        ["share", "--public", "--private"],
        ["share", "--account", "12345"],
        ["share", "--org", "org-1"],
        ["sar-template", "built.yaml", "-o", "x", "--readme", "r", "--source-code-url", "http://x"],
    ],
)
def test_the_command_line_refuses_bad_input_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_check_version_exits_0_on_the_repository(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-version"]) == 0
    assert "agrees" in capsys.readouterr().out
