"""The demo's embedded SQS emulator (moto on 127.0.0.1) and its queues, wired as the template's
create-everything mode wires them; `emulator()` is moto's whole server."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3

from dlq_replay.core.queues import queue_name
from dlq_replay.local.eventsource import read_queue_arn
from dlq_replay.sqs.client import SQS_CLIENT_CONFIG

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType


REGION = "us-east-1"
MAIN_MAX_RECEIVE_COUNT = 1
# --consumer-backoff retries in the main queue first, as the template's 5 lets it; 3 is quicker.
MAIN_MAX_RECEIVE_COUNT_WITH_BACKOFF = 3
SAFETY_NET_MAX_RECEIVE_COUNT = 20
MAIN_VISIBILITY_TIMEOUT = 5
DLQ_VISIBILITY_TIMEOUT = 10
# A waiting long poll looks again this often: delays and visibility timeouts end unannounced.
_RECHECK_SECONDS = 0.2
# How often the server looks for its shutdown (werkzeug's 0.5 s would be waited at the end).
_SHUTDOWN_POLL_SECONDS = 0.05
_RECEIVE = "AmazonSQS.ReceiveMessage"
_EVENTS = "AWSEvents."
# By signing name; any other (the console's CloudWatch, STS) gets an AWS-shaped error, not a 500.
_SERVED = frozenset({"sqs", "events"})

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@contextmanager
def emulator() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    # Concurrent receives can answer HTTP 500 (see `AtomicSqs`), each printing a traceback.
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


class AtomicSqs:
    """WSGI middleware: one request at a time reaches moto's SQS app, whose backend takes no lock
    (two receives could both move a message to the DLQ, a delete racing a send drop it). A long
    poll is asked again without waiting whenever a queue changed, so it does not hold the lock."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self.lock = threading.Lock()
        self._changed: dict[str, threading.Condition] = {}  # by queue URL, all on `lock`
        self._ending = False

    def end_waits(self) -> None:
        """Answer every long poll, waiting or later, at once: the demo's threads end sooner."""
        with self.lock:
            self._ending = True
            for waiting in self._changed.values():
                waiting.notify_all()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        from werkzeug.wsgi import get_input_stream

        body = get_input_stream(environ).read()
        queue, wait = "", 0.0
        if str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("AmazonSQS."):
            request = json.loads(body or b"{}")
            queue = str(request.get("QueueUrl", ""))
            if environ["HTTP_X_AMZ_TARGET"] == _RECEIVE:
                wait = float(request.get("WaitTimeSeconds") or 0)
                request["WaitTimeSeconds"] = 0
                body = json.dumps(request).encode()
        deadline = time.monotonic() + wait
        with self.lock:
            changed = self._changed.setdefault(queue, threading.Condition(self.lock))
            while True:
                status, headers, payload = self._call(environ, body)
                remaining = deadline - time.monotonic()
                if self._ending or not wait or remaining <= 0 or not _no_messages(status, payload):
                    break
                changed.wait(min(remaining, _RECHECK_SECONDS))
            if not wait:
                for waiting in self._changed.values() if not queue else [changed]:
                    waiting.notify_all()
        start_response(status, headers)
        return [payload]

    def _call(self, environ: dict[str, Any], body: bytes) -> tuple[str, list[Any], bytes]:
        from werkzeug.test import run_wsgi_app

        request = {**environ, "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
        request.pop("wsgi.input_terminated", None)
        chunks, status, headers = run_wsgi_app(self._app, request, buffered=True)
        payload = b"".join(chunks)
        headers["Content-Length"] = str(len(payload))
        return status, headers.to_wsgi_list(), payload


def _no_messages(status: str, payload: bytes) -> bool:
    if not status.startswith("200"):
        return False
    try:
        return not json.loads(payload or b"{}").get("Messages")
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class SqsEmulator:
    endpoint_url: str
    app: AtomicSqs

    def bodies(self, queue_url: str) -> list[str]:
        """The body of every message in a queue, in flight and delayed too (no SQS call shows
        those), from the emulator's own store between two requests."""
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.sqs.models import sqs_backends

        with self.app.lock:
            backend = sqs_backends[DEFAULT_ACCOUNT_ID][REGION]
            queue = backend.get_queue(queue_name(queue_url))
            return [str(message.body) for message in queue._messages]


@contextmanager
def sqs_emulator(*, linear: bool = True) -> Iterator[SqsEmulator]:
    """moto's SQS on a free port; `linear=False`: moto's own counting (the benchmark's baseline)."""
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    app = AtomicSqs(_moto_sqs_app())
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": _SHUTDOWN_POLL_SECONDS},
        name="sqs-emulator",
        daemon=True,
    )
    with _moto_made_linear() if linear else nullcontext():
        thread.start()
        try:
            yield SqsEmulator(f"http://127.0.0.1:{server.port}", app)
        finally:
            server.shutdown()
            server.server_close()
            thread.join()


