"""Interactive commands fail fast when the endpoint is down and say what they tried; the
worker keeps the patient retries. A wrong region says so."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import boto3
import pytest

from .support import run_cli

QUEUE_PATH = "/123456789012/orders"


class ResettingEndpoint:
    """A TCP endpoint on 127.0.0.1 that accepts each connection and closes it at once, so every
    attempt of a client fails; it counts the attempts."""

    def __init__(self) -> None:
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self._server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()


@pytest.fixture
def endpoint() -> Iterator[ResettingEndpoint]:
    served = ResettingEndpoint()
    yield served
    served.close()


def test_peek_gives_up_after_two_attempts_and_names_the_endpoint(
    capsys: pytest.CaptureFixture[str], endpoint: ResettingEndpoint
) -> None:
    result = run_cli(capsys, "peek", f"{endpoint.url}{QUEUE_PATH}", "--endpoint-url", endpoint.url)
    assert result.code == 1, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert endpoint.url in lines[0]
    assert "check --endpoint-url, --region and the network" in lines[0]
    assert endpoint.connections == 2  # the interactive config's attempts, not the worker's 6


def test_the_worker_start_up_is_bounded_by_its_patience_not_botocores_retries(
    capsys: pytest.CaptureFixture[str], endpoint: ResettingEndpoint
) -> None:
    """The start checks' client does not retry by itself: with --start-up-patience 0 the DLQ
    is asked once (the pollers' client keeps the Lambda's patient retries)."""
    queue = f"{endpoint.url}{QUEUE_PATH}"
    result = run_cli(
        capsys,
        "worker",
        "--dlq-url",
        queue,
        "--operator-queue-url",
        queue,
        "--endpoint-url",
        endpoint.url,
        "--start-up-patience",
        "0",
    )
    assert result.code == 1, result
    assert "--start-up-patience 0 s" in result.err
    assert endpoint.connections == 1  # was 6: 1 + botocore's 5 retries, whatever the patience


@pytest.mark.parametrize("patience", ["-1", "86401", "soon"])
def test_the_start_up_patience_is_checked_by_the_parser(
    capsys: pytest.CaptureFixture[str], patience: str
) -> None:
    queue = f"http://127.0.0.1:9{QUEUE_PATH}"
    result = run_cli(capsys, "worker", "--dlq-url", queue, "--start-up-patience", patience)
    assert result.code == 2, result
    assert "--start-up-patience" in result.err
    assert "Traceback" not in result.err


def test_a_queue_url_of_another_region_is_named(
    capsys: pytest.CaptureFixture[str], aws: None
) -> None:
    url = boto3.client("sqs", region_name="eu-west-1").create_queue(QueueName="parked")["QueueUrl"]
    result = run_cli(capsys, "peek", url, "--region", "us-east-1", "--wait-seconds", "0")
    assert result.code == 1, result
    assert "queue not found" in result.err
    assert "names region eu-west-1, the command used us-east-1: pass --region eu-west-1" in (
        result.err
    )


class SilentEndpoint:
    """A TCP endpoint on 127.0.0.1 that accepts each connection, reads the request and never
    answers; it counts the requests."""

    def __init__(self) -> None:
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self._server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self.requests = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            self.requests += 1
            self._held.append(connection)  # open, silent: the client waits for its timeout

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for connection in self._held:
            connection.close()
        self._server.close()


def test_an_endpoint_that_never_answers_is_one_line_stating_the_read_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Was 30.7 s (status) and 61.4 s (peek) of silence, then a line naming neither the
    timeout nor what happened; now 2 attempts of 10 s (docs/operator-commands.md)."""
    silent = SilentEndpoint()
    try:
        queue = f"{silent.url}{QUEUE_PATH}"
        result = run_cli(
            capsys, "status", "--operator-queue-url", queue, "--endpoint-url", silent.url
        )
    finally:
        silent.close()
    assert result.code == 1, result
    (line,) = result.err.strip().splitlines()
    assert line == (
        f"dlq-replay: error: GetQueueAttributes failed: no answer from {silent.url} within "
        "10 s (read timeout)"
    )
    assert silent.requests == 2  # the interactive config's attempts


@pytest.mark.parametrize(("wait", "read_timeout"), [(None, 11), ("0", 10), ("1", 11), ("20", 30)])
def test_a_receiving_command_s_read_timeout_covers_its_long_poll(
    wait: str | None, read_timeout: int
) -> None:
    """SQS holds a receive's answer up to --wait-seconds: the read timeout is on top of it."""
    from dlq_replay.cli.main import build_parser
    from dlq_replay.cli.options import sqs_client

    argv = ["peek", "https://sqs.us-east-1.amazonaws.com/123456789012/q"]
    args = build_parser(["peek"]).parse_args(argv + (["--wait-seconds", wait] if wait else []))
    args.region = "us-east-1"
    config = sqs_client(args).meta.config
    assert config.read_timeout == read_timeout  # type: ignore[attr-defined]  # default wait: 1
