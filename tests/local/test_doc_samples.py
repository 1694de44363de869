"""The command samples of README.md and docs/ are what the commands print: each sits between
markers tools/doc_samples.py rewrites by running it, and `--check` finds none that differs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import doc_samples  # noqa: E402  (tools/ is a package of the repository only)

CONSOLE = re.compile(r"^```console$", re.MULTILINE)


def test_every_console_block_of_the_docs_is_a_generated_sample() -> None:
    loose = []
    for page in doc_samples.PAGES:
        text = page.read_text(encoding="utf-8")
        marked = [match.span() for match in doc_samples.MARKED.finditer(text)]
        for block in CONSOLE.finditer(text):
            if not any(start <= block.start() < end for start, end in marked):
                line = text.count("\n", 0, block.start()) + 1
                loose.append(f"{page.relative_to(ROOT)}:{line}")
    assert loose == [], "console samples not written by tools/doc_samples.py"
    assert len(doc_samples.marked_names(doc_samples.PAGES)) > 20


@pytest.mark.slow
def test_no_sample_differs_from_what_its_command_prints() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "doc_samples.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert result.returncode == 0, f"rerun `python tools/doc_samples.py`:\n{result.stderr}"


def test_a_sample_between_its_markers_is_replaced_and_nothing_else() -> None:
    page = (
        "intro\n<!-- sample: one -->\n```console\n$ old\n```\n<!-- /sample -->\n"
        "between\n<!-- sample: two -->\n<!-- /sample -->\nend\n"
    )
    blocks = {"one": "```console\n$ new\n```\n", "two": "```console\n$ 2\n```\n"}

    assert doc_samples.rewrite(page, blocks) == (
        "intro\n<!-- sample: one -->\n```console\n$ new\n```\n<!-- /sample -->\n"
        "between\n<!-- sample: two -->\n```console\n$ 2\n```\n<!-- /sample -->\nend\n"
    )


def test_what_varies_is_normalised_and_tables_keep_their_shape() -> None:
    def table(age: str, message_id: str) -> str:
        return (
            "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━┳━━━━━━━━━━┓\n"
            "┃ message id                           ┃ age ┃ receives ┃\n"
            "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━╇━━━━━━━━━━┩\n"
            f"│ {message_id} │ {age:>3} │        2 │\n"
            "└──────────────────────────────────────┴─────┴──────────┘\n"
            f'{{"sent_timestamp": 17954{age[0]}6005884, "url": "http://127.0.0.1:4{age[0]}123/q"}}\n'
        )

    first = table("4s", "1f9b7d54-2961-4c1f-9d63-2f4700dd0c3d")
    second = table("39s", "53ebff0f-de9a-49db-bc61-1ee3a043b641")

    shown = [doc_samples.normalise(text, doc_samples._uuid_renamer()) for text in (first, second)]

    assert shown[0] == shown[1]
    assert [len(line) for line in shown[0].splitlines()] == [
        len(line) for line in first.splitlines()
    ]
    assert "│ 00000000-0000-4000-8000-000000000001 │  5s │        2 │" in shown[0]
    assert "127.0.0.1:55077/q" in shown[0]


def test_action_ids_are_normalised_apart_from_message_ids() -> None:
    def output(action: str, message_id: str) -> str:
        return (
            f"moved {message_id}\n"
            f"followed as action {action}: dlq-replay audit --follow {action}\n"
            f'{{"action_id": "{action}"}}\n'
        )

    first = output("5db786b34c92411db11ffcd50498dc89", "1f9b7d54-2961-4c1f-9d63-2f4700dd0c3d")
    second = output("b063d225e0f842e582cc6fa338017dc2", "53ebff0f-de9a-49db-bc61-1ee3a043b641")

    shown = [doc_samples.normalise(text, doc_samples._uuid_renamer()) for text in (first, second)]

    assert shown[0] == shown[1]
    assert shown[0] == (
        "moved 00000000-0000-4000-8000-000000000001\n"
        "followed as action 00000000000040008000000000000001:"
        " dlq-replay audit --follow 00000000000040008000000000000001\n"
        '{"action_id": "00000000000040008000000000000001"}\n'
    )
