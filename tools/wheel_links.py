"""Write requirements/demo-wheels.html: every wheel of each version requirements/demo.lock pins,
by URL and sha256, and order demo.lock's pins by wheel size, biggest first.

Why: pip given `name==version` reads the package's whole index page and weighs every file of
every release against the interpreter's tags (boto3's and botocore's pages list thousands),
which was most of the first `make demo`'s install time. Given this page with `--no-index
--find-links`, it weighs only the pinned releases' wheels, for any platform, and checks each
download's hash. The order lets `make demo`'s pips side by side share the work evenly.

Stdlib only, run by `make lock` after it writes demo.lock:

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
LOCK = ROOT / "requirements" / "demo.lock"
LINKS = ROOT / "requirements" / "demo-wheels.html"
PYPI_SIMPLE = "https://pypi.org/simple"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"  # PEP 691's JSON form of a project page
_ANCHOR = re.compile(r'<a href="([^"]+)" data-size="(\d+)">([^<]+)</a>')


@dataclass(frozen=True, slots=True)
class Wheel:
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


def release_wheels(page: Mapping[str, Any], version: str) -> list[Wheel]:
    """The wheels of one release on a PEP 691 project page, yanked ones left out."""
    wheels = []
    for file in page["files"]:
        name = file["filename"]
        if name.endswith(".whl") and name.split("-")[1] == version and not file.get("yanked"):
            url = f"{file['url'].split('#')[0]}#sha256={file['hashes']['sha256']}"
            wheels.append(Wheel(name, url, int(file.get("size") or 0)))
    return wheels


def fetch_page(index: str, name: str) -> Mapping[str, Any]:
    url = f"{index.rstrip('/')}/{name}/"
    request = urllib.request.Request(url, headers={"Accept": JSON_PAGE})  # noqa: S310 - an index
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        page: Mapping[str, Any] = json.load(response)
    return page


def links_page(wheels: Iterable[Wheel]) -> str:
    """An HTML page pip reads with --find-links: an anchor per wheel (its size for `order`)."""
    anchors = [
        f'<a href="{html.escape(w.url)}" data-size="{w.size}">{html.escape(w.filename)}</a>'
        for w in sorted(wheels, key=lambda w: w.filename.lower())
    ]
    return "\n".join(["<!DOCTYPE html>", "<!-- Written by tools/wheel_links.py -->", *anchors, ""])


def read_links(page: str) -> list[Wheel]:
    return [
        Wheel(html.unescape(name), html.unescape(url), int(size))
        for url, size, name in _ANCHOR.findall(page)
    ]


def ordered_lock(lock_text: str, wheels: Iterable[Wheel]) -> str:
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
    index: str,
    lock: Path = LOCK,
    links: Path = LINKS,
    fetch: Callable[[str, str], Mapping[str, Any]] = fetch_page,
) -> int:
    """Write the links page and reorder the lock; 1 when a pin has no wheel on the index."""
    lock_text = lock.read_text()
    wheels: list[Wheel] = []
    for name, version in pins(lock_text):
        found = release_wheels(fetch(index, name), version)
        if not found:
            print(f"wheel_links: no wheel of {name} {version} on {index}", file=sys.stderr)
            return 1
        wheels += found
    links.write_text(links_page(wheels))
    lock.write_text(ordered_lock(lock_text, wheels))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", default=PYPI_SIMPLE, help="a PEP 691 index (JSON pages)")
    return write(parser.parse_args(argv).index)


if __name__ == "__main__":
    sys.exit(main())
