"""Write requirements/wheels.html: every file pip may install for a pin of the project's locks
(demo.lock for Python 3.11 to 3.13, dev.lock, checkov.lock and localstack.lock for 3.13), by
URL and sha256, and order demo.lock's pins by wheel size, biggest first.

Why: pip given `name==version` reads the package's whole index page and weighs every file of
every release against the interpreter's tags (boto3's and botocore's pages list thousands),
which was most of the time of installing a venv from a lock. Given this page with `--no-index
--find-links`, it weighs only the pinned releases' files and checks each download's hash.
The order lets `make demo`'s pips side by side share the work evenly.

Stdlib only, run by `make lock`, `make lock-checkov` and `make lock-localstack` after they
write a lock:

    python tools/wheel_links.py [--index https://pypi.org/simple]
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
DEMO_LOCK = REQUIREMENTS / "demo.lock"
LOCKS: dict[Path, tuple[tuple[int, int], ...]] = {  # each lock, the Pythons it is for
    DEMO_LOCK: ((3, 11), (3, 12), (3, 13)),
    REQUIREMENTS / "dev.lock": ((3, 13),),
    REQUIREMENTS / "checkov.lock": ((3, 13),),
    REQUIREMENTS / "localstack.lock": ((3, 13),),
}
LINKS = REQUIREMENTS / "wheels.html"
PYPI_SIMPLE = "https://pypi.org/simple"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"  # PEP 691's JSON form of a project page
_ANCHOR = re.compile(r'<a href="([^"]+)" data-size="(\d+)">([^<]+)</a>')


@dataclass(frozen=True, slots=True)
class ReleaseFile:
    filename: str
    url: str  # with #sha256=…
    size: int


def pins(lock_text: str) -> list[tuple[str, str]]:
    """(name, version) of each `name==version` line of a lock."""
    found = []
    for line in lock_text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.strip().partition("==")
            found.append((name, version))
    return found


def release_files(
    page: Mapping[str, Any], name: str, version: str, pythons: Iterable[tuple[int, int]]
) -> list[ReleaseFile]:
    """The files of one release on a PEP 691 project page that pip may install for one of
    `pythons` (major, minor): its wheels for them or, where it has none, its source
    distribution (pip builds it; its build requirements must be on the page too). Yanked
    files are left out."""
    wanted = list(pythons)
    wheels, sources = [], []
    for file in page["files"]:
        filename = file["filename"]
        if file.get("yanked"):
            continue
        if filename.endswith(".whl"):
            if filename.split("-")[1] == version and any(installable(filename, p) for p in wanted):
                wheels.append(_release_file(file))
        elif _source_version(filename, name) == version:
            sources.append(_release_file(file))
    return wheels or sources


def _release_file(file: Mapping[str, Any]) -> ReleaseFile:
    url = f"{file['url'].split('#')[0]}#sha256={file['hashes']['sha256']}"
    return ReleaseFile(file["filename"], url, int(file.get("size") or 0))


def _source_version(filename: str, name: str) -> str | None:
    """The version in a source distribution's file name (`name-version.tar.gz`), if it is
    one of `name`'s."""
    for suffix in (".tar.gz", ".zip"):
        stem = filename.removesuffix(suffix)
        cut = len(name)
        if (
            stem != filename
            and _normalise(stem[:cut]) == _normalise(name)
            and stem[cut:][:1] == "-"
        ):
            return stem[cut + 1 :]
    return None


def installable(filename: str, python: tuple[int, int]) -> bool:
    """Whether a wheel's Python and ABI tags admit this CPython (its platform tag aside)."""
    python_tags, abi = filename.removesuffix(".whl").split("-")[-3:-1]
    major, minor = python
    for tag in python_tags.split("."):
        if tag in {f"py{major}", f"py{major}{minor}", f"cp{major}{minor}"}:
            return True
        stable = re.fullmatch(rf"cp{major}(\d+)", tag)
        if abi == "abi3" and stable and int(stable.group(1)) <= minor:
            return True
    return False


def fetch_page(index: str, name: str) -> Mapping[str, Any]:
    url = f"{index.rstrip('/')}/{name}/"
    request = urllib.request.Request(url, headers={"Accept": JSON_PAGE})  # noqa: S310 - an index
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        page: Mapping[str, Any] = json.load(response)
    return page


def links_page(files: Iterable[ReleaseFile]) -> str:
    """An HTML page pip reads with --find-links: an anchor per file (with its size, by which
    the demo's lock is ordered)."""
    anchors = [
        f'<a href="{html.escape(w.url)}" data-size="{w.size}">{html.escape(w.filename)}</a>'
        for w in sorted(files, key=lambda w: w.filename.lower())
    ]
    return "\n".join(["<!DOCTYPE html>", "<!-- Written by tools/wheel_links.py -->", *anchors, ""])


def read_links(page: str) -> list[ReleaseFile]:
    return [
        ReleaseFile(html.unescape(name), html.unescape(url), int(size))
        for url, size, name in _ANCHOR.findall(page)
    ]


def ordered_lock(lock_text: str, wheels: Iterable[ReleaseFile]) -> str:
    """The lock with its comment lines first, then its pins by their biggest wheel, descending
    (ties by name)."""
    biggest: dict[str, int] = {}
    for wheel in wheels:
        key = _normalise(wheel.filename.split("-")[0])
        biggest[key] = max(biggest.get(key, 0), wheel.size)
    lines = lock_text.splitlines()
    comments = [line for line in lines if line.startswith("#")]
    pinned = [line for line in lines if line.strip() and not line.startswith("#")]
    pinned.sort(key=lambda line: (-biggest.get(_normalise(line.split("==")[0]), 0), line.lower()))
    return "\n".join([*comments, *pinned, ""])


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def write(
    locks: Mapping[Path, Iterable[tuple[int, int]]] = LOCKS,
    links: Path = LINKS,
    *,
    demo_lock: Path = DEMO_LOCK,
    index: str = PYPI_SIMPLE,
    fetch: Callable[[str, str], Mapping[str, Any]] = fetch_page,
) -> int:
    """Write the links page for every lock and reorder the demo's; 1 when a pin has no file
    for its lock's Pythons on the index."""
    pages: dict[str, Mapping[str, Any]] = {}
    files: dict[str, ReleaseFile] = {}
    demo_files: list[ReleaseFile] = []
    for lock, pythons in locks.items():
        wanted = list(pythons)
        for name, version in pins(lock.read_text()):
            if name not in pages:
                pages[name] = fetch(index, name)
            found = release_files(pages[name], name, version, wanted)
            if not found:
                print(f"wheel_links: no file of {name} {version} on {index}", file=sys.stderr)
                return 1
            files.update((file.filename, file) for file in found)
            demo_files += found if lock == demo_lock else []
    links.write_text(links_page(files.values()))
    demo_lock.write_text(ordered_lock(demo_lock.read_text(), demo_files))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", default=PYPI_SIMPLE, help="a PEP 691 index (JSON pages)")
    return write(index=parser.parse_args(argv).index)


if __name__ == "__main__":
    sys.exit(main())
