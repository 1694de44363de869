"""The SQS client's HTTP layer over sockets (sqs/transport.py): kept-alive connections,
a connection the server closed meanwhile, TLS verification, and each failure reported with the
exception class botocore's own layer raises (its retries and the unconfirmed-write rule read it).

A scripted HTTP server on 127.0.0.1 answers `ListQueues`; the chaos proxy's tests
(tests/chaos/test_proxy.py) run the same faults through both layers.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import (
    ConnectionClosedError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
    SSLError,
)
from botocore.httpsession import URLLib3Session
from dlq_replay.core.settings import SettingsError
from dlq_replay.sqs.client import HTTP_VARIABLE, SQS_CLIENT_CONFIG, sqs_client
from dlq_replay.sqs.transport import StdlibHttpSession, use_stdlib_http

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

ONE_TRY = SQS_CLIENT_CONFIG.merge(
    Config(retries={"mode": "standard", "total_max_attempts": 1}, read_timeout=0.5)
)
QUEUES = b'{"QueueUrls": ["http://127.0.0.1/000000000000/q"]}'
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")

# What the server does with each request, by its number (from 0): answer and keep the
# connection, answer and close it (with or without saying so), or close without answering.
Script = Callable[[int], str]


class ScriptedServer:
    """An HTTP/1.1 server answering every request with `QUEUES`, as `script` says."""

    def __init__(self, script: Script, tls: ssl.SSLContext | None = None) -> None:
        self._script = script
        self._tls = tls
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self.requests = 0
        self.closed = threading.Event()
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            conn = self._tls.wrap_socket(raw, server_side=True) if self._tls else raw
        except (OSError, ssl.SSLError):
            raw.close()
            return
        reader = conn.makefile("rb")
        try:
            while (head := _read_head(reader)) is not None:
                reader.read(head)
                action = self._script(self.requests)
                self.requests += 1
                if action == "drop":
                    break
                if action == "hang":
                    self._stop.wait(5)
                    break
                if action == "garbage":
                    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
                    break
                if action == "chunked":
                    half = len(QUEUES) // 2
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
                        % (half, QUEUES[:half], len(QUEUES) - half, QUEUES[half:])
                    )
                    continue
                close = "Connection: close\r\n" if action == "close-said" else ""
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\n"
                    + f"{close}Content-Length: {len(QUEUES)}\r\n\r\n".encode()
                    + QUEUES
                )
                if action in ("close", "close-said"):
                    break
        finally:
            conn.close()
            self.closed.set()

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()


def _read_head(reader: Any) -> int | None:
    """A request's head read; its body's length, or None at the end of the connection."""
    length = None
    while line := reader.readline():
        if line in (b"\r\n", b"\n"):
            return length or 0
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return None


@contextmanager
def serving(script: Script, tls: ssl.SSLContext | None = None) -> Iterator[ScriptedServer]:
    server = ScriptedServer(script, tls)
    try:
        yield server
    finally:
        server.stop()


def client(endpoint: str, http: str | None = None) -> SQSClient:
    return sqs_client(endpoint_url=endpoint, region_name="us-east-1", config=ONE_TRY, http=http)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def session_of(sqs: SQSClient) -> object:
    return sqs._endpoint.http_session  # type: ignore[attr-defined]


def test_the_client_sends_with_the_stdlib_layer_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert isinstance(session_of(client("http://127.0.0.1:1")), StdlibHttpSession)
    assert isinstance(session_of(client("http://127.0.0.1:1", http="botocore")), URLLib3Session)
    monkeypatch.setenv(HTTP_VARIABLE, "botocore")
    assert isinstance(session_of(client("http://127.0.0.1:1")), URLLib3Session)
    monkeypatch.setenv(HTTP_VARIABLE, "curl")
    with pytest.raises(SettingsError, match="DLQ_REPLAY_SQS_HTTP='curl' is invalid: expected"):
        client("http://127.0.0.1:1")


@pytest.mark.parametrize(
    "setting",
    [
        {"env": ("HTTPS_PROXY", "http://proxy.internal:3128")},
        {"config": Config(proxies={"https": "http://proxy.internal:3128"})},
        {"config": Config(client_cert="/etc/client.pem")},
    ],
    ids=["proxy in the environment", "proxy configured", "client certificate"],
)
def test_a_proxy_or_a_client_certificate_keeps_botocores_layer(
    monkeypatch: pytest.MonkeyPatch, setting: dict[str, Any]
) -> None:
    if "env" in setting:
        monkeypatch.setenv(*setting["env"])
    config = ONE_TRY.merge(setting.get("config", Config()))
    sqs = sqs_client(endpoint_url="https://sqs.us-east-1.amazonaws.com", config=config)
    assert isinstance(session_of(sqs), URLLib3Session)


def test_calls_share_one_kept_alive_connection() -> None:
    with serving(lambda _: "keep") as server:
        sqs = client(f"http://127.0.0.1:{server.port}")
        for _ in range(3):
            assert sqs.list_queues()["QueueUrls"] == ["http://127.0.0.1/000000000000/q"]
    assert (server.connections, server.requests) == (1, 3)


@pytest.mark.parametrize("close", ["close", "close-said"])
def test_a_connection_the_server_closed_is_not_reused(close: str) -> None:
    # One try per call: a stale connection must be noticed before the request, not retried.
    with serving(lambda n: close if n == 0 else "keep") as server:
        sqs = client(f"http://127.0.0.1:{server.port}")
        sqs.list_queues()
        assert server.closed.wait(5)
        sqs.list_queues()
    assert (server.connections, server.requests) == (2, 2)


def test_no_answer_in_time_is_a_read_timeout_the_write_unconfirmed() -> None:
    with serving(lambda _: "hang") as server, pytest.raises(ReadTimeoutError) as raised:
        client(f"http://127.0.0.1:{server.port}").list_queues()
    assert isinstance(raised.value, HTTPClientError)


def test_a_connection_closed_unanswered_is_connection_closed() -> None:
    with serving(lambda _: "drop") as server, pytest.raises(ConnectionClosedError):
        client(f"http://127.0.0.1:{server.port}").list_queues()


def test_a_reply_that_is_not_http_is_connection_closed_the_write_unconfirmed() -> None:
    with serving(lambda _: "garbage") as server, pytest.raises(ConnectionClosedError):
        client(f"http://127.0.0.1:{server.port}").list_queues()


def test_a_chunked_reply_reaches_botocore_whole_on_a_kept_connection() -> None:
    with serving(lambda _: "chunked") as server:
        sqs = client(f"http://127.0.0.1:{server.port}")
        for _ in range(2):
            assert sqs.list_queues()["QueueUrls"] == ["http://127.0.0.1/000000000000/q"]
    assert server.connections == 1


def test_nobody_listening_is_an_endpoint_connection_error_nothing_written() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(EndpointConnectionError) as raised:
        client(f"http://127.0.0.1:{port}").list_queues()
    assert not isinstance(raised.value, HTTPClientError)


def _certificate(tmp_path: Path, name: str) -> tuple[ssl.SSLContext, Path]:
    """A self-signed certificate for `name` and 127.0.0.1: the server's TLS context and the
    certificate's file, the CA bundle that trusts it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    return server, cert_file


