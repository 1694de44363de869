"""Every relative link in README.md and docs/*.md, and every `docs/...` mention in the code, its
help text and the docs, points at a file (and a section, where it names one) that exists."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.sar import slug  # noqa: E402  (tools/ is a package of the repository only)

DOCUMENTS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
# Where code, its --help text and comments may name a page of docs/.
SOURCES = [
    ROOT / "template.yaml",
    ROOT / "Makefile",
    ROOT / "samconfig.toml",
    ROOT / "pyproject.toml",
    *(
        path
        for folder in ("layers", "functions", "tools", "bench", "tests", "examples", "release")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".yaml", ".yml", ".toml", ".md", ".txt"}
        or path.name == "Makefile"
    ),
]
FENCED = re.compile(r"^ {0,3}```.*?^ {0,3}```[^\n]*$", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)
# `docs/page.md`, optionally with `#anchor` or a section named in quotes after a comma:
# docs/design.md, 'What happens to one record'.
MENTION = re.compile(
    r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w-]+)|,\s*(?:(')([^'\n]+)'|(\")([^\"\n]+)\"))?"
)
SELF = Path(__file__).resolve()


def _prose(text: str) -> str:
    """Markdown without its fenced code blocks (a `#` there is a comment, not a heading)."""
    return FENCED.sub("", text)


def anchors(text: str) -> set[str]:
    """GitHub's anchors for a Markdown file's headings, repeats numbered as GitHub does."""
    seen: Counter[str] = Counter()
    result = set()
    for heading in HEADING.findall(_prose(text)):
        base = slug(heading)
        result.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return result


def section_names(text: str) -> set[str]:
    return {_name(heading) for heading in HEADING.findall(_prose(text))}


def _name(heading: str) -> str:
    return heading.replace("`", "").strip().lower()


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def dead_links(document: Path) -> list[str]:
    """The relative links of one Markdown file that lead nowhere."""
    text = INLINE_CODE.sub("", _prose(document.read_text(encoding="utf-8")))
    dead = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:, ...
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        if not resolved.exists():
            dead.append(f"{target}: no file {_shown(resolved)}")
        elif anchor and (
            resolved.suffix != ".md" or anchor not in anchors(resolved.read_text("utf-8"))
        ):
            dead.append(f"{target}: no section #{anchor} in {_shown(resolved)}")
    return dead


def dead_mentions(source: Path) -> list[str]:
    """The `docs/...` mentions of one file whose page or section does not exist."""
    dead = []
    for line_number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        for match in MENTION.finditer(line):
            page, anchor = ROOT / "docs" / match.group(1), match.group(2)
            section = match.group(4) or match.group(6)
            where = f"{_shown(source)}:{line_number}: {match.group(0)}"
            if not page.exists():
                dead.append(f"{where}: no file")
                continue
            text = page.read_text(encoding="utf-8")
            if anchor and anchor not in anchors(text):
                dead.append(f"{where}: no section #{anchor}")
            if section and _name(section) not in section_names(text):
                dead.append(f"{where}: no section named {section!r}")
    return dead


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_section(document: Path) -> None:
    assert dead_links(document) == []


def test_every_docs_mention_names_a_page_and_section_that_exist() -> None:
    sources = [path for path in [*SOURCES, *DOCUMENTS] if path.resolve() != SELF]
    mentions = [m for path in sources for m in MENTION.finditer(path.read_text("utf-8"))]
    assert len(mentions) > 10  # the check sees the mentions
    assert [dead for path in sources for dead in dead_mentions(path)] == []


def test_nothing_points_at_the_brief_the_project_does_not_ship() -> None:
    brief = "DESIGN" + ".md"
    sources = [path for path in [*SOURCES, *DOCUMENTS] if path.resolve() != SELF]
    assert [str(path.relative_to(ROOT)) for path in sources if brief in path.read_text()] == []


def test_a_dead_link_a_dead_anchor_and_a_dead_mention_are_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "LICENSE").write_text("MIT-0\n")
    (tmp_path / "docs" / "design.md").write_text("# d\n\n## What happens to one record\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# t\n\n## A `real` section\n\n## A `real` section\n\n"
        "[ok](#a-real-section-1) [ok](design.md#what-happens-to-one-record) [ok](../LICENSE)\n"
        "[gone](nope.md) [gone](design.md#nope) [gone](#a-real-section-2)\n"
        "```\n[in code](nope.md)\n```\n"
        "docs/design.md, 'What happens to one record' docs/design.md#the-safety-net\n"
        "docs/nope.md docs/design.md, 'No such section' docs/design.md#nope\n",
        encoding="utf-8",
    )
    links, mentions = dead_links(page), dead_mentions(page)  # mentions: of the real docs/
    assert [line.split(":")[0] for line in links] == [
        "nope.md",
        "design.md#nope",
        "#a-real-section-2",
    ]
    assert [line.rsplit(": ", 1)[1] for line in mentions] == [
        "no file",
        "no section named 'No such section'",
        "no section #nope",
    ]
