"""SQS's HTTP exchanges over the standard library's sockets, in place of urllib3.

A move makes three SQS calls per 10 messages, and botocore's HTTP layer (urllib3 over
`http.client`) is a third of a call's CPU (bench/bench_sqs_calls.py measures a call alone,
with either layer). SQS's calls are small JSON requests and replies, so this session sends
them over kept-alive sockets (sqs/http11.py frames them) and keeps what botocore's session
gives them: its TLS verification (the CA bundle it resolved, `verify=False`), its timeouts,
socket options and pool size, and its exception classes, which its retries read and so does the
replay's rule that a write cut off mid-request is unconfirmed (sqs/sending.py): a failure to
connect is `EndpointConnectionError`, `ConnectTimeoutError` or `SSLError` (nothing was sent);
one after the request may have gone is `ReadTimeoutError` or `ConnectionClosedError` (an
HTTPClientError).

A client whose calls botocore would send through a proxy or with a client certificate keeps
botocore's session (`use_stdlib_http` decides once, at the client's creation), and this one
hands botocore's every request it does not cover: a streamed reply or body, `Expect:
100-continue`.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import urlsplit
from urllib.request import getproxies

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
    SSLError,
)
from botocore.httpsession import URLLib3Session, create_urllib3_context, get_cert_path
from urllib3.util import wait_for_read
from urllib3.util.connection import create_connection

from dlq_replay.sqs.http11 import Connection, ProtocolError, default_port, host_header

SocketOption = tuple[int, int, int | bytes]
_PoolKey = tuple[str, str, int | None]


class _Reply:
    """A reply's body, read whole, as botocore's AWSResponse reads its raw stream."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


