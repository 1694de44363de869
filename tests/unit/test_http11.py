"""The SQS client's HTTP/1.1 framing (sqs/http11.py) over a real socket pair: the request it
writes, each way a reply's body can be framed, when a connection may carry another exchange,
and every malformed reply refused with ProtocolError instead of read as something else."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from dlq_replay.sqs.http11 import (
    MAX_HEADERS,
    MAX_LINE,
    Connection,
    ProtocolError,
    host_header,
    request_head,
)

BODY = b'{"QueueUrls": []}'


@pytest.fixture
def pair() -> Iterator[tuple[Connection, socket.socket]]:
    """Our connection, and the server's end of it."""
    ours, server = socket.socketpair()
    ours.settimeout(5)
    server.settimeout(5)
    connection = Connection(ours, "sqs.us-east-1.amazonaws.com")
    yield connection, server
    connection.close()
    server.close()


def answer(server: socket.socket, *replies: bytes, then_close: bool = False) -> None:
    server.sendall(b"".join(replies))
    if then_close:
        server.shutdown(socket.SHUT_WR)


def received(server: socket.socket) -> bytes:
    server.settimeout(0.2)
    data = b""
    try:
        while chunk := server.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    return data


def ok(body: bytes = BODY, *headers: str) -> bytes:
    head = "".join(f"{header}\r\n" for header in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


# -- the request ------------------------------------------------------------------------------


def test_the_request_carries_host_identity_encoding_and_its_length() -> None:
    head = request_head(
        "POST", "/", "sqs.example:4566", {"X-Amz-Target": b"AmazonSQS.ListQueues"}, BODY
    )
    assert head == (
        b"POST / HTTP/1.1\r\nHost: sqs.example:4566\r\nX-Amz-Target: AmazonSQS.ListQueues\r\n"
        b"Accept-Encoding: identity\r\nContent-Length: 17\r\n\r\n"
    )


def test_headers_the_caller_gives_are_not_added_twice() -> None:
    given = {"host": "other", "accept-encoding": "gzip", "Content-Length": "17"}
    head = request_head("POST", "/", "sqs.example", given, BODY).decode()
    assert head.lower().count("host:") == 1
    assert "host: other" in head
    assert head.lower().count("accept-encoding:") == 1
    assert head.lower().count("content-length:") == 1


def test_an_empty_post_says_so_and_a_get_without_a_body_says_nothing() -> None:
    assert b"Content-Length: 0\r\n" in request_head("POST", "/", "h", {}, None)
    assert b"Content-Length" not in request_head("GET", "/", "h", {}, None)


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Injected": "a\r\nX-Evil: 1"},
        {"X-Injected": b"a\nb"},
        {"Bad Name": "v"},
        {"Bad:Name": "v"},
        {"": "v"},
    ],
)
def test_a_header_that_would_break_the_request_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="break the request"):
        request_head("POST", "/", "h", headers, BODY)


@pytest.mark.parametrize(
    ("hostname", "port", "scheme", "expected"),
    [
        ("sqs.us-east-1.amazonaws.com", None, "https", "sqs.us-east-1.amazonaws.com"),
        ("sqs.us-east-1.amazonaws.com", 443, "https", "sqs.us-east-1.amazonaws.com"),
        ("localhost", 80, "http", "localhost"),
        ("localhost", 443, "http", "localhost:443"),
        ("127.0.0.1", 4566, "http", "127.0.0.1:4566"),
        ("::1", 4566, "http", "[::1]:4566"),
    ],
)
def test_the_host_header_is_the_one_botocore_signs(
    hostname: str, port: int | None, scheme: str, expected: str
) -> None:
    assert host_header(hostname, port, scheme) == expected


