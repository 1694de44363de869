"""An endpoint that answers something that is not the AWS service's answer (another service's
JSON, an empty 404, garbage bytes, a page) or never answers: every command says so in one line
naming the endpoint, exit 1 or 2, never a traceback and never a success."""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.parsers import create_parser
from dlq_replay.local.answers import foreign_answer, protocol_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .support import ERROR_LINE, run_cli

ACCOUNT = "123456789012"


@dataclass
class Answer:
    """What the server answers every request with; the test changes it between examples."""

    status: int = 200
    content_type: str = "application/x-amz-json-1.0"
    body: bytes = b"{}"
    requests: list[str] = field(default_factory=list)


class ForeignEndpoint:
    """An HTTP server on 127.0.0.1 that answers every request with `answer`."""

    def __init__(self) -> None:
        self.answer = Answer()
        answer = self.answer

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer.requests.append(self.command)
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer.body)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _reply  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture(scope="module")
def foreign() -> Iterator[ForeignEndpoint]:
    served = ForeignEndpoint()
    yield served
    served.close()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("archive") / "archive.jsonl"
    path.write_text('{"message_id": "1", "body": "{}"}\n')
    return path


def command(name: str, endpoint: str, archive: Path) -> list[str]:
    queue = f"{endpoint}/{ACCOUNT}/orders"
    return {
        "peek": ["peek", queue],
        "status": ["status", "--operator-queue-url", queue],
        "status-stack": ["status", "--stack", "shop"],
        "purge": ["purge", queue, "--confirm", "orders"],
        "export": ["export", queue, "--file", str(archive.parent / f"{uuid.uuid4().hex}.jsonl")],
        "delete": ["delete", queue, "--confirm", "orders"],
        "redrive": ["redrive", "--operator-queue-url", queue, "--main-queue-url", queue + "-m"],
        "import": ["import", str(archive), "--to", queue],
        "pause": ["pause", "--stack", "shop"],
        "plan": ["plan", "--main-queue-url", queue, "--consumer-backoff"],
        "plan-stack": ["plan", "--stack", "shop"],
        "audit": ["audit", "--audit-table", "trail"],
        "worker": [
            "worker",
            "--dlq-url",
            queue,
            "--operator-queue-url",
            queue + "-o",
            "--start-up-patience",
            "0",
        ],
    }[name] + ["--endpoint-url", endpoint]


COMMANDS = [
    "peek",
    "status",
    "status-stack",
    "purge",
    "export",
    "delete",
    "redrive",
    "import",
    "pause",
    "plan",
    "plan-stack",
    "audit",
    "worker",
]


def assert_refused(result: Any, endpoint: str) -> None:
    """Exit 1 or 2, no traceback, one error line naming the endpoint, nothing but our lines."""
    assert result.code in {1, 2}, result
    assert "Traceback" not in result.err, result.err
    lines = result.err.strip().splitlines()
    errors = [line for line in lines if ERROR_LINE.match(line)]
    assert len(errors) == 1, result.err
    assert endpoint in errors[0], errors[0]
    # Any other line is one of ours (the audit trail's note), never the answer itself.
    assert all(line.startswith("dlq-replay") for line in lines), result.err


def json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=8,
    )


BODIES = st.one_of(
    json_values().map(lambda value: json.dumps(value).encode()),
    st.just(b""),
    st.binary(max_size=64),
    st.sampled_from([b"<html><body>502 Bad Gateway</body></html>", b"<!DOCTYPE html><p>hi"]),
    st.sampled_from([b"<?xml version='1.0'?><Other/>", b"<ErrorResponse>", b"not json"]),
)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/x-amz-json-1.0",
        "text/html",
        "text/xml",
        "text/plain",
        "application/octet-stream",
    ]
)


@pytest.mark.parametrize("name", COMMANDS)
@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(status=st.integers(200, 599), content_type=CONTENT_TYPES, body=BODIES)
def test_every_command_refuses_a_foreign_answer_in_one_line(
    capsys: pytest.CaptureFixture[str],
    foreign: ForeignEndpoint,
    archive: Path,
    name: str,
    status: int,
    content_type: str,
    body: bytes,
) -> None:
    foreign.answer.status, foreign.answer.content_type = status, content_type
    foreign.answer.body = body
    result = run_cli(capsys, *command(name, foreign.url, archive))
    assert_refused(result, foreign.url)


