"""Check what `sam build` produced: the code shipped is the code tested.

Imports the handler the way Lambda does - the function's build directory and the layer's
`python/` directory on the path, the layer first - and checks that `app`, `dlq_replay` and
`aws_lambda_powertools` all come from `.aws-sam/build` (not from the repository or the
virtualenv), and that `app.handler` is callable. boto3 may come from anywhere: Lambda's
runtime provides it. Every module of the layer must have its bytecode for Lambda's runtime
beside it, unchecked-hash (used whatever the files' timestamps).

    python tools/check_build.py [--build-dir .aws-sam/build]
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
FUNCTION_ID = "ReplayFunction"
LAYER_ID = "ReplayLayer"
LAYER_SOURCE = ROOT / "layers" / "replay"
# Exactly what the layer may hold of dlq_replay (layers/replay/Makefile copies this list): the
# closure of `layer_entries()`. The operator CLI, the demo and the local runtime must not grow
# back into it.
LAYER_LIST = LAYER_SOURCE / "modules.txt"
LAYER_MODULES = tuple(LAYER_LIST.read_text().split())
# Packages whose modules are imported by a computed name (`engine.kinds.kind_of`), which no
# import statement shows: every module of theirs is in the layer.
LOADED_BY_NAME = ("dlq_replay/engine/kinds",)
PACKAGE = "dlq_replay"
CLI_ONLY_PACKAGES = ("rich", "moto", "flask")
# Settings are read on the first invocation; these only make an import-time read harmless.
PLACEHOLDER_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "MAIN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/main",
    "OPERATOR_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/operator",
    "POWERTOOLS_SERVICE_NAME": "sqs-dlq-replay",
    "POWERTOOLS_METRICS_NAMESPACE": "SqsDlqReplay",
}


def layer_entries(root: Path = ROOT) -> list[Path]:
    """What the layer is for: the replay function's handler, and the consumer toolkit that
    users' own functions import from the layer (docs/consumer.md)."""
    return [
        root / "functions" / "replay" / "app.py",
        root / "layers" / "replay" / PACKAGE / "consumer" / "__init__.py",
    ]


