"""Never a 500: whatever a query, a form or a parked message holds, the console answers with a
page (or a 4xx that says what was wrong) in which every value is text. The Flask app is driven
in process (`test_client`, through the token's middleware) on moto's queues holding hostile
messages: deep JSON, 250 KB, control and bidi characters, HTML, invalid UTF-8 in a binary
attribute."""

from __future__ import annotations

import ipaddress
import json
import re
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.cli.console.app import create_app, host_allowed, safe_filename
from dlq_replay.demo.emulator import Queues, create_queues
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .support import console_of, park

if TYPE_CHECKING:
    from dlq_replay.cli.console.state import Console
    from flask.testing import FlaskClient
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.moto_only(reason="the demo's embedded moto server, in this process")

TEMPLATES = Path(__file__).resolve().parents[2] / ("layers/replay/dlq_replay/cli/console/templates")
# Every form and query field the templates send (checked against them below).
FIELDS = (
    "csrf", "enable", "confirm", "scope", "to", "rate", "reset_count", "filename", "id",
    "reason", "kind", "target", "error", "text", "older_than", "newer_than", "page",
)  # fmt: skip
MARK = "<x-hostile"  # in every hostile value: never raw in a page
HOSTILE_BODIES = [
    "[" * 100_000 + "]" * 100_000,  # legal JSON, 200 KB, deeper than the parser goes
    json.dumps({"a": [{"b": "<x-hostile-json>"}] * 3}) + " " * 200_000,
    "tab\tcr\rlf\n C1:\x85\x9b bidi:\u202e zero width:\u200b <x-hostile-ctl>",
    "<script>alert('x')</script><x-hostile-html><img src=x onerror=alert(1)>",
    "\U0001f600\U0010fffd <x-hostile-astral> &amp; &lt;",
]
ODD_VALUES = [
    "abc", "1w", "15 min", "-1", "0", "99999999999999999999", "9" * 400 + "d", "nan", "inf",
    "1e400", "", " ", "\r\n", "a\r\nb", "\x00", "%00", "\u202e", "<x-hostile-q>", "'\"><x-hostile>",
    "selection", "filter", "main", "source", "target", "max-attempts", "sqs",
]  # fmt: skip
values = st.one_of(
    st.sampled_from(ODD_VALUES),
    st.text(max_size=30),
    st.text(max_size=10).map(lambda text: f"{MARK}-{text}>"),
    st.integers().map(str),
)


@dataclass
class Hostile:
    console: Console
    http: FlaskClient
    shown: str  # a queue holding the hostile messages, read into its snapshot
    acted: str  # a queue the actions are tried on

    def url(self, path: str) -> str:
        return f"/{self.console.token}{path}"


@contextmanager
def hostile(endpoint: str, client: SQSClient) -> Iterator[Hostile]:
    shown = create_queues(client, prefix=f"hx{uuid.uuid4().hex[:6]}")
    acted = create_queues(client, prefix=f"ha{uuid.uuid4().hex[:6]}")
    for body in HOSTILE_BODIES:
        client.send_message(
            QueueUrl=shown.operator,
            MessageBody=body,
            MessageAttributes={
                "dlq-replay-park-reason": {"DataType": "String", "StringValue": "<x-hostile-r>"},
                "note": {"DataType": "String", "StringValue": "<x-hostile-attr>\u202e\r\n"},
                "raw": {"DataType": "Binary", "BinaryValue": b"\xff\xfe<x-hostile-bin>\x80"},
                "n": {"DataType": "Number", "StringValue": "1e400"},
            },
        )
    park(client, acted.operator, [f"order {n}" for n in range(3)])
    with console_of(endpoint, shown) as console:
        found = Hostile(
            console,
            create_app(console).test_client(),
            _name(shown),
            _name(acted),
        )
        ready(found, found.shown)
        yield found


def _name(queues: Queues) -> str:
    return queues.operator.rsplit("/", 1)[-1]


def ready(found: Hostile, name: str) -> None:
    deadline = time.monotonic() + 20
    while found.http.get(found.url(f"/api/q/{name}/snapshot")).json["state"] == "reading":  # type: ignore[index]
        assert time.monotonic() < deadline
        time.sleep(0.1)