def _moto_sqs_app() -> WsgiApp:
    """moto's SQS and EventBridge on werkzeug alone, not the Flask app of `moto[server]`."""
    from botocore.exceptions import ClientError
    from moto.core.request import Request
    from moto.events.responses import EventsHandler
    from moto.sqs.responses import SQSResponse
    from werkzeug.exceptions import HTTPException
    from werkzeug.wrappers import Response

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        service = _signing_service(environ)
        if service and service not in _SERVED:
            return _unknown_service(service, environ, start_response)
        request = Request(environ)
        events = str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(_EVENTS)
        try:
            status, headers, body = (EventsHandler if events else SQSResponse).dispatch(request)
        except ClientError as error:  # as moto's server answers one
            status, headers, body = 400, {}, error.response["Error"]["Message"]
        except HTTPException as error:  # moto's JSON errors (EventBridge's)
            return error(environ, start_response)
        answer = Response(response=body, status=status, headers=headers)
        return answer(environ, start_response)

    return app


def _signing_service(environ: dict[str, Any]) -> str:
    """The service in SigV4's credential scope (KEY/DATE/REGION/SERVICE/...), "" if unsigned."""
    authorization = str(environ.get("HTTP_AUTHORIZATION", ""))
    scope = authorization.partition("Credential=")[2].partition(",")[0].split("/")
    return scope[3] if len(scope) > 3 else ""


def _unknown_service(
    service: str, environ: dict[str, Any], start_response: StartResponse
) -> Iterable[bytes]:
    """HTTP 400 botocore parses (JSON or the query protocol's XML): a ClientError, no retry."""
    from werkzeug.wrappers import Response

    message = f"the demo's emulator serves SQS and EventBridge only, not {service}"
    if "json" in str(environ.get("CONTENT_TYPE", "")):
        body = json.dumps({"__type": "UnknownService", "message": message})
        kind = "application/x-amz-json-1.0"
    else:
        body = (
            "<ErrorResponse><Error><Type>Sender</Type><Code>UnknownService</Code>"
            f"<Message>{message}</Message></Error></ErrorResponse>"
        )
        kind = "text/xml"
    answer = Response(body, status=400, headers={"x-amzn-ErrorType": "UnknownService"})
    answer.content_type = kind
    return answer(environ, start_response)


@contextmanager
def _moto_made_linear() -> Iterator[None]:
    """moto counts a queue's messages (a clock reading each) per message sent or received,
    quadratic in its depth: the same rules with one clock reading per count, until exit."""
    from moto.core.utils import unix_time, unix_time_millis
    from moto.sqs.models import Message, Queue, SQSBackend

    def visible_now(queue: Queue) -> list[Message]:
        now = unix_time_millis()
        return [m for m in queue._messages if now > m.visible_at and now >= m.delayed_until]

    def count(queue: Queue, include: Callable[[Message, float], bool]) -> int:
        now = unix_time_millis()
        return sum(1 for message in queue._messages if include(message, now))

    def retained(backend: SQSBackend, queue_name: str, message: Message) -> bool:
        # moto sets a queue's attributes with setattr, under their snake_case names.
        retention = int(vars(backend.get_queue(queue_name))["message_retention_period"])
        return bool(retention + (message.sent_timestamp or 0) / 1000 > unix_time())

    replacements: dict[tuple[type, str], Any] = {
        (Queue, "messages"): property(visible_now),
        (Queue, "approximate_number_of_messages"): property(lambda q: len(visible_now(q))),
        (Queue, "approximate_number_of_messages_delayed"): property(
            lambda q: count(q, lambda m, now: now < m.delayed_until)
        ),
        (Queue, "approximate_number_of_messages_not_visible"): property(
            lambda q: count(q, lambda m, now: not now > m.visible_at)
        ),
        (SQSBackend, "is_message_valid_based_on_retention_period"): retained,
    }
    originals = {key: vars(key[0])[key[1]] for key in replacements}
    for (owner, name), replacement in replacements.items():
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)


def emulator_session() -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="demo",
        aws_secret_access_key="demo",  # noqa: S106 - the emulator accepts any key
        region_name=REGION,
    )


def emulator_client(endpoint_url: str) -> SQSClient:
    return emulator_session().client("sqs", endpoint_url=endpoint_url, config=SQS_CLIENT_CONFIG)


def create_queue(
    sqs: SQSClient, name: str, visibility_timeout: int, dead_letter: str = "", receives: int = 1
) -> str:
    """A queue, redriven to `dead_letter` (when given) after `receives`; its URL."""
    attributes: dict[QueueAttributeNameType, str] = {"VisibilityTimeout": str(visibility_timeout)}
    if dead_letter:
        arn = read_queue_arn(sqs, dead_letter)
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": arn, "maxReceiveCount": receives}
        )
    return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


@dataclass(frozen=True, slots=True)
class Queues:
    main: str
    dlq: str
    operator: str


def create_queues(
    sqs: SQSClient, prefix: str = "demo", main_max_receive_count: int = MAIN_MAX_RECEIVE_COUNT
) -> Queues:
    """Main → DLQ → operator, wired like the template's create-everything mode."""
    operator = sqs.create_queue(QueueName=f"{prefix}-operator")["QueueUrl"]
    dlq = create_queue(
        sqs, f"{prefix}-dlq", DLQ_VISIBILITY_TIMEOUT, operator, SAFETY_NET_MAX_RECEIVE_COUNT
    )
    main = create_queue(sqs, f"{prefix}-main", MAIN_VISIBILITY_TIMEOUT, dlq, main_max_receive_count)
    return Queues(main=main, dlq=dlq, operator=operator)