def _type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): imports that never run."""
    name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
    return name == "TYPE_CHECKING"


def imported_names(source: str) -> set[str]:
    """Every module name an import of `source` can load at run time, at any depth (inside
    functions too), except under `if TYPE_CHECKING:`; `from a import b` names `a` and `a.b`
    (`b` may be a module). Relative imports: the package has none."""
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(source)]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return found


def layer_closure(root: Path = ROOT) -> list[str]:
    """The package's files that the layer's entries import, transitively, with each
    package's __init__.py on the way (importing a module runs them), relative to the layer's
    source (as modules.txt and the built layer's python/ folder name them). The modules of
    LOADED_BY_NAME's packages are entries too: the engine imports a kind's module by name."""
    source = root / "layers" / "replay"
    files: set[Path] = set()
    pending = layer_entries(root) + [
        path for package in LOADED_BY_NAME for path in sorted(source.joinpath(package).glob("*.py"))
    ]
    files.update(path for path in pending if path.is_relative_to(source))
    while pending:
        path = pending.pop()
        for name in imported_names(path.read_text()):
            parts = name.split(".")
            if parts[0] != PACKAGE:
                continue
            for depth in range(1, len(parts) + 1):
                base = source.joinpath(*parts[:depth])
                for candidate in (base / "__init__.py", base.with_suffix(".py")):
                    if candidate.is_file() and candidate not in files:
                        files.add(candidate)
                        pending.append(candidate)
    return sorted(path.relative_to(source).as_posix() for path in files)


class BuildCheckError(Exception):
    """The build output is not what the template promises."""


def _origin(module: ModuleType) -> Path:
    file = getattr(module, "__file__", None)
    if not file:
        raise BuildCheckError(f"module {module.__name__} has no __file__")
    return Path(file).resolve()


def _require_inside(module: ModuleType, directory: Path) -> Path:
    origin = _origin(module)
    if not origin.is_relative_to(directory):
        raise BuildCheckError(f"{module.__name__} was imported from {origin}, not from {directory}")
    return origin


def layer_modules(layer_dir: Path) -> list[str]:
    """The dlq_replay modules the built layer ships, relative to its python/ folder."""
    return sorted(
        path.relative_to(layer_dir).as_posix() for path in (layer_dir / "dlq_replay").rglob("*.py")
    )


RUNTIME_CACHE_TAG = "cpython-313"  # the function's Runtime: python3.13
_UNCHECKED_HASH = 0b01  # PEP 552 flags: hash-based, source not checked


def missing_bytecode(layer_dir: Path) -> list[str]:
    """The layer's .py files without an unchecked-hash .pyc for the runtime (relative paths)."""
    missing: list[str] = []
    for source in sorted(layer_dir.rglob("*.py")):
        compiled = source.parent / "__pycache__" / f"{source.stem}.{RUNTIME_CACHE_TAG}.pyc"
        header = compiled.read_bytes()[:8] if compiled.is_file() else b""
        if len(header) < 8 or int.from_bytes(header[4:8], "little") != _UNCHECKED_HASH:
            missing.append(source.relative_to(layer_dir).as_posix())
    return missing


def check_build(build_dir: Path) -> list[str]:
    """Import the built handler; return one line per checked module, raise on a mismatch."""
    build_dir = build_dir.resolve()
    function_dir = build_dir / FUNCTION_ID
    layer_dir = build_dir / LAYER_ID / "python"
    for directory in (function_dir, layer_dir):
        if not directory.is_dir():
            raise BuildCheckError(f"{directory} is missing: run `sam build` first")
    shipped = layer_modules(layer_dir)
    if shipped != sorted(LAYER_MODULES):
        extra = sorted(set(shipped) - set(LAYER_MODULES))
        missing = sorted(set(LAYER_MODULES) - set(shipped))
        raise BuildCheckError(
            f"the layer's dlq_replay modules differ: extra {extra}, missing {missing}"
        )

    # The operator CLI's and the demo's dependencies (rich, moto) are the package's, not the
    # layer's: layers/replay/requirements.txt installs Powertools alone.
    if cli_only := sorted(name for name in CLI_ONLY_PACKAGES if (layer_dir / name).exists()):
        raise BuildCheckError(f"the layer ships {cli_only}: only the CLI or the demo needs them")

    if missing := missing_bytecode(layer_dir):
        raise BuildCheckError(
            f"{len(missing)} layer modules have no unchecked-hash {RUNTIME_CACHE_TAG} bytecode, "
            f"e.g. {missing[:3]}"
        )

    for name, value in PLACEHOLDER_ENV.items():
        os.environ.setdefault(name, value)
    # Lambda's order: the function's code first (/var/task), then layers (/opt/python). Both
    # go before the virtualenv, whose editable install would otherwise serve dlq_replay.
    sys.path[:0] = [str(function_dir), str(layer_dir)]
    for name in list(sys.modules):
        if name == "app" or name.split(".")[0] in {"dlq_replay", "aws_lambda_powertools"}:
            del sys.modules[name]

    app = importlib.import_module("app")
    dlq_replay = importlib.import_module("dlq_replay")
    powertools = importlib.import_module("aws_lambda_powertools")

    modules = sum(1 for _ in layer_dir.rglob("*.py"))
    lines = [f"layer module         {name}" for name in shipped]
    lines.append(f"bytecode             {modules} modules, unchecked-hash, {RUNTIME_CACHE_TAG}")
    lines += [
        f"app                  {_require_inside(app, function_dir)}",
        f"dlq_replay           {_require_inside(dlq_replay, layer_dir)}",
        f"aws_lambda_powertools {_require_inside(powertools, layer_dir)}",
    ]
    handler = getattr(app, "handler", None)
    if not callable(handler):
        raise BuildCheckError(f"app.handler is not callable: {handler!r}")
    lines.append("app.handler is callable")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Import the handler from the sam build output.")
    parser.add_argument("--build-dir", type=Path, default=ROOT / ".aws-sam" / "build")
    args = parser.parse_args(argv)
    try:
        lines = check_build(args.build_dir)
    except (BuildCheckError, ImportError) as exc:
        print(f"check_build: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(f"check_build: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
