"""Count the record path's lines at two commits, the same way at both.

    .venv/bin/python tools/record_path_lines.py [BEFORE [AFTER]]   # default: fbc9f2b HEAD

The record path is what one DLQ record goes through in the layer: the engine (`engine/`), the
delivery to targets (`targets/`), the replayer and its report wherever they live
(`sqs/replayer.py`, `sqs/report.py` before the engine), and the core modules that decide and
describe a record (`core/` kinds, decision, delivery, transform, queues, text). A file one
commit lacks counts 0 there. Two counts per file: all lines (`wc -l`), and code lines (lines
holding a token of code: no blank line, comment or docstring).
"""

from __future__ import annotations

import argparse
import ast
import io
import shutil
import subprocess
import sys
import tokenize

PACKAGE = "layers/replay/dlq_replay"
CORE = ("kinds", "decision", "delivery", "transform", "queues", "text")
SINGLE = (*(f"core/{name}.py" for name in CORE), "sqs/replayer.py", "sqs/report.py")
FOLDERS = ("engine/", "targets/")
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


def _git(*args: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise SystemExit("record_path_lines: needs git on PATH")
    return subprocess.run([git, *args], capture_output=True, text=True, check=True).stdout


def files_at(commit: str) -> list[str]:
    """The record path's Python files at `commit`, relative to the package."""
    listed = _git("ls-tree", "-r", "--name-only", commit, f"{PACKAGE}/").split()
    relative = [path.removeprefix(f"{PACKAGE}/") for path in listed if path.endswith(".py")]
    return sorted(p for p in relative if p in SINGLE or p.startswith(FOLDERS))


def text_at(commit: str, path: str) -> str:
    return _git("show", f"{commit}:{PACKAGE}/{path}")


def code_lines(text: str) -> int:
    """Lines that hold a token of code, docstrings left out."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or 0) + 1))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in _NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def counts(commit: str) -> dict[str, tuple[int, int]]:
    """Per file: (all lines, code lines)."""
    result = {}
    for path in files_at(commit):
        text = text_at(commit, path)
        result[path] = (text.count("\n"), code_lines(text))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", nargs="?", default="fbc9f2b")
    parser.add_argument("after", nargs="?", default="HEAD")
    args = parser.parse_args(argv)
    try:
        before, after = counts(args.before), counts(args.after)
    except subprocess.CalledProcessError as error:
        parser.exit(2, f"record_path_lines: git failed: {(error.stderr or '').strip()}\n")
    print(f"{'file':<34} {args.before:>14} {args.after:>14}   (lines / code lines)")
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path, (0, 0)), after.get(path, (0, 0))
        print(f"{path:<34} {old[0]:>7} {old[1]:>6} {new[0]:>7} {new[1]:>6}")
    totals = [sum(c[i] for c in side.values()) for side in (before, after) for i in (0, 1)]
    print(f"{'total':<34} {totals[0]:>7} {totals[1]:>6} {totals[2]:>7} {totals[3]:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
