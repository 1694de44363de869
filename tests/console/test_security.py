"""No page without the token's path, from another Host, or an action without the CSRF token;
no cookie; the headers that keep the page to itself; read-only refuses every action but a
re-read; a download's name stays a name. Plain HTTP (urllib): fast."""

from __future__ import annotations

import re
import time
import uuid
from typing import TYPE_CHECKING

import pytest
from dlq_replay.cli.console.app import CSP
from dlq_replay.demo.emulator import create_queues
from werkzeug.http import parse_options_header

from .support import Browser, Served, depth, park, served

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


def wait_ready(browser: Browser, name: str) -> None:
    deadline = time.monotonic() + 20
    while browser.json(f"/api/q/{name}/snapshot")["state"] == "reading":
        assert time.monotonic() < deadline
        time.sleep(0.1)


def opened(console: Served, name: str) -> Browser:
    """A browser at the console's URL that has seen the queue's page read."""
    browser = Browser(console.url)
    browser.request(f"/q/{name}")
    wait_ready(browser, name)
    return browser


def test_every_request_needs_the_token_and_this_host(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"sec{uuid.uuid4().hex[:6]}")
    with served(endpoint, queues) as console:
        stranger = Browser(console.origin)
        for path in ("/", "/api/overview", "/static/console.js", f"/?token={console.token}"):
            refused = stranger.request(path)
            assert refused.status == 403, path
            assert refused.body == "no token: open the URL the console printed\n"
            assert refused.headers["Content-Security-Policy"] == CSP
            assert refused.headers["Referrer-Policy"] == "no-referrer"
        wrong = console.token[:-1] + ("A" if console.token[-1] != "A" else "B")
        for path in (f"/{wrong}/", f"/{console.token[:-1]}/", f"/x{console.token}/"):
            assert stranger.request(path).status == 403, path

        browser = Browser(console.url)
        first = browser.request("/")
        assert first.status == 200
        assert "Set-Cookie" not in first.headers
        assert list(browser.jar) == []  # no cookie: nothing another port's server could get
        # Every link of the page carries the token's path.
        links = re.findall(r'(?:href|action|src|data-[a-z]+)="(/[^"]*)"', first.body)
        assert links
        assert all(link.startswith(f"/{console.token}/") for link in links), links

        rebinding = browser.request("/", headers={"Host": "evil.example:80"})
        assert rebinding.status == 400
        port = console.origin.rsplit(":", 1)[1]
        for host in ("attacker.test", f"attacker.test:{port}", f"127.0.0.1.nip.io:{port}"):
            assert browser.request("/", headers={"Host": host}).status == 400, host
        # Another port's name for the same address is not this console.
        assert browser.request("/", headers={"Host": "127.0.0.1:1"}).status == 400
        for host in (f"localhost:{port}", f"LOCALHOST:{port}", f"10.1.2.3:{port}", f"[::1]:{port}"):
            assert browser.request("/", headers={"Host": host}).status == 200, host


def test_headers_keep_the_page_to_itself(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"hdr{uuid.uuid4().hex[:6]}")
    with served(endpoint, queues) as console:
        browser = Browser(console.url)
        answer = browser.request("/")
        csp = answer.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp
        assert "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Referrer-Policy"] == "no-referrer"
        assert "<script>" not in answer.body  # only the packaged script, by src
        assert browser.request("/static/console.js").status == 200


def test_no_action_without_the_csrf_token(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"csrf{uuid.uuid4().hex[:6]}")
    park(client, queues.operator, ["a", "b", "c"])
    name = queues.operator.rsplit("/", 1)[-1]
    with served(endpoint, queues) as console:
        browser = opened(console, name)
        order = {"scope": "filter", "to": "main"}
        for path in (f"/q/{name}/redrive", f"/q/{name}/export", "/pause", f"/q/{name}/reread"):
            assert browser.request(path, order).status == 403, path
            assert browser.request(path, {**order, "csrf": "forged"}).status == 403, path
        stranger = Browser(console.origin)
        assert stranger.request(f"/q/{name}/redrive", {**order, "csrf": "x"}).status == 403
        csrf = browser.csrf()
        assert stranger.request(f"/q/{name}/redrive", {**order, "csrf": csrf}).status == 403
        assert console.console.jobs.jobs == {}
        assert depth(client, queues.operator) == 3
        assert depth(client, queues.main) == 0

        moved = browser.request(f"/q/{name}/redrive", {**order, "csrf": browser.csrf()})
        assert moved.status == 200
        assert depth(client, queues.main) == 3 or _settles(client, queues.main, 3)


def _settles(client: SQSClient, url: str, count: int) -> bool:
    deadline = time.monotonic() + 10
    while depth(client, url) != count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_read_only_hides_and_refuses_every_action(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"ro{uuid.uuid4().hex[:6]}")
    park(client, queues.operator, ["x"])
    name = queues.operator.rsplit("/", 1)[-1]
    with served(endpoint, queues, "--read-only") as console:
        browser = opened(console, name)
        page = browser.request(f"/q/{name}").body
        assert "plan-redrive" not in page
        assert 'name="id"' not in page
        assert "read-only" in page
        csrf = browser.csrf()
        for path in (f"/q/{name}/redrive", f"/q/{name}/plan", "/pause"):
            answer = browser.request(path, {"scope": "filter", "to": "main", "csrf": csrf})
            assert answer.status == 403, path
            assert "read-only console: no action is accepted" in answer.body
        for path in (f"/q/{name}/export", f"/q/{name}/delete", f"/q/{name}/purge", "/jobs/1/stop"):
            answer = browser.request(path, {"scope": "filter", "confirm": name, "csrf": csrf})
            assert answer.status == 403, path
        assert console.console.jobs.jobs == {}
        assert depth(client, queues.operator) == 1
        # A re-read is a read, not an action: offered and accepted (with the CSRF token only).
        assert 'id="reread"' in page
        assert browser.request(f"/q/{name}/reread", {}).status == 403
        before = console.console.snapshot(console.console.queue(name))
        reread = browser.request(f"/q/{name}/reread", {"csrf": csrf})
        assert reread.status == 200
        assert console.console.snapshot(console.console.queue(name)) is not before
        wait_ready(browser, name)
        assert depth(client, queues.operator) == 1


def test_an_export_filename_stays_a_filename(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"exp{uuid.uuid4().hex[:6]}")
    park(client, queues.operator, ['{"a": 1}', "two"])
    name = queues.operator.rsplit("/", 1)[-1]
    with served(endpoint, queues) as console:
        browser = opened(console, name)
        hostile = 'a"; filename=evil.sh; x="<b>.jsonl'
        job = browser.request(
            f"/q/{name}/export",
            {"scope": "filter", "filename": hostile, "csrf": browser.csrf()},
        )
        assert job.status == 200
        job_id = console.console.jobs.jobs and max(console.console.jobs.jobs)
        deadline = time.monotonic() + 15
        while browser.json(f"/api/jobs/{job_id}")["state"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        download = browser.request(f"/jobs/{job_id}/download")
        assert download.status == 200
        disposition = download.headers["Content-Disposition"]
        kind, options = parse_options_header(disposition)
        assert kind == "attachment"
        # One parameter: the name, quoted whole; its quotes cannot end it early.
        assert set(options) - {"filename*"} == {"filename"}
        assert options["filename"] == hostile
        assert len(download.body.splitlines()) == 2
        assert depth(client, queues.operator) == 2  # an export without --delete keeps them
        assert hostile not in browser.request(f"/jobs/{job_id}").body