def test_the_request_goes_out_whole_with_its_body(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, server = pair
    answer(server, ok())
    connection.exchange("POST", "/", {"Content-Type": "application/x-amz-json-1.0"}, BODY)
    sent = received(server)
    assert sent.startswith(b"POST / HTTP/1.1\r\nHost: sqs.us-east-1.amazonaws.com\r\n")
    assert sent.endswith(b"\r\n\r\n" + BODY)


# -- framing ----------------------------------------------------------------------------------


def test_two_exchanges_share_a_kept_alive_connection(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, server = pair
    answer(server, ok(b"first"), ok(b"second"))
    first = connection.exchange("POST", "/", {}, BODY)
    second = connection.exchange("POST", "/", {}, BODY)
    assert (first.status, first.body, first.keep_alive) == (200, b"first", True)
    assert (second.body, second.keep_alive) == (b"second", True)


@pytest.mark.parametrize(
    ("reply", "keep_alive"),
    [
        (ok(BODY, "Connection: close"), False),
        (ok(BODY, "Connection: Keep-Alive, Close"), False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 17\r\n\r\n" + BODY, False),
        (ok(BODY, "Connection: keep-alive"), True),
    ],
)
def test_a_connection_is_kept_only_when_http11_and_not_closing(
    pair: tuple[Connection, socket.socket], reply: bytes, keep_alive: bool
) -> None:
    connection, server = pair
    answer(server, reply)
    assert connection.exchange("POST", "/", {}, BODY).keep_alive is keep_alive


def test_a_chunked_body_is_joined_and_its_extensions_and_trailers_skipped(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, server = pair
    answer(
        server,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n",
        ok(b"next"),
    )
    reply = connection.exchange("POST", "/", {}, BODY)
    assert (reply.body, reply.keep_alive) == (b"hello world", True)
    assert connection.exchange("POST", "/", {}, BODY).body == b"next"


@pytest.mark.parametrize(
    ("reply", "body"),
    [
        (b"HTTP/1.1 200 OK\r\n\r\n" + BODY, BODY),  # no length at all
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw", b"raw"),  # not chunked last
    ],
)
def test_a_body_not_framed_runs_to_the_connections_end(
    pair: tuple[Connection, socket.socket], reply: bytes, body: bytes
) -> None:
    connection, server = pair
    answer(server, reply, then_close=True)
    read = connection.exchange("POST", "/", {}, BODY)
    assert (read.body, read.keep_alive) == (body, False)


@pytest.mark.parametrize(("method", "status"), [("HEAD", 200), ("POST", 204), ("POST", 304)])
def test_replies_that_carry_no_body_read_none(
    pair: tuple[Connection, socket.socket], method: str, status: int
) -> None:
    connection, server = pair
    answer(server, f"HTTP/1.1 {status} X\r\nContent-Length: 17\r\n\r\n".encode(), ok(b"next"))
    assert connection.exchange(method, "/", {}, None).body == b""
    assert connection.exchange("POST", "/", {}, BODY).body == b"next"


def test_interim_replies_are_passed_over(pair: tuple[Connection, socket.socket]) -> None:
    connection, server = pair
    answer(server, b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n", ok())
    reply = connection.exchange("POST", "/", {}, BODY)
    assert (reply.status, reply.body) == (200, BODY)


def test_headers_are_read_by_lowercased_name_and_repeats_joined(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, server = pair
    answer(
        server,
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\nX-Amzn-RequestId: r1\r\n"
        b"x-amzn-query-error: AWS.SimpleQueueService.NonExistentQueue;Sender\r\n"
        b"Set: a\r\nset: b\r\nSET: c\r\nX-Folded: one\r\n  two\r\n\r\n{}",
    )
    reply = connection.exchange("POST", "/", {}, BODY)
    assert (reply.status, reply.body) == (400, b"{}")
    assert reply.headers == {
        "content-length": "2",
        "x-amzn-requestid": "r1",
        "x-amzn-query-error": "AWS.SimpleQueueService.NonExistentQueue;Sender",
        "set": "a, b, c",
        "x-folded": "one two",
    }


def test_a_repeated_content_length_with_one_value_is_read(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, server = pair
    answer(server, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}")
    assert connection.exchange("POST", "/", {}, BODY).body == b"{}"


# -- what is refused --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "close"),
    [
        (b"", True),  # closed before answering
        (b"HTTP/1.1 200 OK\r\nContent-Length: 17\r\n", True),  # closed in the headers
        (b"SSH-2.0-OpenSSH\r\n\r\n", False),
        (b"HTTP/2 200\r\n\r\n", False),
        (b"HTTP/1.1 2000 OK\r\n\r\n", False),
        (b"HTTP/1.1 OK\r\n\r\n", False),
        (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\n folded first\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nName : value\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}", False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{}", True),  # the body cut short
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", False),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", False),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}}\r\n0\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", True),
    ],
)
def test_a_reply_that_is_not_http11_as_read_here_is_refused(
    pair: tuple[Connection, socket.socket], reply: bytes, close: bool
) -> None:
    connection, server = pair
    answer(server, reply, then_close=close)
    with pytest.raises(ProtocolError):
        connection.exchange("POST", "/", {}, BODY)


def test_too_many_headers_are_refused(pair: tuple[Connection, socket.socket]) -> None:
    connection, server = pair
    headers = b"".join(b"X-%d: v\r\n" % n for n in range(MAX_HEADERS + 1))
    answer(server, b"HTTP/1.1 200 OK\r\n" + headers + b"\r\n")
    with pytest.raises(ProtocolError, match="more than"):
        connection.exchange("POST", "/", {}, BODY)


def test_a_line_too_long_is_refused(pair: tuple[Connection, socket.socket]) -> None:
    connection, server = pair
    head = b"HTTP/1.1 200 OK\r\nX-Long: " + b"v" * MAX_LINE + b"\r\n\r\n"
    writer = threading.Thread(target=answer, args=(server, head))  # more than a socket buffer
    writer.start()
    with pytest.raises(ProtocolError, match="longer"):
        connection.exchange("POST", "/", {}, BODY)
    connection.close()
    writer.join()
