"""requirements/demo-wheels.html (tools/wheel_links.py) lists the wheels of exactly the
releases demo.lock pins, each with its sha256, and demo.lock lists its pins biggest wheel
first, as `make demo`'s pips side by side expect."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tools.wheel_links import (
    LINKS,
    LOCK,
    Wheel,
    links_page,
    ordered_lock,
    pins,
    read_links,
    release_wheels,
    write,
)

HASH = "ab" * 32


def page(*files: tuple[str, bool]) -> dict[str, Any]:
    """A PEP 691 project page with these (file name, yanked) files."""
    return {
        "files": [
            {
                "filename": name,
                "url": f"https://files.example/{name}#sha256=old",
                "hashes": {"sha256": HASH},
                "size": 10 * (index + 1),
                "yanked": yanked,
            }
            for index, (name, yanked) in enumerate(files)
        ]
    }


def test_every_pin_has_its_own_release_s_wheels_with_their_hashes() -> None:
    wheels = read_links(LINKS.read_text())
    for name, version in pins(LOCK.read_text()):
        own = [
            w
            for w in wheels
            if w.filename.split("-")[0].lower() == name.replace("-", "_").lower()
            and w.filename.split("-")[1] == version
        ]
        assert own, f"no wheel of {name} {version} in {LINKS.name}"
    assert len({w.filename.split("-")[0].lower() for w in wheels}) == len(pins(LOCK.read_text()))
    for wheel in wheels:
        assert wheel.url.startswith("https://"), wheel.url
        assert wheel.url.split("#sha256=")[1].isalnum(), wheel.url
        assert wheel.size > 0


def test_the_lock_lists_its_pins_biggest_wheel_first() -> None:
    lock = LOCK.read_text()
    assert ordered_lock(lock, read_links(LINKS.read_text())) == lock


def test_a_release_s_wheels_leave_out_other_releases_sdists_and_yanked_files() -> None:
    found = release_wheels(
        page(
            ("demo_pkg-1.0-py3-none-any.whl", False),
            ("demo_pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", False),
            ("demo_pkg-1.0.tar.gz", False),
            ("demo_pkg-1.0.1-py3-none-any.whl", False),
            ("demo_pkg-1.0-py2-none-any.whl", True),
        ),
        "1.0",
    )
    assert [(w.filename, w.size) for w in found] == [
        ("demo_pkg-1.0-py3-none-any.whl", 10),
        ("demo_pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", 20),
    ]
    assert found[0].url == f"https://files.example/demo_pkg-1.0-py3-none-any.whl#sha256={HASH}"


def test_the_links_page_reads_back_as_written() -> None:
    wheels = [
        Wheel("b_pkg-2-py3-none-any.whl", f"https://files.example/b?x=1&y=2#sha256={HASH}", 5),
        Wheel("a_pkg-1-py3-none-any.whl", f"https://files.example/a#sha256={HASH}", 7),
    ]
    assert read_links(links_page(wheels)) == sorted(wheels, key=lambda w: w.filename)


def test_write_fills_the_page_and_orders_the_lock_and_fails_on_a_pin_without_wheels(
    tmp_path: Path,
) -> None:
    lock, links = tmp_path / "demo.lock", tmp_path / "demo-wheels.html"
    lock.write_text("# pinned\nsmall-pkg==1.0\nBig_Pkg==2.0\n")
    pages: Mapping[str, dict[str, Any]] = {
        "small-pkg": page(("small_pkg-1.0-py3-none-any.whl", False)),
        "Big_Pkg": page(
            ("big_pkg-1.9-py3-none-any.whl", False),
            ("big_pkg-2.0-py3-none-any.whl", False),
        ),
    }

    def fetch(index: str, name: str) -> Mapping[str, Any]:
        assert index == "https://index.example/simple"
        return pages[name]

    assert write("https://index.example/simple", lock, links, fetch) == 0
    assert lock.read_text() == "# pinned\nBig_Pkg==2.0\nsmall-pkg==1.0\n"
    assert [w.filename for w in read_links(links.read_text())] == [
        "big_pkg-2.0-py3-none-any.whl",
        "small_pkg-1.0-py3-none-any.whl",
    ]

    lock.write_text("small-pkg==3.0\n")
    assert write("https://index.example/simple", lock, links, fetch) == 1
    assert lock.read_text() == "small-pkg==3.0\n"
