"""An endpoint that answers with an HTML page (a proxy's error page, a web server on the wrong
port): every command says so in one line naming the endpoint and the HTTP status, never the
page and never a traceback; the worker's logs carry the same line. And an endpoint variable set
but empty is a usage error, not AWS's own endpoints."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest
from dlq_replay.local.answers import (
    ForeignAnswerError,
    HtmlAnswerError,
    endpoint_of,
    error_text,
    is_html,
    refuse_foreign_answers,
)
from dlq_replay.local.eventsource import LocalEventSource, Polling, can_heal
from dlq_replay.sqs.client import sqs_client
from hypothesis import given
from hypothesis import strategies as st

from .support import assert_one_line_error, run_cli

PAGE = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


def _serve(status: int, content_type: str) -> tuple[ThreadingHTTPServer, str]:
    class Page(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture(
    scope="module",
    params=[(502, "text/html"), (200, "text/html")],
    ids=["502", "200"],
)
def html(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    """(the endpoint, its status): an error page of a proxy, a page of a web server."""
    status, content_type = request.param
    server, url = _serve(status, content_type)
    yield url, status
    server.shutdown()
    server.server_close()


def command_args(command: str, endpoint: str, tmp_path: Path) -> list[str]:
    queue = f"{endpoint}/123456789012/orders"
    archive = tmp_path / "archive.jsonl"
    archive.write_text('{"message_id": "1", "body": "{}"}\n')
    return {
        "status": ["status", "--stack", "shop"],
        "status-queue": ["status", "--operator-queue-url", queue],
        "peek": ["peek", "operator", "--stack", "shop"],
        "peek-queue": ["peek", queue],
        "plan": ["plan", "--stack", "shop"],
        "pause": ["pause", "--stack", "shop"],
        "resume": ["resume", "--stack", "shop"],
        "redrive": ["redrive", "--stack", "shop"],
        "redrive-queue": [
            "redrive",
            "--operator-queue-url",
            queue,
            "--main-queue-url",
            queue + "-m",
        ],
        "export": ["export", "operator", "--stack", "shop", "--file", str(tmp_path / "o.jsonl")],
        "import": ["import", str(archive), "--to", queue],
        "worker": [
            "worker",
            "--dlq-url",
            queue,
            "--main-queue-url",
            queue + "-main",
            "--operator-queue-url",
            queue + "-operator",
            "--start-up-patience",
            "0",
        ],
    }[command]


COMMANDS = [
    "status",
    "status-queue",
    "peek",
    "peek-queue",
    "plan",
    "pause",
    "resume",
    "redrive",
    "redrive-queue",
    "export",
    "import",
    "worker",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_an_html_answer_is_one_line_naming_the_endpoint_and_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, html: tuple[str, int], command: str
) -> None:
    endpoint, status = html
    result = run_cli(capsys, *command_args(command, endpoint, tmp_path), "--endpoint-url", endpoint)
    assert_one_line_error(result, 1, f"{endpoint} answered HTTP {status} with an HTML page")
    assert "<" not in result.err
    assert "nginx" not in result.err


def test_a_page_whose_type_does_not_say_html_is_seen_by_its_body(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    server, endpoint = _serve(200, "application/octet-stream")
    try:
        args = command_args("status-queue", endpoint, tmp_path)
        result = run_cli(capsys, *args, "--endpoint-url", endpoint)
    finally:
        server.shutdown()
        server.server_close()
    assert_one_line_error(result, 1, f"{endpoint} answered HTTP 200 with an HTML page")


def test_the_worker_logs_an_html_answer_in_one_line(
    html: tuple[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    """A poll that meets the page logs one line (no page) and keeps polling."""
    endpoint, status = html
    session = boto3.Session(region_name="us-east-1")
    refuse_foreign_answers(session)
    client = sqs_client(endpoint, session=session)
    logger = logging.getLogger("test.html")
    source = LocalEventSource(
        client,
        f"{endpoint}/123456789012/dlq",
        lambda event, context: {"batchItemFailures": []},
        Polling(wait_seconds=0),
        logger=logger,
        queue_arn="arn:aws:sqs:us-east-1:123456789012:dlq",
    )
    stop = threading.Event()
    with caplog.at_level(logging.ERROR, logger="test.html"):
        poller = threading.Thread(target=source.run, args=(stop,))
        poller.start()
        while not caplog.records and poller.is_alive():
            stop.wait(0.05)
        stop.set()
        poller.join(timeout=10)
    record = caplog.records[0]
    error = str(record.__dict__["error"])
    assert error.startswith("HtmlAnswerError: ReceiveMessage failed:"), error
    assert f"{endpoint} answered HTTP {status}" in error
    assert "\n" not in error
    assert "<" not in error


@pytest.mark.parametrize(
    ("status", "heals"), [(502, True), (503, True), (200, False), (404, False)]
)
def test_only_a_proxy_s_error_page_may_heal(status: int, heals: bool) -> None:
    error = HtmlAnswerError(operation="GetQueueAttributes", endpoint="http://x", status=status)
    assert can_heal(error) is heals
    # The same for any answer that is not AWS's (a proxy's empty 502, another server's JSON).
    other = ForeignAnswerError(
        operation="ReceiveMessage", endpoint="http://x", status=status, what="an empty body"
    )
    assert can_heal(other) is heals


@given(
    st.sampled_from([b"", b" ", b"\r\n\t "]),
    st.sampled_from([b"<!DOCTYPE html>", b"<html>", b"<HTML lang=en>", b"<!doctype HTML>"]),
    st.binary(max_size=64),
)
def test_an_html_body_is_seen_whatever_its_case_and_leading_space(
    space: bytes, start: bytes, rest: bytes
) -> None:
    assert is_html({"headers": {}, "status_code": 200, "body": space + start + rest})


@given(st.binary(max_size=200).filter(lambda body: b"<" not in body))
def test_a_body_without_markup_is_not_html(body: bytes) -> None:
    assert not is_html({"headers": {"content-type": "application/x-amz-json-1.0"}, "body": body})


@pytest.mark.parametrize("content_type", ["text/xml", "application/x-amz-json-1.0", "text/html"])
def test_aws_answers_are_not_html(content_type: str) -> None:
    """What AWS sends: JSON (SQS, Lambda), XML with an XML declaration or a root element
    (Query); moto's server sends them as text/html."""
    for body in (b'{"QueueUrls": []}', b'<?xml version="1.0"?><R/>', b"<ErrorResponse/>"):
        assert not is_html({"headers": {"content-type": content_type}, "body": body})


