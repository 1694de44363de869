"""Write the command samples of README.md and docs/*.md by running the commands.

Every sample sits between marker comments in a page::

    <!-- sample: NAME -->
    ```console
    $ dlq-replay ...
    ...
    [exit 0]
    ```
    <!-- /sample -->

NAME is one of the samples of tools/doc_scenarios.py, which seeds moto's server (on a free port
of 127.0.0.1, one per scenario, the scenarios side by side) and says which shell lines to run.
Each line runs in bash, in the scenario's own temporary folder, with stderr merged into stdout
as a terminal shows them, and its exit code appended. What varies from run to run (message
ids, ages, timestamps, durations, the port) is normalised, so a sample changes only when a
command's output does.

    python tools/doc_samples.py           # rewrite the samples in place
    python tools/doc_samples.py --check   # exit 1 and name every sample that differs
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dlq_replay.demo.emulator import emulator  # noqa: E402  (moto's whole server)

from tools.doc_scenarios import SCENARIOS  # noqa: E402

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKED = re.compile(
    r"(?P<open><!-- sample: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- /sample -->)",
    re.DOTALL,
)
SHOWN_PORT = "55077"  # ephemeral ports have five digits, so tables and wrapping keep their width
COMMAND_TIMEOUT = 120


def _uuid_renamer() -> Callable[[re.Match[str]], str]:
    """Each distinct id of a scenario becomes 00000000-0000-4000-8000-00000000000N (an action
    id, 32 hex digits without dashes: 0000000000004000800000000000000N, counted apart), in the
    order the samples first show it, so the same message or action keeps its id across a
    session."""
    seen: dict[str, str] = {}
    actions: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        value = match.group(0).lower()
        ids = seen if "-" in value else actions
        if value not in ids:
            named = f"00000000-0000-4000-8000-{len(ids) + 1:012d}"
            ids[value] = named if ids is seen else named.replace("-", "")
        return ids[value]

    return rename


UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b[0-9a-f]{32}\b"  # the audit's action ids
)
FIXED = [
    (re.compile(r"127\.0\.0\.1:\d+"), f"127.0.0.1:{SHOWN_PORT}"),
    (re.compile(r'("sent_at": )"[^"]+"'), r'\1"2026-01-01T12:00:00.000000+00:00"'),
    (re.compile(r'("age_seconds": )[0-9.e-]+'), r"\g<1>5.0"),
    (re.compile(r'("sent_timestamp": )\d+'), r"\g<1>1767268800000"),
    # A duration is elided: one fixed figure would read as a measurement.
    (re.compile(r"(demo \w+ in )[0-9.]+ s"), r"\g<1><seconds> s"),
]


def normalise_table_column(text: str, header: str, value: str) -> str:
    """Replace every non-blank cell of the column `header` in rich's box tables by `value`
    (right-aligned in the same width, so the table keeps its shape)."""
    lines = text.split("\n")
    span: tuple[int, int] | None = None
    for index, line in enumerate(lines):
        if line.startswith("┃"):
            bars = [i for i, char in enumerate(line) if char == "┃"]
            span = next(
                (
                    (a + 1, b)
                    for a, b in itertools.pairwise(bars)
                    if line[a + 1 : b].strip() == header
                ),
                None,
            )
        elif line.startswith("└"):
            span = None
        elif span and line.startswith("│") and line[span[0] : span[1]].strip():
            start, end = span
            lines[index] = line[:start] + f"{value} ".rjust(end - start) + line[end:]
    return "\n".join(lines)


def normalise(text: str, rename: Callable[[re.Match[str]], str]) -> str:
    text = UUID.sub(rename, text)
    for pattern, replacement in FIXED:
        text = pattern.sub(replacement, text)
    text = normalise_table_column(text, "age", "5s")
    return "\n".join(line.rstrip() for line in text.split("\n"))  # rich pads titles


def command_environment(endpoint: str, extra: dict[str, str]) -> dict[str, str]:
    """What the commands see: the venv's console scripts first, demo credentials, the emulator
    and a 130-column terminal; nothing of the caller's AWS configuration."""
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", str(Path.home())),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "130",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "demo",
        "AWS_SECRET_ACCESS_KEY": "demo",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        **extra,
    }


def run_line(line: str, workdir: Path, env: dict[str, str]) -> str:
    """One shell line as a console shows it: `$ line`, its output, `[exit N]`."""
    result = subprocess.run(  # noqa: S603 - the lines of tools/doc_scenarios.py
        ["bash", "-c", f"{line} 2>&1"],  # noqa: S607 - bash from PATH, as a reader runs it
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    return f"$ {line}\n{result.stdout}[exit {result.returncode}]\n"


def run_scenario(index: int) -> dict[str, str]:
    """The samples of scenario `index`, by name, as the Markdown that goes between their
    markers; on a moto server of its own (moto keeps one state per process)."""
    scenario = SCENARIOS[index]
    rename = _uuid_renamer()
    blocks = {}
    with (
        emulator() if scenario.emulator else nullcontext("http://127.0.0.1:9") as endpoint,
        tempfile.TemporaryDirectory(prefix="doc-samples-") as folder,
    ):
        workdir = Path(folder)
        # The audit trail's local file (commands without a table) stays in the folder too.
        state = {"XDG_STATE_HOME": str(workdir / ".state")}
        env = command_environment(endpoint, {**state, **scenario.setup(endpoint, workdir)})
        for sample in scenario.samples:
            shown = "\n".join(run_line(line, workdir, env) for line in sample.lines)
            blocks[sample.name] = f"```console\n{normalise(shown, rename)}```\n"
    return blocks


def generate() -> dict[str, str]:
    """Every sample; the scenarios side by side, each in a process of its own."""
    blocks: dict[str, str] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(SCENARIOS), mp_context=context) as pool:
        for result in pool.map(run_scenario, range(len(SCENARIOS))):
            blocks.update(result)
    return blocks


def rewrite(text: str, blocks: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        return match.group("open") + blocks[match.group("name")] + match.group("close")

    return MARKED.sub(replace, text)


def marked_names(pages: list[Path]) -> dict[str, list[Path]]:
    names: dict[str, list[Path]] = {}
    for page in pages:
        for match in MARKED.finditer(page.read_text(encoding="utf-8")):
            names.setdefault(match.group("name"), []).append(page)
    return names


def _first_lines_of_diff(old: str, new: str, most: int = 12) -> list[str]:
    """Where a sample and the command's output part, as a unified diff, indented."""
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), "docs", "command", n=0, lineterm=""
    )
    return [f"    {line}" for line in itertools.islice(lines, most)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 on a diff")
    args = parser.parse_args(argv)

    known = {sample.name for scenario in SCENARIOS for sample in scenario.samples}
    marked = marked_names(PAGES)
    problems = [
        f"{name}: marked in {pages[0].name}, not a sample"
        for name, pages in marked.items()
        if name not in known
    ]
    problems += [f"{name}: a sample no page marks" for name in sorted(known - set(marked))]
    problems += [f"{name}: marked twice" for name, pages in marked.items() if len(pages) > 1]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    blocks = generate()
    stale = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        new = rewrite(text, blocks)
        if new == text:
            continue
        for match in MARKED.finditer(text):
            name, old = match.group("name"), match.group("body")
            if old != blocks[name]:
                stale.append(f"{page.relative_to(ROOT)}: {name}")
                if args.check:
                    stale += _first_lines_of_diff(old, blocks[name])
        if not args.check:
            page.write_text(new, encoding="utf-8")
    if stale:
        verb = "that differ from the commands' output" if args.check else "rewritten"
        print(f"samples {verb}:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1 if args.check else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
