"""An endpoint whose answer is not the AWS service's (a proxy's error page, another service's
JSON, an empty 404), or that never answers: one line naming the endpoint, the operation and what
came back. Left to itself botocore raises a parser error with the whole page, or parses another
shape (HTTP 200 with `{"hello": 1}`) as an empty answer that fails later or reads as "nothing"."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from xml.etree import ElementTree

from botocore.exceptions import BotoCoreError, ReadTimeoutError
from botocore.utils import parse_timestamp

if TYPE_CHECKING:
    import boto3
    from botocore.model import OperationModel, Shape

_HTML_STARTS = (b"<!doctype html", b"<html")

# Keys AWS always sends (read without a default): an answer without one is another server's.
ALWAYS_SENT: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("SQS", "GetQueueAttributes"): ("Attributes",),
    ("SQS", "GetQueueUrl"): ("QueueUrl",),
    ("SQS", "CreateQueue"): ("QueueUrl",),
    ("SQS", "SendMessage"): ("MessageId",),
    ("SQS", "StartMessageMoveTask"): ("TaskHandle",),
    ("DynamoDB", "Query"): ("Items",),
    ("DynamoDB", "Scan"): ("Items",),
    ("Lambda", "ListEventSourceMappings"): ("EventSourceMappings",),
}
# The root element of a query-protocol (XML) error answer, AWS's and S3's.
_XML_ERROR_ROOTS = frozenset({"ErrorResponse", "Error", "Response"})
# What each JSON type of an output shape's member must be, by the shape's type name.
_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "structure": (dict,),
    "map": (dict,),
    "list": (list,),
    "string": (str,),
    "blob": (str,),
    "integer": (int,),
    "long": (int,),
    "boolean": (bool,),
    "float": (int, float),
    "double": (int, float),
    "timestamp": (int, float, str),
}
_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}


class ForeignAnswerError(BotoCoreError):
    """An answer that is not the AWS service's (`what` says what came back)."""

    fmt = "{operation} failed: {endpoint} answered HTTP {status} with {what}"

    def __init__(self, *, operation: str, endpoint: str, status: int, what: str) -> None:
        super().__init__(operation=operation, endpoint=endpoint, status=status, what=what)
        self.status = status


class HtmlAnswerError(ForeignAnswerError):
    def __init__(self, *, operation: str, endpoint: str, status: int) -> None:
        page = "an HTML page, not an AWS response"
        super().__init__(operation=operation, endpoint=endpoint, status=status, what=page)


class NoAnswerError(ReadTimeoutError):
    """No answer within the read timeout, retries spent: a worker rides it out."""

    fmt = "{operation} failed: no answer from {endpoint} within {seconds} s (read timeout)"


def is_html(response: Mapping[str, Any]) -> bool:
    """Whether an answer is an HTML page, by its body: emulators send JSON and XML as text/html."""
    body = response.get("body")
    return isinstance(body, bytes) and body[:64].lstrip().lower().startswith(_HTML_STARTS)


def foreign_answer(operation: OperationModel, response: Mapping[str, Any]) -> str | None:
    """What came back, when an answer (before parsing) is not the service's answer to
    `operation`; None when it is, or may be. Unknown keys beside known ones pass: AWS adds output
    members before this botocore knows them."""
    body = response.get("body")
    if operation.http.get("method") == "HEAD" or not isinstance(body, bytes):
        return None  # no body (HEAD), or a stream botocore hands on unparsed (S3's GetObject)
    if is_html(response):
        return "an HTML page, not an AWS response"
    status = int(response.get("status_code") or 0)
    headers: Mapping[str, str] = response.get("headers") or {}
    protocol = protocol_of(operation)
    if protocol in {"json", "rest-json"}:
        return _foreign_json(operation, status, headers, body)
    if protocol in {"query", "rest-xml", "ec2"}:
        return _foreign_xml(operation, status, body)
    return None


def protocol_of(operation: OperationModel) -> str:
    """The first of the service's protocols this botocore speaks (CloudWatch lists CBOR first)."""
    model = operation.service_model
    return str(getattr(model, "resolved_protocol", None) or model.protocol)


