"""Headless Chromium (Debian's chromium and chromium-driver) through Selenium.

Locally the browser tests are skipped, saying why, when Chromium or its driver is missing; in CI
(`CI=true`, where .ci/run installs both) a missing browser fails them instead."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1360,900",
)


def missing() -> str | None:
    """Why no browser can run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(Path(path).name)):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (requirements/dev.lock)"
    return None


def need_browser() -> None:
    why = missing()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"the console's browser tests need Chromium in CI: {why}")
    pytest.skip(f"no browser: {why}")


@contextmanager
def chromium() -> Iterator[Any]:
    need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="console-chromium-") as profile:
        options = Options()
        options.binary_location = CHROMIUM if os.path.exists(CHROMIUM) else "chromium"
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver_path = CHROMEDRIVER if os.path.exists(CHROMEDRIVER) else "chromedriver"
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        driver.set_page_load_timeout(30)
        try:
            yield driver
        finally:
            driver.quit()


SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def screenshot(driver: Any, name: str) -> None:
    """console-NAME.png in build/screenshots/, or in the folder CONSOLE_SCREENSHOTS names
    (docs/img, to refresh the docs' pictures)."""
    folder = Path(os.environ.get("CONSOLE_SCREENSHOTS") or SCREENSHOTS)
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"console-{name}.png"))


def wait_for(check: Callable[[], Any], seconds: float = 20) -> Any:
    """`check()`'s first true answer; an element the page's script replaced meanwhile, or
    one of a page still loading (a form's answer on its way), is looked for again. (Chromium
    reports a replaced element as stale, or, read mid-replacement, as a node that "does not
    belong to the document".)"""
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
        WebDriverException,
    )

    deadline = time.monotonic() + seconds
    while True:
        try:
            found = check()
        except (StaleElementReferenceException, NoSuchElementException):
            found = None
        except WebDriverException as error:
            if "does not belong to the document" not in str(error.msg):
                raise
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
