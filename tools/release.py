"""Release tooling behind `make package`, `make publish` and `make release`.

The version lives in one place, `dlq_replay.__version__`: pyproject.toml reads it
(`dynamic`), the template's `SemanticVersion` and CHANGELOG.md are checked against it, and
`set-version` rewrites all of them at once.

    python tools/release.py check-version
    python tools/release.py set-version 1.2.0
    python tools/release.py sar-readme -o build/sar/README-SAR.md
    python tools/release.py sar-template .aws-sam/build/template.yaml -o build/sar/template.yaml \
        --readme build/sar/README-SAR.md
    python tools/release.py share --public        # or --account 123456789012 / --org o-...
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import sar  # noqa: E402

VERSION_FILE = Path("layers/replay/dlq_replay/__init__.py")
TEMPLATE = Path("template.yaml")
CHANGELOG = Path("CHANGELOG.md")
PYPROJECT = Path("pyproject.toml")
NESTED_EXAMPLE = Path("examples/nested-app.yaml")  # its SAR form names the version to deploy
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
_VERSION_LINE = re.compile(r'^__version__ = "([^"]*)"$', re.MULTILINE)
_SEMANTIC_VERSION_LINE = re.compile(r"^(    SemanticVersion: )(\S+)$", re.MULTILINE)
_EXAMPLE_VERSION_LINE = re.compile(r"^(#\s+SemanticVersion: )(\S+)$", re.MULTILINE)
_UNRELEASED = "## [Unreleased]"


class ReleaseError(Exception):
    """A release step cannot go on; the message is the one line to print."""


def package_version(root: Path = ROOT) -> str:
    """`dlq_replay.__version__`, read as text so that no import is needed."""
    match = _VERSION_LINE.search((root / VERSION_FILE).read_text(encoding="utf-8"))
    if match is None:
        raise ReleaseError(f'{VERSION_FILE}: no `__version__ = "x.y.z"` line')
    return match.group(1)


def template_version(root: Path = ROOT) -> str:
    """The template's `AWS::ServerlessRepo::Application` SemanticVersion."""
    found = _SEMANTIC_VERSION_LINE.findall((root / TEMPLATE).read_text(encoding="utf-8"))
    if len(found) != 1:
        raise ReleaseError(f"{TEMPLATE}: expected one SemanticVersion line, found {len(found)}")
    return str(found[0][1])


def version_problems(root: Path = ROOT) -> list[str]:
    """Every place that disagrees with `__version__`, one line each (empty: all agree)."""
    version = package_version(root)
    problems = []
    if not SEMVER.fullmatch(version):
        problems.append(f"{VERSION_FILE}: {version!r} is not a semantic version x.y.z")
    if (found := template_version(root)) != version:
        problems.append(f"{TEMPLATE}: SemanticVersion {found} differs from __version__ {version}")
    pyproject = (root / PYPROJECT).read_text(encoding="utf-8")
    if not re.search(r'^dynamic = \["version"\]$', pyproject, re.MULTILINE) or re.search(
        r"^version = \"", pyproject, re.MULTILINE
    ):
        problems.append(f'{PYPROJECT}: the version must be dynamic = ["version"], read from it')
    example = _EXAMPLE_VERSION_LINE.findall((root / NESTED_EXAMPLE).read_text(encoding="utf-8"))
    if [v for _, v in example] != [version]:
        problems.append(f"{NESTED_EXAMPLE}: its SemanticVersion is not {version}")
    if f"## [{version}]" not in (root / CHANGELOG).read_text(encoding="utf-8"):
        problems.append(f"{CHANGELOG}: no `## [{version}]` section")
    return problems


def set_version(version: str, root: Path = ROOT, *, today: datetime.date | None = None) -> None:
    """Write `version` everywhere: the package, the template, and a dated CHANGELOG section
    made of what was under Unreleased (kept when that version already has one)."""
    if not SEMVER.fullmatch(version):
        raise ReleaseError(f"VERSION={version!r} is not a semantic version x.y.z")
    init = root / VERSION_FILE
    init.write_text(
        _VERSION_LINE.sub(f'__version__ = "{version}"', init.read_text(encoding="utf-8")),
        encoding="utf-8",
    )
    for path, line in ((TEMPLATE, _SEMANTIC_VERSION_LINE), (NESTED_EXAMPLE, _EXAMPLE_VERSION_LINE)):
        text = (root / path).read_text(encoding="utf-8")
        (root / path).write_text(line.sub(rf"\g<1>{version}", text), encoding="utf-8")
    changelog = root / CHANGELOG
    text = changelog.read_text(encoding="utf-8")
    if f"## [{version}]" not in text:
        if _UNRELEASED not in text:
            raise ReleaseError(f"{CHANGELOG}: no `{_UNRELEASED}` section to release")
        dated = f"## [{version}] - {(today or datetime.date.today()).isoformat()}"
        text = text.replace(_UNRELEASED, f"{_UNRELEASED}\n\n{dated}", 1)
        changelog.write_text(text, encoding="utf-8")


def _semver(text: str) -> str:
    if not SEMVER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a semantic version x.y.z")
    return text


def _url(text: str) -> str:
    if not re.fullmatch(r"https://[^\s/]+(/\S*)?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an https:// URL")
    return text.rstrip("/")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="release.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check-version", help="fail when any place disagrees with __version__")
    set_cmd = commands.add_parser("set-version", help="write a version everywhere")
    set_cmd.add_argument("version", type=_semver)
    readme = commands.add_parser("sar-readme", help="the README shown on the SAR page")
    readme.add_argument("-o", "--output", type=Path, required=True)
    readme.add_argument("--source-code-url", type=_url, default=sar.DEFAULT_SOURCE_CODE_URL)
    template = commands.add_parser("sar-template", help="the template `sam package` uploads")
    template.add_argument("built", type=Path, help="sam build's template")
    template.add_argument("-o", "--output", type=Path, required=True)
    template.add_argument("--readme", type=Path, required=True)
    template.add_argument("--source-code-url", type=_url, default=sar.DEFAULT_SOURCE_CODE_URL)
    template.add_argument("--home-page-url", type=_url)
    share = commands.add_parser("share", help="who may deploy the published application")
    share.add_argument("--application-id", help="default: this account's application by name")
    who = share.add_mutually_exclusive_group(required=True)
    who.add_argument("--public", action="store_true", help="every AWS account")
    who.add_argument("--account", type=sar.account_id, action="append", help="repeatable")
    who.add_argument("--org", type=sar.org_id, help="every account of an AWS Organization")
    who.add_argument("--private", action="store_true", help="remove all sharing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "check-version":
            if problems := version_problems():
                print("\n".join(problems), file=sys.stderr)
                return 1
            print(f"version {package_version()}: every place agrees")
        elif args.command == "set-version":
            set_version(args.version)
            print(
                f"version {args.version} written to {VERSION_FILE}, {TEMPLATE}, "
                f"{CHANGELOG}, {NESTED_EXAMPLE}"
            )
        elif args.command == "sar-readme":
            sar.write_readme(ROOT, args.output, args.source_code_url, package_version())
        elif args.command == "sar-template":
            removed = sar.write_template(
                args.built,
                args.output,
                readme=args.readme,
                license_file=ROOT / "LICENSE",
                source_code_url=args.source_code_url,
                home_page_url=args.home_page_url or args.source_code_url,
                version=package_version(),
            )
            for line in removed:
                print(f"sar-template: {line}")
        else:
            print(sar.share(args))
    except (ReleaseError, sar.SarError) as error:
        print(f"release: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