def test_tls_is_verified_against_the_ca_bundle_and_the_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_tls, bundle = _certificate(tmp_path, "localhost")
    other_tls, other_bundle = _certificate(tmp_path, "elsewhere.example")
    with serving(lambda _: "keep", server_tls) as server:
        endpoint = f"https://localhost:{server.port}"
        monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
        with pytest.raises(SSLError):  # not signed by a CA of botocore's bundle
            client(endpoint).list_queues()
        monkeypatch.setenv("AWS_CA_BUNDLE", str(other_bundle))
        with pytest.raises(SSLError):  # a certificate trusted, but not this one
            client(endpoint).list_queues()
        monkeypatch.setenv("AWS_CA_BUNDLE", str(bundle))
        assert client(endpoint).list_queues()["QueueUrls"]
        unverified = boto3.client("sqs", endpoint_url=endpoint, verify=False, config=ONE_TRY)
        use_stdlib_http(unverified)
        assert isinstance(session_of(unverified), StdlibHttpSession)
        assert unverified.list_queues()["QueueUrls"]
    monkeypatch.setenv("AWS_CA_BUNDLE", str(other_bundle))
    with serving(lambda _: "keep", other_tls) as server, pytest.raises(SSLError):
        # Trusted, but for another name than the endpoint's.
        client(f"https://localhost:{server.port}").list_queues()
    assert server.requests == 0


class RecordingBotocoreSession(URLLib3Session):
    """botocore's own session, noting the requests handed to it."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def send(self, request: Any) -> Any:
        self.sent.append(request.method)
        return super().send(request)


def test_a_request_expecting_100_continue_goes_through_botocores_layer() -> None:
    botocore_layer = RecordingBotocoreSession()
    with serving(lambda _: "keep") as server:
        sqs = boto3.client("sqs", endpoint_url=f"http://127.0.0.1:{server.port}", config=ONE_TRY)
        sqs._endpoint.http_session = StdlibHttpSession(  # type: ignore[attr-defined]
            botocore_layer,
            verify=True,
            connect_timeout=5,
            read_timeout=5,
            max_pool_connections=1,
            socket_options=[],
        )
        sqs.list_queues()
        assert botocore_layer.sent == []

        def expect_continue(request: Any, **_: Any) -> None:
            request.headers["Expect"] = "100-continue"

        sqs.meta.events.register("before-sign.sqs.ListQueues", expect_continue)
        assert sqs.list_queues()["QueueUrls"]
    assert botocore_layer.sent == ["POST"]