def test_the_endpoint_is_the_url_without_its_path() -> None:
    assert endpoint_of("http://127.0.0.1:4566/123456789012/q") == "http://127.0.0.1:4566"
    assert endpoint_of("https://sqs.us-east-1.amazonaws.com/") == (
        "https://sqs.us-east-1.amazonaws.com"
    )
    assert endpoint_of("") == "the endpoint"


EMPTY_COMMANDS = ["status-queue", "peek-queue", "redrive-queue", "import", "worker", "plan"]


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"])
@pytest.mark.parametrize("command", EMPTY_COMMANDS)
def test_an_endpoint_variable_set_but_empty_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
    variable: str,
) -> None:
    """Read as unset it would send a command meant for an emulator to AWS."""
    monkeypatch.setenv(variable, "")
    if command == "plan" and variable == "AWS_ENDPOINT_URL_SQS":
        monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", "")
        variable = "AWS_ENDPOINT_URL_CLOUDFORMATION"
    queue = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
    args = command_args(command, "https://sqs.us-east-1.amazonaws.com", tmp_path)
    assert queue in args or command == "plan"
    result = run_cli(capsys, *args)
    assert_one_line_error(result, 2, f"{variable} is set but empty", "unset it")


def test_botocore_s_own_parse_error_is_one_line_without_the_page() -> None:
    """A client made elsewhere (without the hook) still ends in one line, the page left out."""
    from botocore.parsers import ResponseParserError
    from dlq_replay.cli.errors import describe_error

    error = ResponseParserError(
        "Unable to parse response (mismatched tag: line 6, column 2), invalid XML received. "
        f"Further retries may succeed:\n{PAGE!r}"
    )
    line, code = describe_error(error)
    assert code == 1
    assert line.startswith("the endpoint's answer is not an AWS response: Unable to parse")
    assert "\n" not in line
    assert "<html>" not in line


def test_a_logged_error_is_its_class_and_first_line() -> None:
    from botocore.parsers import ResponseParserError

    page = ResponseParserError(f"Unable to parse response, invalid XML received:\n{PAGE!r}")
    assert (
        error_text(page) == "ResponseParserError: Unable to parse response, invalid XML received:"
    )
    assert error_text(KeyError("Attributes")) == "KeyError: 'Attributes'"
    assert error_text(TimeoutError()) == "TimeoutError"
