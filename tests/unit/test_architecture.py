"""The package's shape: sub-packages by role, imports that only point down, no cycle, and
modules small enough to read in one sitting. Read from the source with `ast`, nothing run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "layers" / "replay" / "dlq_replay"
# Each sub-package may import its own modules and those of lower ranks only.
RANK = {
    "core": 0,  # pure: settings, backoff, attributes, messages, ARNs, the decision's vocabulary
    "notify": 1,  # SNS I/O: the park notices
    "targets": 1,  # delivery to a record's target, the request-id ledger
    "sqs": 2,  # SQS I/O
    "follow": 2,  # replays and moves followed: recovery counts, returns, their stores
    "engine": 3,  # the kinds of record, the one decision, the replayer
    "breaker": 4,  # the outage breaker: rule, controller, stores, switch
    "aws_lambda": 5,  # the Powertools batch wiring
    "consumer": 5,  # what a consumer of the main queue imports
    "ops": 5,  # the operator's SQS work
    "local": 6,  # event source and worker
    "audit": 6,  # the operators' audit trail: records, STS identity, the table or a file
    "demo": 7,
    "cli": 8,
}
LAMBDA_SIDE = (
    "core",
    "notify",
    "targets",
    "sqs",
    "follow",
    "engine",
    "breaker",
    "aws_lambda",
    "consumer",
)
MAX_MODULE_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """Import nodes under `if TYPE_CHECKING:`: they never run."""
    skipped: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.body:
                skipped.update(ast.walk(child))
    return skipped


def _absolute(name: str, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, relative ones (`from .x import y`) resolved."""
    if not node.level:
        return node.module or ""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def imports(name: str, *, runtime_only: bool = True) -> set[str]:
    """Every module `name` imports: at import time or inside a function, and with
    `runtime_only=False` also those imported for type checking only."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    skipped = _type_checking_only(tree) if runtime_only else set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(name, node)
            found.add(module)
            for alias in node.names:
                if f"{module}.{alias.name}" in MODULES:
                    found.add(f"{module}.{alias.name}")
    return found


def role(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "dlq_replay" else None


def test_every_module_belongs_to_a_role_with_a_docstring() -> None:
    for name, path in MODULES.items():
        if name == "dlq_replay":
            continue
        assert role(name) in RANK, f"{name} is outside the sub-packages"
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), name


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down(name: str) -> None:
    own = role(name)
    if own is None:
        return
    # Type-only imports too: a layer may not even name the types of the layers above it.
    for target in imports(name, runtime_only=False):
        other = role(target)
        if other is None or other == own:
            continue
        assert RANK[other] < RANK[own], f"{name} imports {target}: {own} may not import {other}"


@pytest.mark.parametrize("name", [n for n in sorted(MODULES) if role(n) in LAMBDA_SIDE])
def test_the_lambda_side_needs_nothing_of_the_local_extra(name: str) -> None:
    roots = {target.split(".")[0] for target in imports(name)}
    assert not roots & {"moto", "rich"}, name
    if role(name) == "core":
        assert not roots & {"boto3", "botocore", "aws_lambda_powertools"}, f"{name} is not pure"


def test_no_import_cycle() -> None:
    graph = {name: {t for t in imports(name) if t in MODULES} for name in MODULES}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        for target in sorted(graph[name]):
            # A package's own __init__ is imported before its modules; not an edge back.
            if not target or name.startswith(f"{target}."):
                continue
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_are_small(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name}: {lines} lines"