@pytest.mark.parametrize(
    ("body", "why"),
    [(b"{}", "(no Attributes)"), (b'{"hello": 1}', "(unknown key 'hello')")],
)
@pytest.mark.parametrize("name", COMMANDS)
def test_json_of_another_service_is_named_so(
    capsys: pytest.CaptureFixture[str],
    foreign: ForeignEndpoint,
    archive: Path,
    name: str,
    body: bytes,
    why: str,
) -> None:
    """HTTP 200 with JSON: was a KeyError traceback (peek, status, ...) or a success (plan,
    audit)."""
    foreign.answer.status, foreign.answer.content_type = 200, "application/x-amz-json-1.0"
    foreign.answer.body = body
    result = run_cli(capsys, *command(name, foreign.url, archive))
    assert_refused(result, foreign.url)
    assert result.code == 1
    (line,) = [line for line in result.err.splitlines() if ERROR_LINE.match(line)]
    if "stack" in name or name == "pause":
        assert "answered HTTP 200 with a body that is not XML, not a CloudFormation" in line
    elif name == "audit":
        assert "answered HTTP 200 with JSON that is not a DynamoDB Query answer" in line
    else:
        assert (
            f"{foreign.url} answered HTTP 200 with JSON that is not an SQS GetQueueAttributes "
            f"answer {why}"
        ) in line, line


@pytest.mark.parametrize("name", ["status", "peek", "plan-stack", "audit", "import"])
def test_an_empty_404_names_the_endpoint_and_the_status(
    capsys: pytest.CaptureFixture[str], foreign: ForeignEndpoint, archive: Path, name: str
) -> None:
    foreign.answer.status, foreign.answer.content_type, foreign.answer.body = 404, "text/plain", b""
    result = run_cli(capsys, *command(name, foreign.url, archive))
    assert_refused(result, foreign.url)
    assert f"{foreign.url} answered HTTP 404 with an empty body, not an AWS error answer" in (
        result.err
    )


# The operations the commands call, of every protocol they meet: JSON (SQS, DynamoDB),
# REST-JSON (Lambda), query XML (CloudFormation, STS), REST-XML (S3).
OPERATIONS = [
    ("sqs", "GetQueueAttributes"),
    ("sqs", "ReceiveMessage"),
    ("sqs", "SendMessageBatch"),
    ("sqs", "PurgeQueue"),
    ("dynamodb", "Query"),
    ("dynamodb", "PutItem"),
    ("lambda", "ListEventSourceMappings"),
    ("lambda", "GetFunctionConfiguration"),
    ("lambda", "Invoke"),
    ("cloudformation", "DescribeStacks"),
    ("sts", "GetCallerIdentity"),
    ("s3", "PutObject"),
    ("cloudwatch", "GetMetricData"),  # CBOR first in its model; this botocore speaks JSON
]
_SESSION = botocore.session.get_session()


def _operation(service: str, name: str) -> Any:
    return _SESSION.get_service_model(service).operation_model(name)


@st.composite
def shaped_json(draw: st.DrawFn, operation: Any) -> bytes:
    """JSON whose keys are the operation's output members (and others), values of any type:
    what reaches botocore's type handling, where a wrong type used to crash its parser."""
    shape = operation.output_shape
    names = list(shape.members) if shape is not None else []
    keys = st.sampled_from(names) | st.text(max_size=6) if names else st.text(max_size=6)
    return json.dumps(draw(st.dictionaries(keys, json_values(), max_size=4))).encode()