def _answer(operation: OperationModel, status: int) -> str:
    """ "an SQS GetQueueAttributes answer", "an AWS error answer"."""
    if status >= 300:
        return "an AWS error answer"
    service = str(operation.service_model.metadata.get("serviceId", "AWS"))
    vowel = service[:1] in set("AEIOU") or (
        service[:2].isupper() and service[:1] in set("FHLMNRSX")
    )
    return f"{'an' if vowel else 'a'} {service} {operation.name} answer"


def _foreign_json(
    operation: OperationModel, status: int, headers: Mapping[str, str], body: bytes
) -> str | None:
    answer = _answer(operation, status)
    body_shape = _body_shape(operation)
    if status < 300 and body_shape is None and operation.output_shape is not None:
        return _untext(body, answer)  # a raw payload: anything botocore can decode
    if not body.strip():
        if status >= 300 and "x-amzn-errortype" not in headers:
            return f"an empty body, not {answer}"
        document: object = {}
    else:
        try:
            document = json.loads(body)
        except (ValueError, RecursionError):  # not UTF-8 or not JSON; nested past the stack
            return f"a body that is not JSON, not {answer}"
    if not isinstance(document, dict):
        return f"JSON that is not {answer} ({_json_type(document)}, not an object)"
    if status >= 300:
        # botocore reads the error's code from one of these (a string) or from the header.
        coded = any(isinstance(document.get(key), str) for key in ("__type", "code", "Code"))
        known = coded or "x-amzn-errortype" in headers
        return None if known else f"JSON that is not {answer} (no __type)"
    problem = _output_problem(operation, body_shape, document)
    return f"JSON that is not {answer} ({problem})" if problem else None


def _untext(body: bytes, answer: str) -> str | None:
    try:
        body.decode()
    except UnicodeDecodeError:
        return f"a body that is not text, not {answer}"
    return None


def _body_shape(operation: OperationModel) -> Shape | None:
    """The shape of a JSON answer's body (the output's, or its payload's structure); None
    without one, or for a raw payload (Lambda's Invoke)."""
    shape: Shape | None = operation.output_shape
    payload = None if shape is None else shape.serialization.get("payload")
    if shape is None or payload is None:
        return shape
    inner: Shape = shape.members[payload]  # type: ignore[attr-defined]
    return inner if inner.type_name == "structure" else None


def _output_problem(
    operation: OperationModel, shape: Shape | None, document: dict[str, Any]
) -> str | None:
    members: dict[str, Shape] = {}
    if shape is not None:
        members = {
            name: member
            for name, member in shape.members.items()  # type: ignore[attr-defined]
            if member.serialization.get("location") is None
        }
    keys = {member.serialization.get("name", name): name for name, member in members.items()}
    if document and not set(document) & set(keys):
        key = next(iter(document))
        return f"unknown key {key if len(key) <= 40 else key[:40] + '...'!r}"
    for key, name in keys.items():
        if key in document:
            problem = _type_problem(document[key], members[name], depth=0)
            if problem:
                return f"{key}: {problem}"
    service = str(operation.service_model.metadata.get("serviceId", ""))
    for key in ALWAYS_SENT.get((service, operation.name), ()):
        if key not in document:
            return f"no {key}"
    return None


_MAX_DEPTH = 32  # a recursive shape (DynamoDB's AttributeValue) checked this deep, no deeper


def _type_problem(value: object, shape: Shape, depth: int) -> str | None:
    """Why `value` is not of `shape`'s JSON type (None: it is, as far as botocore cares)."""
    wanted = _JSON_TYPES.get(shape.type_name)
    if value is None or depth > _MAX_DEPTH or wanted is None:
        return None  # botocore skips a null member
    if (
        not isinstance(value, wanted)
        or (isinstance(value, bool) and bool not in wanted)
        or (isinstance(value, str) and not _decodes(value, shape.type_name))
    ):
        return f"{_json_type(value)}, not {_type_text(shape)}"
    for item, inner in _children(value, shape):
        if type(item) is str and inner.type_name == "string":
            continue  # most of an answer, and what the call below would say: no problem
        if found := _type_problem(item, inner, depth + 1):
            return found
    return None


def _decodes(text: str, type_name: str) -> bool:
    """Whether botocore can read a string member of this type (a blob, a timestamp)."""
    try:
        if type_name == "blob":
            base64.b64decode(text)
        elif type_name == "timestamp":
            parse_timestamp(text)
    except (ValueError, TypeError, OverflowError):  # binascii.Error is a ValueError
        return False
    return True