def check(answer: Any, path: str) -> None:
    """No 500, a line for every refusal, and no value raw in the page."""
    assert answer.status_code < 500, (path, answer.status_code, answer.text[:300])
    text = answer.get_data(as_text=True)
    if answer.mimetype == "text/html":
        assert MARK not in text.lower(), path
        assert "<script>alert" not in text
        assert "<img" not in text
        if answer.status_code >= 400:
            assert re.search(r'<p id="problem" class="error">[^<]+</p>', text), text[:500]
    elif path.startswith("/api/") and answer.status_code >= 400:
        assert answer.mimetype == "application/json"
        assert answer.json["error"]


def test_the_fields_are_the_templates_fields() -> None:
    sent = set()
    for template in TEMPLATES.glob("*.html"):
        sent |= set(re.findall(r'\bname="([a-z_]+)"', template.read_text()))
    plan = (TEMPLATES / "plan.html").read_text()
    sent |= set(re.findall(r'"([a-z_]+)"', plan.split("{% for key in [", 1)[1].split("]", 1)[0]))
    assert sent | {"page"} == set(FIELDS)


def test_the_known_hostile_inputs(endpoint: str, client: SQSClient) -> None:
    with hostile(endpoint, client) as found:
        page = found.http.get(found.url(f"/q/{found.shown}"))
        check(page, "/q")
        assert page.status_code == 200
        text = page.get_data(as_text=True)
        # The deep body shows as it is (not pretty-printed); the JSON one pretty-printed.
        assert "[" * 1000 in text
        assert "&lt;x-hostile-json&gt;" in text
        assert '"b": "&lt;x-hostile-json&gt;"' in text.replace("&#34;", '"')
        assert "&lt;x-hostile-attr&gt;" in text
        assert "<x-hostile-bin>" not in text
        assert "kinds: read as DLQ_KIND=any (no --stack: every kind recognised)" in text
        assert re.search(r'id="snapshot-whole">Snapshot of <strong>5</strong> messages', text)

        for field in ("older_than", "newer_than"):
            for value in ("abc", "1w", "15 min"):
                query = urllib.parse.urlencode({field: value})
                answer = found.http.get(found.url(f"/q/{found.shown}?{query}"))
                check(answer, "/q")
                assert answer.status_code == 400
                words = field.replace("_", " ")
                assert f"{words}: &#39;{value}&#39; is not a duration" in answer.text
                form = {"csrf": found.console.csrf, "scope": "filter", field: value}
                for action in ("plan", "redrive", "export", "delete"):
                    refused = found.http.post(found.url(f"/q/{found.acted}/{action}"), data=form)
                    check(refused, action)
                    assert refused.status_code == 400, (action, value)
                    assert "is not a duration" in refused.text
        assert found.console.jobs.jobs == {}

        last = found.http.get(found.url(f"/q/{found.shown}?page=99999999999999999999"))
        assert last.status_code == 200
        assert "showing 5 from 1" in last.text

        for path in ("/q/no-such-queue", "/jobs/424242", "/jobs/x/fragment", "/nowhere"):
            missing = found.http.get(found.url(path))
            check(missing, path)
            assert missing.status_code == 404, path
        missing_json = found.http.get(found.url("/api/jobs/424242"))
        check(missing_json, "/api/jobs/424242")
        assert missing_json.status_code == 404
        assert set(missing_json.json or {}) == {"error"}

        job = found.http.post(
            found.url(f"/q/{found.acted}/export"),
            data={"csrf": found.console.csrf, "scope": "filter", "filename": "a\r\nb\x00c.jsonl"},
        )
        assert job.status_code in {303, 400}  # 400 while the acted queue's snapshot reads
        ready(found, found.acted)
        job = found.http.post(
            found.url(f"/q/{found.acted}/export"),
            data={"csrf": found.console.csrf, "scope": "filter", "filename": "a\r\nb\x00c.jsonl"},
        )
        assert job.status_code == 303
        exported = max(found.console.jobs.jobs.values(), key=lambda j: int(j.id))
        deadline = time.monotonic() + 20
        while exported.state == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        download = found.http.get(found.url(f"/jobs/{exported.id}/download"))
        assert download.status_code == 200
        assert download.headers["Content-Disposition"] == "attachment; filename=abc.jsonl"