@given(
    data=st.data(),
    index=st.integers(0, len(OPERATIONS) - 1),
    status=st.sampled_from([200, 201, 204, 301, 400, 403, 404, 429, 500, 502, 503]),
    header=st.sampled_from([{}, {"x-amzn-errortype": "Throttling"}]),
)
@settings(max_examples=300, deadline=None)
def test_what_the_check_lets_through_botocore_parses(
    data: st.DataObject, index: int, status: int, header: dict[str, str]
) -> None:
    """Over hostile answers, `foreign_answer` never raises, and an answer it lets through is
    one botocore's parser reads without an exception (before, AttributeError, KeyError or
    UnicodeDecodeError came out of it)."""
    service, name = OPERATIONS[index]
    operation = _operation(service, name)
    body = data.draw(BODIES | shaped_json(operation))
    response = {"status_code": status, "headers": header, "body": body}
    if foreign_answer(operation, response) is not None:
        return
    parser = create_parser(protocol_of(operation))
    parser.parse(response, operation.output_shape)


@pytest.mark.parametrize(
    ("service", "name", "status", "body"),
    [
        ("sqs", "GetQueueAttributes", 200, b'{"Attributes": {"QueueArn": "arn"}}'),
        ("sqs", "ReceiveMessage", 200, b"{}"),  # no message: SQS's JSON answer is empty
        ("sqs", "ReceiveMessage", 200, b'{"Messages": [], "SomethingNewer": 1}'),
        ("sqs", "PurgeQueue", 200, b""),
        ("sqs", "GetQueueAttributes", 400, b'{"__type": "QueueDoesNotExist", "message": "x"}'),
        ("dynamodb", "Query", 200, b'{"Items": [], "Count": 0, "ScannedCount": 0}'),
        (
            "cloudformation",
            "DescribeStacks",
            200,
            b"<DescribeStacksResponse xmlns='x'><DescribeStacksResult><Stacks/>"
            b"</DescribeStacksResult></DescribeStacksResponse>",
        ),
        ("cloudformation", "DescribeStacks", 400, b"<ErrorResponse><Error/></ErrorResponse>"),
        ("s3", "PutObject", 200, b""),
        ("lambda", "Invoke", 200, b"not json at all: the function's own answer"),
    ],
)
def test_aws_s_own_answers_pass(service: str, name: str, status: int, body: bytes) -> None:
    response = {"status_code": status, "headers": {}, "body": body}
    assert foreign_answer(_operation(service, name), response) is None


@pytest.mark.parametrize(
    ("service", "name", "status", "body", "what"),
    [
        ("sqs", "GetQueueAttributes", 200, b"{}", "JSON that is not an SQS GetQueueAttributes"),
        ("sqs", "GetQueueAttributes", 200, b"[1]", "(a list, not an object)"),
        ("sqs", "GetQueueAttributes", 200, b'{"Attributes": "x"}', "(Attributes: a string"),
        ("sqs", "ReceiveMessage", 200, b"\xff\xfe", "a body that is not JSON"),
        ("sqs", "ReceiveMessage", 404, b"", "an empty body, not an AWS error answer"),
        ("sqs", "ReceiveMessage", 500, b'{"a": 1}', "JSON that is not an AWS error answer"),
        ("sqs", "ReceiveMessage", 400, b'{"__type": 5}', "JSON that is not an AWS error answer"),
        ("dynamodb", "Query", 200, b'{"hello": 1}', "not a DynamoDB Query answer"),
        ("sts", "GetCallerIdentity", 200, b"<x/>", "(<x>, not <GetCallerIdentityResponse>)"),
        ("sts", "GetCallerIdentity", 403, b"", "an empty body, not an AWS error answer"),
        ("cloudwatch", "GetMetricData", 200, b'{"a": 1}', "not a CloudWatch GetMetricData"),
    ],
)
def test_what_is_not_aws_s_says_what_it_is(
    service: str, name: str, status: int, body: bytes, what: str
) -> None:
    response = {"status_code": status, "headers": {}, "body": body}
    found = foreign_answer(_operation(service, name), response)
    assert found is not None
    assert what in found, found


def test_each_example_asks_the_endpoint(
    capsys: pytest.CaptureFixture[str], foreign: ForeignEndpoint, archive: Path
) -> None:
    """The property above would prove nothing if the commands never reached the server."""
    foreign.answer.requests.clear()
    foreign.answer.status, foreign.answer.body = 200, b"{}"
    for name in itertools.islice(COMMANDS, 3):
        run_cli(capsys, *command(name, foreign.url, archive))
    assert len(foreign.answer.requests) >= 3
