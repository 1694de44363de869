"""requirements/wheels.html (tools/wheel_links.py) lists files of exactly the releases the
locks pin, each with its sha256, and demo.lock lists its pins biggest wheel first, as `make
demo`'s pips side by side expect."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tools.wheel_links import (
    DEMO_LOCK,
    LINKS,
    LOCKS,
    ReleaseFile,
    installable,
    links_page,
    main,
    ordered_lock,
    pins,
    read_links,
    release_files,
    write,
)

PY313 = [(3, 13)]

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


def test_every_pin_of_every_lock_has_its_release_s_files_with_their_hashes() -> None:
    files = read_links(LINKS.read_text())
    pinned = [pin for lock in LOCKS for pin in pins(lock.read_text())]
    for name, version in pinned:
        assert any(release_of(f.filename, name, version) for f in files), (
            f"no file of {name} {version} in {LINKS.name}"
        )
    for file in files:
        assert any(release_of(file.filename, *pin) for pin in pinned), file.filename
        assert file.url.startswith("https://"), file.url
        assert file.url.split("#sha256=")[1].isalnum(), file.url


def release_of(filename: str, name: str, version: str) -> bool:
    """Whether a wheel's or source distribution's file name is of this release."""
    if filename.endswith(".whl"):
        project, release = filename.split("-")[:2]
        return normalised(project) == normalised(name) and release == version
    stem = filename.removesuffix(".tar.gz").removesuffix(".zip")
    return normalised(stem) == normalised(f"{name}-{version}")


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def test_the_demo_lock_lists_its_pins_biggest_wheel_first() -> None:
    lock = DEMO_LOCK.read_text()
    demo_files = [
        file
        for file in read_links(LINKS.read_text())
        if any(release_of(file.filename, *pin) for pin in pins(lock))
    ]
    assert ordered_lock(lock, demo_files) == lock


@pytest.mark.parametrize(
    ("filename", "admitted"),
    [
        ("p-1-py3-none-any.whl", True),
        ("p-1-py2.py3-none-any.whl", True),
        ("p-1-py2-none-any.whl", False),
        ("p-1-cp313-cp313-manylinux_2_17_x86_64.whl", True),
        ("p-1-cp312-cp312-manylinux_2_17_x86_64.whl", False),
        ("p-1-cp313-cp313t-manylinux_2_17_x86_64.whl", True),
        ("p-1-cp39-abi3-manylinux_2_17_x86_64.whl", True),
        ("p-1-cp314-abi3-manylinux_2_17_x86_64.whl", False),
        ("p-1-2-py3-none-any.whl", True),  # a build tag
    ],
)
def test_a_wheel_is_kept_when_its_tags_admit_the_python(filename: str, admitted: bool) -> None:
    assert installable(filename, (3, 13)) is admitted


def test_a_release_s_files_are_its_wheels_for_the_pythons_not_others_nor_yanked() -> None:
    found = release_files(
        page(
            ("demo_pkg-1.0-py3-none-any.whl", False),
            ("demo_pkg-1.0-cp313-cp313-manylinux_2_17_x86_64.whl", False),
            ("demo_pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", False),
            ("demo_pkg-1.0.tar.gz", False),
            ("demo_pkg-1.0.1-py3-none-any.whl", False),
            ("demo_pkg-1.0-py2.py3-none-any.whl", True),
        ),
        "demo-pkg",
        "1.0",
        PY313,
    )
    assert [(w.filename, w.size) for w in found] == [
        ("demo_pkg-1.0-py3-none-any.whl", 10),
        ("demo_pkg-1.0-cp313-cp313-manylinux_2_17_x86_64.whl", 20),
    ]
    assert found[0].url == f"https://files.example/demo_pkg-1.0-py3-none-any.whl#sha256={HASH}"


def test_a_release_without_a_wheel_for_the_pythons_gives_its_source_distribution() -> None:
    files = page(
        ("demo-pkg-1.0.tar.gz", False),
        ("demo-pkg-1.0.1.tar.gz", False),
        ("demo-pkg-extra-1.0.tar.gz", False),
        ("demo-pkg.tar.gz", False),
        ("demo_pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", False),
    )
    assert [w.filename for w in release_files(files, "demo_pkg", "1.0", PY313)] == [
        "demo-pkg-1.0.tar.gz"
    ]


def test_the_links_page_reads_back_as_written() -> None:
    wheels = [
        ReleaseFile(
            "b_pkg-2-py3-none-any.whl", f"https://files.example/b?x=1&y=2#sha256={HASH}", 5
        ),
        ReleaseFile("a_pkg-1-py3-none-any.whl", f"https://files.example/a#sha256={HASH}", 7),
    ]
    assert read_links(links_page(wheels)) == sorted(wheels, key=lambda w: w.filename)


def test_write_fills_one_page_for_all_locks_and_orders_the_demo_s_only(tmp_path: Path) -> None:
    demo, dev, links = tmp_path / "demo.lock", tmp_path / "dev.lock", tmp_path / "wheels.html"
    demo.write_text("# pinned\nsmall-pkg==1.0\nBig_Pkg==2.0\n")
    dev.write_text("small-pkg==1.0\nBig_Pkg==1.9\n")
    pages: Mapping[str, dict[str, Any]] = {
        "small-pkg": page(("small_pkg-1.0-py3-none-any.whl", False)),
        "Big_Pkg": page(
            ("big_pkg-1.9-py3-none-any.whl", False),
            ("big_pkg-2.0-py3-none-any.whl", False),
            ("big_pkg-2.0-cp311-cp311-manylinux_2_17_x86_64.whl", False),
        ),
    }
    fetched: list[str] = []

    def fetch(index: str, name: str) -> Mapping[str, Any]:
        assert index == "https://index.example/simple"
        fetched.append(name)
        return pages[name]

    locks = {demo: [(3, 11), (3, 13)], dev: PY313}
    index = "https://index.example/simple"
    assert write(locks, links, demo_lock=demo, index=index, fetch=fetch) == 0

    assert sorted(fetched) == ["Big_Pkg", "small-pkg"]  # each page once
    assert [w.filename for w in read_links(links.read_text())] == [
        "big_pkg-1.9-py3-none-any.whl",
        "big_pkg-2.0-cp311-cp311-manylinux_2_17_x86_64.whl",
        "big_pkg-2.0-py3-none-any.whl",
        "small_pkg-1.0-py3-none-any.whl",
    ]
    assert demo.read_text() == "# pinned\nBig_Pkg==2.0\nsmall-pkg==1.0\n"
    assert dev.read_text() == "small-pkg==1.0\nBig_Pkg==1.9\n"

    dev.write_text("small-pkg==3.0\n")
    assert write(locks, links, demo_lock=demo, index=index, fetch=fetch) == 1


def test_an_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--python", "3.13"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --python 3.13" in capsys.readouterr().err