class StdlibHttpSession:
    """botocore's `http_session` interface (send, close) over kept-alive connections, a pool
    per host of at most `max_pool_connections` idle ones."""

    def __init__(
        self,
        fallback: URLLib3Session,
        *,
        verify: bool | str,
        connect_timeout: float | None,
        read_timeout: float | None,
        max_pool_connections: int,
        socket_options: list[SocketOption],
    ) -> None:
        self._fallback = fallback
        self._verify = verify
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._max_idle = max_pool_connections
        self._socket_options = socket_options
        self._idle: dict[_PoolKey, list[Connection]] = {}
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None

    @classmethod
    def replacing(cls, botocore_session: URLLib3Session) -> StdlibHttpSession | None:
        """Ours with `botocore_session`'s settings, or None where it would not do the same:
        a proxy (configured, or in the environment) or a client certificate."""
        try:  # botocore's private attributes (tests pin them): if they ever move, keep its own
            settings: dict[str, Any] = vars(botocore_session)
            if settings["_proxy_config"]._proxies or getproxies() or settings["_cert_file"]:
                return None
            timeout = settings["_timeout"]
            connect, read = (
                (timeout, timeout)
                if isinstance(timeout, (int, float))
                else (timeout.connect_timeout, timeout.read_timeout)
            )
            return cls(
                botocore_session,
                verify=settings["_verify"],
                connect_timeout=connect,
                read_timeout=read,
                max_pool_connections=settings["_max_pool_connections"],
                socket_options=list(settings["_socket_options"]),
            )
        except (AttributeError, KeyError, TypeError):
            return None

    def send(self, request: AWSPreparedRequest) -> AWSResponse:
        body = request.body
        if (
            request.stream_output
            or not isinstance(body, (bytes, str, type(None)))
            or "Expect" in request.headers  # 100-continue: botocore's connection handles it
        ):
            return self._fallback.send(request)
        if isinstance(body, str):
            body = body.encode("latin-1")  # as http.client sends a str body
        url = urlsplit(request.url)
        key = (url.scheme, url.hostname or "", url.port)
        connection = self._checkout(key) or self._connect(key, request.url)
        context = getattr(request, "context", None) or {}
        target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        try:
            timeout = context.get("read_timeout") or self._read_timeout
            if connection.sock.gettimeout() != timeout:  # a system call saved per request
                connection.sock.settimeout(timeout)
            reply = connection.exchange(request.method, target, cast(Any, request.headers), body)
        except TimeoutError as error:
            connection.close()
            raise ReadTimeoutError(endpoint_url=request.url, error=error) from error
        except (OSError, ProtocolError) as error:
            connection.close()
            raise ConnectionClosedError(
                error=error, request=request, endpoint_url=request.url
            ) from error
        except BaseException:
            connection.close()  # in an unknown state (a signal mid-exchange): never reused
            raise
        if reply.keep_alive:
            self._checkin(key, connection)
        else:
            connection.close()
        return AWSResponse(request.url, reply.status, cast(Any, reply.headers), _Reply(reply.body))

    def close(self) -> None:
        with self._lock:
            idle = [c for connections in self._idle.values() for c in connections]
            self._idle.clear()
        for connection in idle:
            connection.close()
        self._fallback.close()

    def _checkout(self, key: _PoolKey) -> Connection | None:
        """An idle connection the server has not closed meanwhile (readable while idle means
        closed, or bytes nobody asked for: either way it is dropped, as urllib3 does)."""
        while True:
            with self._lock:
                idle = self._idle.get(key)
                if not idle:
                    return None
                connection = idle.pop()
            if not wait_for_read(connection.sock, timeout=0.0):
                return connection
            connection.close()

    def _checkin(self, key: _PoolKey, connection: Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self._max_idle:
                idle.append(connection)
                return
        connection.close()

    def _connect(self, key: _PoolKey, url: str) -> Connection:
        """A new connection, its socket options set before connecting (as urllib3 sets them),
        and for HTTPS the TLS handshake done, within the connect timeout."""
        scheme, host, port = key
        tls: ssl.SSLContext | None = None
        if scheme == "https":
            try:
                tls = self._tls_context()
            except OSError as error:  # the CA bundle unreadable, as botocore's session reports it
                raise SSLError(endpoint_url=url, error=error) from error
        sock: socket.socket | None = None
        try:
            sock = create_connection(
                (host, port or default_port(scheme)),
                timeout=self._connect_timeout,
                socket_options=self._socket_options,
            )
            if tls is not None:
                sock = tls.wrap_socket(sock, server_hostname=host)
        except ssl.SSLError as error:
            _close(sock)
            raise SSLError(endpoint_url=url, error=error) from error
        except TimeoutError as error:
            _close(sock)
            raise ConnectTimeoutError(endpoint_url=url, error=error) from error
        except (OSError, ValueError) as error:  # ValueError: urllib3 refusing the host name
            _close(sock)
            raise EndpointConnectionError(endpoint_url=url, error=error) from error
        except BaseException:
            _close(sock)
            raise
        return Connection(sock, host_header(host, port, scheme))

    def _tls_context(self) -> ssl.SSLContext:
        """botocore's TLS context, verifying as its session would; made at the first HTTPS
        connection (reading a CA bundle takes milliseconds)."""
        with self._lock:
            if self._tls is None:
                context = create_urllib3_context()
                if self._verify:
                    context.check_hostname = True
                    where = str(get_cert_path(cast(Any, self._verify)))
                    if os.path.isdir(where):
                        context.load_verify_locations(capath=where)
                    else:
                        context.load_verify_locations(cafile=where)
                else:  # verify=False: botocore's session checks neither
                    context.verify_mode = ssl.CERT_NONE
                self._tls = context
            return self._tls


def use_stdlib_http(client: Any) -> None:
    """Give `client` (an SQS client) a `StdlibHttpSession` in place of botocore's own, unless
    it would not do the same (see `StdlibHttpSession.replacing`)."""
    endpoint = getattr(client, "_endpoint", None)
    current = getattr(endpoint, "http_session", None)
    if isinstance(current, URLLib3Session):
        ours = StdlibHttpSession.replacing(current)
        if ours is not None:
            endpoint.http_session = ours  # type: ignore[union-attr]


def _close(sock: socket.socket | None) -> None:
    if sock is not None:
        sock.close()
