"""What every page shows, driven in process (`test_client`, through the token's middleware) on
moto's queues: one renderer per table (the page and its refresh are the same template), the
bar of running actions, the snapshot whole or partial."""

from __future__ import annotations

import html
import re
import time
import uuid
from typing import TYPE_CHECKING

import pytest
from dlq_replay.cli.console.app import create_app
from dlq_replay.demo.emulator import create_queues

from .support import console_of, park

if TYPE_CHECKING:
    from flask.testing import FlaskClient
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator


def part(html: str, opening: str, closing: str) -> str:
    found = re.search(re.escape(opening) + r".*?" + re.escape(closing), html, re.DOTALL)
    assert found, html[:2000]
    return found.group(0)


def wait_ready(http: FlaskClient, base: str, name: str) -> None:
    deadline = time.monotonic() + 20
    while http.get(f"{base}/api/q/{name}/snapshot").json["state"] == "reading":  # type: ignore[index]
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_the_page_and_its_refresh_are_one_template(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"pg{uuid.uuid4().hex[:6]}")
    name = queues.operator.rsplit("/", 1)[-1]
    park(client, queues.operator, ["one", "two"])
    with console_of(endpoint, queues) as console:
        http, base = create_app(console).test_client(), f"/{console.token}"
        page = http.get(f"{base}/").text
        live = part(page, '<section id="overview-live"', "</section>")
        assert f'data-refresh="{base}/fragments/overview"' in live
        assert f'<tr data-queue="{name}">' in live
        fragment = http.get(f"{base}/fragments/overview")
        assert fragment.status_code == 200
        assert fragment.mimetype == "text/html"
        assert part(fragment.text, '<section id="overview-live"', "</section>") == live
        assert "<html" not in fragment.text  # the table alone, no page around it
        assert "kinds: read as DLQ_KIND=any (no --stack: every kind recognised)" in live

        http.get(f"{base}/q/{name}")
        wait_ready(http, base, name)
        job = http.post(f"{base}/q/{name}/export", data={"csrf": console.csrf, "scope": "filter"})
        assert job.status_code == 303
        job_url = job.headers["Location"]
        assert re.fullmatch(rf"{base}/jobs/\d+", job_url), job_url
        found = console.job(job_url.rsplit("/", 1)[1])
        deadline = time.monotonic() + 20
        while found.state == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        shown = part(http.get(job_url).text, '<div id="job"', "\n</div>")
        again = part(http.get(f"{job_url}/fragment").text, '<div id="job"', "\n</div>")
        assert shown == again
        assert "the tally adds up" in shown
        assert f'href="{job_url}/download"' in shown


def test_the_running_bar_and_a_partial_snapshot(endpoint: str, client: SQSClient) -> None:
    queues = create_queues(client, prefix=f"run{uuid.uuid4().hex[:6]}")
    name = queues.operator.rsplit("/", 1)[-1]
    main = queues.main.rsplit("/", 1)[-1]
    park(client, queues.operator, [f"order {n}" for n in range(6)])
    with console_of(endpoint, queues) as console:
        http, base = create_app(console).test_client(), f"/{console.token}"
        page = http.get(f"{base}/q/{name}").text
        assert 'id="running"' not in page
        wait_ready(http, base, name)
        page = http.get(f"{base}/q/{name}").text
        assert re.search(r'<p id="snapshot-whole">Snapshot of <strong>6</strong> messages', page)
        assert 'class="warning"' not in page

        order = {"csrf": console.csrf, "scope": "filter", "to": "main", "rate": "1"}
        job_url = http.post(f"{base}/q/{name}/redrive", data=order).headers["Location"]
        for path in ("/", "/audit", f"/q/{name}"):
            bar = part(http.get(f"{base}{path}").text, '<p id="running"', "</p>")
            assert f'<a href="{job_url}">redrive {name} -&gt; {main}</a>' in bar, bar
        assert http.post(f"{job_url}/stop", data={"csrf": console.csrf}).status_code == 200
        job = console.job(job_url.rsplit("/", 1)[1])
        deadline = time.monotonic() + 20
        while job.state == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert 'id="running"' not in http.get(f"{base}/").text

        snapshot = console.snapshot(console.queue(name))
        snapshot.partial = "stopped before a message could reach its maxReceiveCount"
        snapshot.expected = 40
        page = http.get(f"{base}/q/{name}").text
        line = part(page, '<p id="snapshot-partial" class="warning">', "</p>")
        assert re.sub(r"<[^>]+>", "", line) == (
            "Partial snapshot: 6 of about 40 messages — stopped before a message could reach "
            "its maxReceiveCount"
        )
        assert 'id="snapshot-whole"' not in page


def test_a_refused_re_read_is_not_offered(endpoint: str, client: SQSClient) -> None:
    """When a new read could move a message on (here: the receive memory is unreadable, so
    nothing can be known), the queue page says why instead of offering Re-read."""
    from dlq_replay.ops.queueinfo import queue_info
    from dlq_replay.ops.receivememory import ReceiveMemory

    queues = create_queues(client, prefix=f"ref{uuid.uuid4().hex[:6]}")
    name = queues.dlq.rsplit("/", 1)[-1]
    park(client, queues.dlq, ["one"])
    memory = ReceiveMemory.local().path(queue_info(client, queues.dlq))
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text("not a memory")
    with console_of(endpoint, queues) as console:
        http, base = create_app(console).test_client(), f"/{console.token}"
        line = console.reread_refusal(console.queue(name))
        assert line
        page = http.get(f"{base}/q/{name}").text
        shown = part(page, '<p id="reread-refusal" class="warning">', "</p>")
        assert html.unescape(re.sub(r"<[^>]+>", "", shown)) == line
        assert 'id="reread"' not in page
        refused = http.post(f"{base}/q/{name}/reread", data={"csrf": console.csrf})
        assert refused.status_code == 409
        assert " ".join(line.split()) in html.unescape(refused.text)
