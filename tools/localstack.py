"""Run a command against a throwaway LocalStack: `make test-localstack` uses it for pytest.

LocalStack (`localstack-core`, host mode, no Docker) comes from its own venv (build/, made by
the Makefile from requirements/localstack.lock). This script picks a free port on 127.0.0.1,
starts it with only the services the tests use, waits a bounded time for SQS to be available,
runs the command with `DLQ_REPLAY_LOCALSTACK_ENDPOINT` set, and stops LocalStack's whole
process group whatever happens. It never passes silently: LocalStack not starting, and a
pytest run that collected nothing (exit 5), are failures with a clear message.

    python tools/localstack.py --python build/localstack-venv/bin/python -- pytest ...
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

ENDPOINT_VARIABLE = "DLQ_REPLAY_LOCALSTACK_ENDPOINT"
SERVICES = "sqs,events,cloudwatch,cloudformation,s3,iam,sts"
PYTEST_NO_TESTS = 5


class LocalStackError(Exception):
    """LocalStack could not be started or did not become ready."""


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now (another engineer's tests share the host)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def localstack_environment(port: int, root: Path) -> dict[str, str]:
    """Host mode on loopback only; path-style queue URLs
    (`http://127.0.0.1:<port>/000000000000/<name>`); nothing fetched from the internet."""
    address = f"127.0.0.1:{port}"
    return {
        **os.environ,
        "OVERRIDE_IN_DOCKER": "0",
        "GATEWAY_LISTEN": address,
        "LOCALSTACK_HOST": address,
        "SERVICES": SERVICES,
        "SQS_ENDPOINT_STRATEGY": "off",
        "DNS_ADDRESS": "0",
        "FILESYSTEM_ROOT": str(root),
        "SKIP_SSL_CERT_DOWNLOAD": "1",
        "DISABLE_EVENTS": "1",
    }


def sqs_available(endpoint: str) -> bool:
    """LocalStack's health endpoint (an http://127.0.0.1 URL this script built) says SQS is up."""
    try:
        health_url = f"{endpoint}/_localstack/health"
        with urllib.request.urlopen(health_url, timeout=2) as response:  # noqa: S310
            health = json.load(response)
    except (OSError, urllib.error.URLError, ValueError):
        return False
    return health.get("services", {}).get("sqs") in {"available", "running"}


def wait_ready(process: subprocess.Popen[bytes], endpoint: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LocalStackError(f"LocalStack exited with code {process.returncode} at start-up")
        if sqs_available(endpoint):
            return
        time.sleep(0.5)
    raise LocalStackError(f"LocalStack's SQS was not available within {timeout:.0f} s")


def stop(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM to LocalStack's own process group (it was started as a session leader, so its
    pid is the group id and its children go with it), SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; make sure no child outlived it in the group.
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        return


def log_tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join(text[-lines:])


@contextmanager
def localstack(python: str, timeout: float) -> Iterator[str]:
    """A running LocalStack; yields its endpoint URL, stops it on the way out."""
    with tempfile.TemporaryDirectory(prefix="dlq-replay-localstack-") as temp:
        root = Path(temp)
        log = root / "localstack.log"
        port = free_port()
        endpoint = f"http://127.0.0.1:{port}"
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603 - our own venv's interpreter
                [python, "-m", "localstack.runtime.main"],
                env=localstack_environment(port, root / "fs"),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            try:
                wait_ready(process, endpoint, timeout)
            except LocalStackError as error:
                raise LocalStackError(f"{error}; last lines of its log:\n{log_tail(log)}") from None
            print(f"localstack: ready at {endpoint} (pid {process.pid})", file=sys.stderr)
            yield endpoint
        finally:
            stop(process)
            print(f"localstack: stopped (pid {process.pid})", file=sys.stderr)


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (CI cancelling the job) unwinds like Ctrl-C, so LocalStack is still stopped."""
    raise KeyboardInterrupt


def run(python: str, command: Sequence[str], timeout: float) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with localstack(python, timeout) as endpoint:
            code = subprocess.call([*command], env={**os.environ, ENDPOINT_VARIABLE: endpoint})  # noqa: S603
    except LocalStackError as error:
        print(f"localstack: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("localstack: interrupted", file=sys.stderr)
        return 130
    if code == PYTEST_NO_TESTS:
        print("localstack: error: no tests ran against LocalStack", file=sys.stderr)
        return 1
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--python", required=True, help="the LocalStack venv's python")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to become ready")
    parser.add_argument("command", nargs="+", help="what to run once LocalStack is ready")
    args = parser.parse_args(argv)
    return run(args.python, args.command, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