def _children(value: object, shape: Shape) -> list[tuple[object, Shape]]:
    if isinstance(value, dict) and shape.type_name == "structure":
        members = shape.members.items()  # type: ignore[attr-defined]
        named = ((member.serialization.get("name", name), member) for name, member in members)
        return [(value[key], member) for key, member in named if key in value]
    if isinstance(value, dict):
        return [(item, shape.value) for item in value.values()]  # type: ignore[attr-defined]
    if isinstance(value, list):
        return [(item, shape.member) for item in value]  # type: ignore[attr-defined]
    return []


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _type_text(shape: Shape) -> str:
    kind = shape.type_name
    return {"structure": "an object", "map": "an object", "list": "a list"}.get(
        kind, f"a {'number' if kind in {'integer', 'long', 'float', 'double'} else kind}"
    )


def _foreign_xml(operation: OperationModel, status: int, body: bytes) -> str | None:
    answer = _answer(operation, status)
    protocol = protocol_of(operation)
    if not body.strip():
        # S3 (rest-xml) answers most writes with headers alone; query and errors never.
        return None if protocol == "rest-xml" and status < 300 else f"an empty body, not {answer}"
    try:
        root = ElementTree.fromstring(body)  # noqa: S314 - expat expands no external entity
    except (ElementTree.ParseError, ValueError, RecursionError):
        return f"a body that is not XML, not {answer}"
    tag = _local(root.tag)
    if status >= 300:
        problem = None if tag in _XML_ERROR_ROOTS else f"<{tag[:40]}>"
    elif protocol != "query":
        problem = None
    elif tag != f"{operation.name}Response":
        problem = f"<{tag[:40]}>, not <{operation.name}Response>"
    elif operation.output_shape is not None and f"{operation.name}Result" not in map(
        _local, (child.tag for child in root)
    ):
        problem = f"no <{operation.name}Result>"
    else:
        problem = None
    return f"XML that is not {answer} ({problem})" if problem else None


def _local(tag: object) -> str:
    return str(tag).rsplit("}", 1)[-1]


def error_text(error: BaseException) -> str:
    """Its class and first line: botocore's parse error goes on with the whole page."""
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def endpoint_of(url: str) -> str:
    """Scheme, host and port of a request's URL, as --endpoint-url names the endpoint."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else (url or "the endpoint")


def refuse_foreign_answers(session: boto3.Session) -> None:
    """Clients made from `session` from now on raise `ForeignAnswerError` for an answer not the
    service's, before botocore parses it, and `NoAnswerError` for a read timeout. `before-send`
    keeps the request's URL, which `before-parse` (next, in the same thread) does not carry."""
    sent = threading.local()

    def remember(request: Any, **_: Any) -> None:
        sent.url = str(request.url)

    def refuse(operation_model: OperationModel, response_dict: dict[str, Any], **_: Any) -> None:
        what = foreign_answer(operation_model, response_dict)
        if what is None:
            return
        name = str(operation_model.name)
        endpoint = endpoint_of(getattr(sent, "url", ""))
        status = int(response_dict.get("status_code") or 0)
        if is_html(response_dict):
            raise HtmlAnswerError(operation=name, endpoint=endpoint, status=status)
        raise ForeignAnswerError(operation=name, endpoint=endpoint, status=status, what=what)

    def unanswered(
        exception: Exception, context: Mapping[str, Any], event_name: str, **_: Any
    ) -> None:
        if isinstance(exception, ReadTimeoutError) and not isinstance(exception, NoAnswerError):
            config = context.get("client_config")
            seconds = getattr(config, "read_timeout", None) or 60  # botocore's default
            url = str(exception.kwargs.get("endpoint_url", ""))
            raise NoAnswerError(
                endpoint_url=url,
                operation=event_name.rsplit(".", 1)[-1],
                endpoint=endpoint_of(url),
                seconds=f"{seconds:g}",
            ) from exception

    session.events.register("before-send", remember, unique_id="dlq-replay-answer-url")
    session.events.register("before-parse", refuse, unique_id="dlq-replay-answer-refuse")
    session.events.register("after-call-error", unanswered, unique_id="dlq-replay-no-answer")
