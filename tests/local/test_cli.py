"""`dlq-replay worker` errors: one line on stderr starting `dlq-replay: error:`, no traceback,
exit 1 for something that failed, 2 for a bad setting."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from dlq_replay.cli.main import main

from .support import clean_env, dlq_replay_command

pytestmark = pytest.mark.emulator


PREFIX = "dlq-replay: error: "


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*dlq_replay_command(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    (line,) = lines
    assert line.startswith(PREFIX), line
    return line


def test_missing_queue_is_one_line_and_exit_1(emulator_endpoint: str) -> None:
    account_url = f"{emulator_endpoint}/123456789012"
    result = run_cli(
        [
            "worker",
            "--dlq-url",
            f"{account_url}/no-such-dlq",
            "--operator-queue-url",
            f"{account_url}/operator",
            "--endpoint-url",
            emulator_endpoint,
            "--region",
            "us-east-1",
        ],
        clean_env(AWS_ACCESS_KEY_ID="demo", AWS_SECRET_ACCESS_KEY="demo"),
    )
    assert result.returncode == 1
    line = one_error_line(result.stderr)
    assert "the DLQ does not exist" in line
    assert f"{account_url}/no-such-dlq" in line
    assert "Traceback" not in result.stdout


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP port that accepts nothing on its own: a connection attempt would be queued here."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.setblocking(False)
    try:
        yield server
    finally:
        server.close()


def test_no_credentials_is_one_line_and_exit_1_without_network(
    tmp_path: Path, listener: socket.socket
) -> None:
    config = tmp_path / "config"
    credentials = tmp_path / "credentials"
    config.write_text("")
    credentials.write_text("")
    host, port = listener.getsockname()
    endpoint = f"http://{host}:{port}"
    env = clean_env(
        HOME=str(tmp_path),
        AWS_CONFIG_FILE=str(config),
        AWS_SHARED_CREDENTIALS_FILE=str(credentials),
        # No instance metadata outside EC2: the last provider in the chain answers at once.
        AWS_EC2_METADATA_DISABLED="true",
    )
    assert not any(name.startswith("AWS_ACCESS") or name == "AWS_PROFILE" for name in env)

    result = run_cli(
        [
            "worker",
            "--dlq-url",
            f"{endpoint}/123456789012/dlq",
            "--operator-queue-url",
            f"{endpoint}/123456789012/operator",
            "--endpoint-url",
            endpoint,
            "--region",
            "us-east-1",
        ],
        env,
    )

    assert result.returncode == 1
    line = one_error_line(result.stderr)
    assert "no AWS credentials" in line
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing ever connected: the error came before any request


@pytest.mark.parametrize(
    ("args", "env", "start"),
    [
        pytest.param(
            ["--max-attempts", "0"], {}, "argument --max-attempts: '0' must be", id="option"
        ),
        pytest.param(
            [], {"MAX_ATTEMPTS": "many"}, "MAX_ATTEMPTS='many' is invalid", id="environment"
        ),
        pytest.param(["--jitter", "some"], {}, "argument --jitter: 'some' must be", id="jitter"),
        pytest.param(
            ["--operator-queue-url", " "], {}, "argument --operator-queue-url: ' '", id="required"
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_it_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    start: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    base = [
        "worker",
        "--dlq-url",
        "http://127.0.0.1:9/123456789012/dlq",
        "--operator-queue-url",
        "http://127.0.0.1:9/123456789012/operator",
        "--endpoint-url",
        "http://127.0.0.1:9",
    ]

    try:
        code = main([*base, *args])
    except SystemExit as stop:  # the parser's own refusal
        code = int(stop.code or 0)

    assert code == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert line.startswith(f"{PREFIX}{start}")


def test_max_attempts_zero_as_a_real_command() -> None:
    result = run_cli(
        [
            "worker",
            "--dlq-url",
            "http://127.0.0.1:9/123456789012/dlq",
            "--operator-queue-url",
            "http://127.0.0.1:9/123456789012/operator",
            "--max-attempts",
            "0",
        ],
        clean_env(AWS_ACCESS_KEY_ID="demo", AWS_SECRET_ACCESS_KEY="demo"),
    )
    assert result.returncode == 2
    line = one_error_line(result.stderr)
    assert line == (
        f"{PREFIX}argument --max-attempts: '0' must be an integer from 1 to 100 [MAX_ATTEMPTS] "
        "(see: dlq-replay worker --help)"
    )
