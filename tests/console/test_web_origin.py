"""The token never reaches another origin, and consoles work side by side, in one real browser
(headless Chromium): what RFC 6265 cookies could not give (a cookie of 127.0.0.1 goes to every
port of it, and a second console's would overwrite the first's), the token's path does."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.demo.emulator import create_queues

from .browser import chromium, screenshot, wait_for
from .support import park, served

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
pytestmark = pytest.mark.emulator


PAGE = b"""<!doctype html><html><head><title>another server</title></head><body>
<p id="other">another server on this machine</p><img src="/pixel.png" alt="">
<script>fetch("/api/anything", {credentials: "include"});</script></body></html>"""


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium() as found:
        yield found


@contextmanager
def recording_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A plain HTTP server on another port of 127.0.0.1 (what any local program may run):
    its URL, and every request it received (the path and each header)."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if self.path == "/" else "text/plain")
            self.end_headers()
            self.wfile.write(PAGE if self.path == "/" else b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_token_never_reaches_another_port(
    driver: Any, endpoint: str, client: SQSClient
) -> None:
    from selenium.webdriver.common.by import By

    queues = create_queues(client, prefix=f"orig{uuid.uuid4().hex[:6]}")
    park(client, queues.operator, ["a parked message"])
    name = queues.operator.rsplit("/", 1)[-1]
    with served(endpoint, queues) as console, recording_server() as (other, seen):
        driver.get(console.start_url)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, f'tr[data-queue="{name}"]'))
        driver.get(f"{console.url}/q/{name}")
        wait_for(lambda: driver.find_elements(By.ID, "messages"))
        # Leave the console's page for the other server's, as a link would (the Referer),
        # then open the other server's page directly (its cookies), which asks itself more.
        driver.execute_script("window.location.href = arguments[0]", f"{other}/from-console")
        wait_for(lambda: any(r["path"] == "/from-console" for r in seen))
        driver.get(f"{other}/")
        wait_for(lambda: driver.find_elements(By.ID, "other"))
        wait_for(lambda: {"/pixel.png", "/api/anything"} <= {r["path"] for r in seen})
        assert len(seen) >= 4
        for request in seen:
            assert console.token not in str(request), request
            assert "cookie" not in request, request
        left = next(r for r in seen if r["path"] == "/from-console")
        assert "referer" not in left, left  # Referrer-Policy: no-referrer
        # ... and the console still answers the browser: nothing to trade, nothing lost.
        driver.get(f"{console.url}/q/{name}")
        assert driver.find_elements(By.ID, "messages")
        assert driver.get_cookies() == []


def test_two_consoles_side_by_side_in_one_browser(
    driver: Any, endpoint: str, client: SQSClient
) -> None:
    from selenium.webdriver.common.by import By

    first_queues = create_queues(client, prefix=f"one{uuid.uuid4().hex[:6]}")
    second_queues = create_queues(client, prefix=f"two{uuid.uuid4().hex[:6]}")
    first_name = first_queues.operator.rsplit("/", 1)[-1]
    with served(endpoint, first_queues) as first, served(endpoint, second_queues) as second:
        driver.get(first.start_url)
        wait_for(lambda: driver.find_elements(By.ID, "overview"))
        first_tab = driver.current_window_handle
        driver.switch_to.new_window("tab")
        driver.get(second.start_url)
        opened = time.monotonic()
        wait_for(lambda: driver.find_elements(By.ID, "overview"))
        screenshot(driver, "second-console")
        # Each page keeps refreshing from its own console (a 403 would not count), the first
        # in its background tab.
        wait_for(lambda: second.asked("/fragments/overview", since=opened) >= 1, 20)
        wait_for(lambda: first.asked("/fragments/overview", since=opened) >= 1, 20)
        park(client, first_queues.operator, ["parked while the second console was open"])
        driver.switch_to.window(first_tab)
        wait_for(lambda: visible(driver, first_name) == "1", 20)
        driver.refresh()
        assert visible(driver, first_name) == "1"
        for console in (first, second):
            mine = [status for _, path, status in console.requests if console.token in path]
            assert mine
            assert set(mine) == {200}, mine
        driver.switch_to.window(driver.window_handles[-1])
        driver.close()
        driver.switch_to.window(first_tab)


def visible(driver: Any, name: str) -> str:
    """The overview's `visible` count of queue `name`."""
    from selenium.webdriver.common.by import By

    row = driver.find_element(By.CSS_SELECTOR, f'tr[data-queue="{name}"]')
    return str(row.find_elements(By.TAG_NAME, "td")[2].text)
