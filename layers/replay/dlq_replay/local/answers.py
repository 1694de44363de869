"""An endpoint that answers with an HTML page in place of an AWS response (a proxy's error page,
a web server on the wrong port): one line naming the endpoint and the HTTP status, never the
page.

Left to itself botocore raises `ResponseParserError` (not a `BotoCoreError`, so no command's
error handling sees it) with the whole page in its message, or a `ClientError` whose message
is the page, or (JSON protocols, status 200) an empty answer that fails later as a KeyError.
`refuse_html_answers` makes every client of a session raise `HtmlAnswerError` instead, through
botocore's public event hooks, before the answer is parsed."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError

if TYPE_CHECKING:
    import boto3

_HTML_STARTS = (b"<!doctype html", b"<html")


class HtmlAnswerError(BotoCoreError):
    """An HTML page where an AWS response was expected; `status` is the HTTP status."""

    fmt = (
        "{operation} failed: {endpoint} answered HTTP {status} with an HTML page, not an AWS "
        "response"
    )

    def __init__(self, *, operation: str, endpoint: str, status: int) -> None:
        super().__init__(operation=operation, endpoint=endpoint, status=status)
        self.status = status


def is_html(response: dict[str, Any]) -> bool:
    """Whether an answer (botocore's response dict) is an HTML page, by how its body starts.
    Not by its Content-Type: emulators (moto's server) send AWS's JSON and XML as text/html."""
    body = response.get("body")
    return isinstance(body, bytes) and body[:64].lstrip().lower().startswith(_HTML_STARTS)


def error_text(error: BaseException) -> str:
    """An error as a log line names it: its class and its first line. botocore's parse error
    goes on with the whole answer it could not parse (a page), which a log must not carry."""
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def endpoint_of(url: str) -> str:
    """The endpoint part of a request's URL (scheme, host and port), as --endpoint-url names
    it; the path (a queue's) is not the endpoint's."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else (url or "the endpoint")


def refuse_html_answers(session: boto3.Session) -> None:
    """Make every client made from `session` from now on raise `HtmlAnswerError` for an HTML
    answer. botocore's `before-parse` event does not carry the request's URL: `before-send`,
    which runs just before it in the same thread for the same request, keeps it."""
    sent = threading.local()

    def remember(request: Any, **_: Any) -> None:
        sent.url = str(request.url)

    def refuse(operation_model: Any, response_dict: dict[str, Any], **_: Any) -> None:
        if is_html(response_dict):
            raise HtmlAnswerError(
                operation=str(operation_model.name),
                endpoint=endpoint_of(getattr(sent, "url", "")),
                status=int(response_dict.get("status_code", 0)),
            )

    session.events.register("before-send", remember, unique_id="dlq-replay-html-url")
    session.events.register("before-parse", refuse, unique_id="dlq-replay-html-refuse")
