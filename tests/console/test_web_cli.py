"""`dlq-replay console`'s --host and --port through the real command: an address it cannot
listen on, a name that does not resolve, a port in use, each one line and exit 2; on 0.0.0.0 it
answers by any IP address of this machine, and names no other host."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .support import spawned

pytestmark = pytest.mark.moto_only(reason="the demo's embedded moto server, in this process")


def dlq_replay() -> list[str]:
    script = Path(sys.executable).with_name("dlq-replay")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "dlq_replay.cli.main"]


def console(*options: str) -> subprocess.CompletedProcess[str]:
    # Nothing listens on port 9: the command fails (or not) before it asks AWS anything.
    command = [*dlq_replay(), "console", "--endpoint-url", "http://127.0.0.1:9", *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("203.0.113.1", "Cannot assign requested address"),  # TEST-NET-3: no address of ours
        ("no-such-host.invalid", "cannot listen on no-such-host.invalid: "),
        ("[::1", "cannot listen on [::1: "),
    ],
)
def test_an_address_it_cannot_listen_on_is_one_line(host: str, why: str) -> None:
    line = one_line(console("--host", host))
    assert line.startswith("dlq-replay: error: cannot listen on "), line
    assert why in line


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        line = one_line(console("--port", str(port)))
    assert line.endswith(f"cannot listen on 127.0.0.1:{port}: Address already in use"), line


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_that_is_no_port_is_a_usage_error(port: str) -> None:
    result = console("--port", port)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--port" in result.stderr


def test_on_every_address_it_answers_by_ip_and_refuses_other_names(
    endpoint: str, tmp_path: Path
) -> None:
    command = [*dlq_replay(), "console", "--endpoint-url", endpoint, "--host", "0.0.0.0"]
    process = spawned(command, tmp_path)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.fullmatch(r"dlq-replay console: http://127\.0\.0\.1:(\d+)/([\w-]{32})/\n", first)
        assert found, first
        port, token = found.groups()
        # 127.0.0.2 is this machine too (all of 127/8), by another address than printed.
        for address in ("127.0.0.1", "127.0.0.2", "localhost"):
            assert status(f"http://{address}:{port}/{token}/") == 200, address
        assert status(f"http://127.0.0.2:{port}/{token}/", host=f"console.example:{port}") == 400
        assert status(f"http://127.0.0.2:{port}/") == 403
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert "Traceback" not in err


def status(url: str, host: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code