def test_safe_filename() -> None:
    assert safe_filename("report.jsonl", "x") == "report.jsonl"
    assert safe_filename("../../etc/passwd", "x") == "_.._etc_passwd"
    assert safe_filename("\r\n\t\x00", "default.jsonl") == "default.jsonl"
    assert safe_filename("a\u202eb\u2028c", "x") == "abc"
    assert len(safe_filename("n" * 1000, "x")) == 200


@given(st.text(max_size=60), st.frozensets(st.text(max_size=10), max_size=3))
def test_any_host_header_is_judged_without_fail(host: str, names: frozenset[str]) -> None:
    """Allowed only with our port, by one of our names or an IP literal."""
    if host_allowed(host, names, "8080"):
        name, port = host.strip().lower().rsplit(":", 1)
        assert port == "8080"
        assert name in {n.lower() for n in names} or ipaddress.ip_address(name.strip("[]"))


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("localhost:8080", True), ("LocalHost:8080", True), ("127.0.0.1:8080", True),
        ("10.0.0.7:8080", True), ("[::1]:8080", True), ("[fe80::1]:8080", True),
        ("console.lan:8080", True), ("localhost:8081", False), ("127.0.0.1", False),
        ("evil.example:8080", False), ("127.0.0.1.nip.io:8080", False), ("[::1]", False),
        ("[evil]:8080", False), ("::1:8080", False), ("", False), ("localhost:8080:1", False),
        ("0x7f.1:8080", False),
    ],
)  # fmt: skip
def test_host_check(host: str, *, allowed: bool) -> None:
    assert host_allowed(host, frozenset({"localhost", "console.lan"}), "8080") is allowed


paths = st.one_of(
    st.sampled_from(
        [
            "/", "/fragments/overview", "/api/overview", "/q/{shown}", "/api/q/{shown}/snapshot",
            "/audit", "/jobs/{job}", "/jobs/{job}/fragment", "/api/jobs/{job}",
            "/jobs/{job}/download", "/q/{job}", "/api/q/{job}/snapshot", "/static/console.js",
            "/static/{job}", "/{job}",
        ]
    ),
)  # fmt: skip
queries = st.one_of(
    st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), values, max_size=6),
    st.binary(max_size=40).map(lambda raw: urllib.parse.quote_from_bytes(raw, safe="=&")),
)
ids = st.one_of(st.sampled_from(["1", "2", "999999999999999999999", "x"]), st.text(max_size=8))


def test_no_query_ends_in_a_500(endpoint: str, client: SQSClient) -> None:
    with hostile(endpoint, client) as found:

        @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(paths, queries, ids)
        def one(path: str, query: dict[str, str] | str, job: str) -> None:
            where = path.format(shown=found.shown, job=urllib.parse.quote(job, safe=""))
            answer = found.http.get(found.url(where), query_string=query)
            check(answer, where)

        one()


actions = st.sampled_from(
    [
        "/q/{acted}/plan", "/q/{acted}/redrive", "/q/{acted}/export", "/q/{acted}/delete",
        "/q/{acted}/purge", "/q/{acted}/reread", "/pause", "/jobs/{job}/stop", "/q/{job}/plan",
        "/q/{shown}/plan",
    ]
)  # fmt: skip
forms = st.dictionaries(
    st.sampled_from(FIELDS), st.lists(values, min_size=1, max_size=3), max_size=8
)


def test_no_form_ends_in_a_500(endpoint: str, client: SQSClient) -> None:
    with hostile(endpoint, client) as found:
        ready(found, found.acted)

        @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(actions, forms, ids, st.booleans())
        def one(path: str, form: dict[str, list[str]], job: str, with_csrf: bool) -> None:
            where = path.format(
                shown=found.shown, acted=found.acted, job=urllib.parse.quote(job, safe="")
            )
            if with_csrf:
                form = {**form, "csrf": [found.console.csrf]}
            answer = found.http.post(found.url(where), data=form)
            check(answer, where)
            if not with_csrf:
                assert answer.status_code == 403, (where, answer.status_code)

        one()
