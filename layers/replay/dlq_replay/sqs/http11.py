"""One HTTP/1.1 exchange at a time over a kept-alive socket: what an SQS call needs, no more.

`http.client` parses every reply's headers with the `email` package and wraps the socket in a
new file object per reply. Without them an SQS call costs 19-41% less CPU than over
botocore's urllib3 layer, against 12-22% over `http.client` (bench/bench_sqs_calls.py).
SQS's calls are small requests answered by a status line, a few headers and a body framed by
Content-Length or chunks, so this module writes the request in one piece and reads the reply
with one buffered reader per connection. It frames replies as RFC 9112 section 6.3 says
(no body for HEAD, 1xx, 204 and 304; chunked; Content-Length; else to the connection's end)
and refuses what it cannot read with `ProtocolError`, never a guess.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

# As http.client's limits: a line, and the number of headers, in one reply.
MAX_LINE = 65536
MAX_HEADERS = 100
_NO_BODY_STATUSES = frozenset((204, 304))
_BLANK_LINES = frozenset((b"\r\n", b"\n"))  # the end of a header section
# A header name (RFC 9110's token); a value may not hold CR or LF.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Methods that carry a body, so an empty one is still announced (Content-Length: 0).
_BODY_METHODS = frozenset(("POST", "PUT", "PATCH"))


class ProtocolError(Exception):
    """The server's reply is not HTTP/1.1 as this module reads it, or it ended early."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]  # by lowercased name; a repeated header's values joined with ", "
    body: bytes
    keep_alive: bool  # the connection can carry another exchange


class Connection:
    """A connected socket (TLS already wrapped) and the reader its replies are read through."""

    def __init__(self, sock: socket.socket, host: str) -> None:
        self.sock = sock
        self._host = host  # the Host header: the URL's host, and its port unless the default
        self._reader = sock.makefile("rb")

    def exchange(
        self, method: str, target: str, headers: Mapping[str, str | bytes], body: bytes | None
    ) -> Reply:
        """Send one request and read its whole reply. Socket errors (OSError, TimeoutError)
        pass through; after any exception the connection is in an unknown state."""
        self.sock.sendall(request_head(method, target, self._host, headers, body) + (body or b""))
        return self._read_reply(method)

    def close(self) -> None:
        self._reader.close()
        self.sock.close()

    def _read_reply(self, method: str) -> Reply:
        while True:
            version, status = self._status_line()
            headers = self._headers()
            if status >= 200:
                break
            if status == 101:  # nothing here asks to switch protocols
                raise ProtocolError("101 Switching Protocols")
            # Any other 1xx is an interim reply; the final one follows.
        tokens = {token.strip() for token in headers.get("connection", "").lower().split(",")}
        keep_alive = version == "HTTP/1.1" and "close" not in tokens
        if method == "HEAD" or status in _NO_BODY_STATUSES:
            return Reply(status, headers, b"", keep_alive)
        coding = headers.get("transfer-encoding")
        if coding is not None:
            if coding.lower().rsplit(",", 1)[-1].strip() == "chunked":
                return Reply(status, headers, self._chunked(), keep_alive)
            return Reply(status, headers, self._reader.read(), False)  # to the connection's end
        length = headers.get("content-length")
        if length is None:
            return Reply(status, headers, self._reader.read(), False)
        return Reply(status, headers, self._exactly(_content_length(length)), keep_alive)

    def _line(self) -> bytes:
        line = self._reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise ProtocolError("a line longer than 65536 bytes")
        if not line:
            raise ProtocolError("the connection closed before the reply ended")
        return line

    def _status_line(self) -> tuple[str, int]:
        version, _, rest = self._line().decode("latin-1").partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit() or not rest[3:4].isspace():
            raise ProtocolError(f"not an HTTP/1.x status line: {version} {rest.strip()[:40]!r}")
        return version, int(code)

    def _headers(self) -> dict[str, str]:
        """The header section by lowercased name (botocore reads headers case-insensitively
        and reports them lowercased), a repeated header's values joined with ", "."""
        headers: dict[str, str] = {}
        name = ""
        for _ in range(MAX_HEADERS + 1):
            line = self._line()
            if line in _BLANK_LINES:
                return headers
            text = line.decode("latin-1")
            if text[0] in " \t":  # an obsolete folded line continues the one before
                if not name:
                    raise ProtocolError("a folded line before any header")
                headers[name] = f"{headers[name]} {text.strip()}"
                continue
            field, colon, value = text.partition(":")
            name = field.lower()
            if not colon or not name or name != name.strip():
                raise ProtocolError(f"not a header line: {text.strip()[:40]!r}")
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        raise ProtocolError(f"more than {MAX_HEADERS} headers")

    def _exactly(self, size: int) -> bytes:
        data = self._reader.read(size)
        if len(data) < size:
            raise ProtocolError(f"the body ended after {len(data)} of {size} bytes")
        return data

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_field = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_field, 16)
            except ValueError:
                raise ProtocolError(f"not a chunk size: {size_field[:20]!r}") from None
            if size < 0:
                raise ProtocolError("a negative chunk size")
            if size == 0:
                break
            parts.append(self._exactly(size))
            if self._line() not in _BLANK_LINES:
                raise ProtocolError("a chunk longer than its size")
        while self._line() not in _BLANK_LINES:  # trailer fields, ignored
            pass
        return b"".join(parts)


def request_head(
    method: str, target: str, host: str, headers: Mapping[str, str | bytes], body: bytes | None
) -> bytes:
    """The request line and headers, with Host, Accept-Encoding: identity (replies are read as
    sent, never decompressed) and Content-Length added unless given, as http.client adds them.
    A name or value that would break the header section raises ValueError."""
    lines = [f"{method} {target} HTTP/1.1"]
    given: set[str] = set()
    for name, raw in headers.items():
        value = raw if isinstance(raw, str) else raw.decode("latin-1")
        if _TOKEN.fullmatch(name) is None or "\r" in value or "\n" in value:
            raise ValueError(f"a header that would break the request: {name!r}")
        lines.append(f"{name}: {value}")
        given.add(name.lower())
    if "host" not in given:
        lines.insert(1, f"Host: {host}")
    if "accept-encoding" not in given:
        lines.append("Accept-Encoding: identity")
    framed = "content-length" in given or "transfer-encoding" in given
    if not framed and (body or method in _BODY_METHODS):
        lines.append(f"Content-Length: {len(body or b'')}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("latin-1")


def host_header(hostname: str, port: int | None, scheme: str) -> str:
    """The Host header for a URL's parts, as botocore signs it: the port only when it is not
    the scheme's default, an IPv6 address in brackets."""
    host = f"[{hostname}]" if ":" in hostname else hostname
    return host if port is None or port == default_port(scheme) else f"{host}:{port}"


def default_port(scheme: str) -> int:
    """The port a URL without one connects to, and that its Host header leaves out."""
    return 443 if scheme == "https" else 80


def _content_length(value: str) -> int:
    """Content-Length, also when repeated with one value (joined as "n, n")."""
    values = {part.strip() for part in value.split(",")}
    if len(values) != 1:
        raise ProtocolError(f"conflicting Content-Length: {value[:40]!r}")
    (text,) = values
    if not text.isdigit():
        raise ProtocolError(f"not a Content-Length: {text[:40]!r}")
    return int(text)
