"""docs/development.md's code layout names every module of the package and of tools/, and every
folder of tests/, in its row; and every file it names there exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMED = re.compile(r"`([\w/]+(?:\.py)?)`")


def layout_rows(text: str) -> dict[str, str]:
    """The layout table's rows: first cell (its code, `&nbsp;` dropped) -> the rest."""
    section = text.split("## Code layout", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `") or line.startswith("| &nbsp;"):
            first, rest = line.strip("|").split("|", 1)
            rows[first.replace("&nbsp;", "").strip().strip("`")] = rest
    return rows


def modules(folder: Path) -> set[str]:
    return {path.name for path in folder.glob("*.py") if path.name != "__init__.py"}


def named_in(row: str) -> set[str]:
    return set(NAMED.findall(row))


def layout_problems(text: str, root: Path) -> list[str]:
    rows = layout_rows(text)
    package = root / "layers" / "replay" / "dlq_replay"
    problems = []
    folders = {"tools/": root / "tools"} | {
        f"{init.parent.relative_to(package).as_posix()}/": init.parent
        for init in sorted(package.glob("*/**/__init__.py"))
    }
    for key, folder in folders.items():
        if key not in rows:
            problems.append(f"no row for {key}")
            continue
        named = {name for name in named_in(rows[key]) if name.endswith(".py")}
        problems += [f"{key}{name}: not in its row" for name in sorted(modules(folder) - named)]
        problems += [
            f"{key}{name}: named, does not exist" for name in sorted(named - modules(folder))
        ]
    tests = {path.name for path in (root / "tests").iterdir() if (path / "__init__.py").exists()}
    named_tests = {name.rstrip("/") for name in named_in(rows.get("tests/", ""))}
    problems += [f"tests/{name}/: not in its row" for name in sorted(tests - named_tests)]
    problems += [f"tests/{name}/: named, does not exist" for name in sorted(named_tests - tests)]
    return problems


def test_the_layout_table_names_every_module_and_test_folder() -> None:
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")

    assert layout_problems(text, ROOT) == []
    assert len(layout_rows(text)) > 10  # the table was found


def test_a_missing_module_and_a_stale_one_are_found(tmp_path: Path) -> None:
    package = tmp_path / "layers" / "replay" / "dlq_replay"
    for folder in (package / "core", tmp_path / "tools", tmp_path / "tests" / "unit"):
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    (package / "core" / "backoff.py").write_text("")
    (package / "core" / "new.py").write_text("")
    (tmp_path / "tools" / "chaos.py").write_text("")
    (tmp_path / "tests" / "e2e").mkdir()
    (tmp_path / "tests" / "e2e" / "__init__.py").write_text("")
    text = (
        "## Code layout\n\n| path | what |\n|---|---|\n"
        "| &nbsp;&nbsp;`core/` | `backoff.py`, `gone.py` (was here) |\n"
        "| `tests/` | `unit/` |\n| `tools/` | `chaos.py` |\n\n## Next\n"
    )

    assert layout_problems(text, tmp_path) == [
        "core/new.py: not in its row",
        "core/gone.py: named, does not exist",
        "tests/e2e/: not in its row",
    ]
