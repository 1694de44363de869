"""`make console-demo` on a fresh clone: `dlq-replay console --demo` from .venv-demo (what
`make demo` installs: requirements/demo.lock, the `demo` and `console` extras, nothing of the
development toolchain) serves the console on the demo's queues, and Ctrl-C stops it.

`make pytest` makes .venv-demo first; run alone, the test is skipped without it, except in CI
(`CI=true`), where a missing .venv-demo fails it."""

from __future__ import annotations

import http.cookiejar
import os
import queue
import re
import signal
import subprocess
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO_COMMAND = ROOT / ".venv-demo" / "bin" / "dlq-replay"
URL_LINE = re.compile(r"^dlq-replay console: (http://\S+)$")
QUEUES = ("demo-operator", "demo-dlq")


def demo_command() -> Path:
    if DEMO_COMMAND.exists():
        return DEMO_COMMAND
    why = f"{DEMO_COMMAND.relative_to(ROOT)} is missing (make .venv-demo/.installed)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"`make pytest` makes it first: {why}")
    pytest.skip(why)


def newcomer_env(state: Path) -> dict[str, str]:
    """A shell's environment without the development venv or any AWS setting; the audit
    trail's file under `state`."""
    left_out = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in left_out and not name.startswith("AWS_")
    }
    env["XDG_STATE_HOME"] = str(state)
    return env


def lines_of(stream: object) -> queue.Queue[str]:
    """The stream's lines as they come, read by a thread ("" at its end)."""
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(str(line))
        found.put("")

    threading.Thread(target=read, daemon=True).start()
    return found


def rest(lines: queue.Queue[str], seconds: float = 30) -> str:
    """Every line up to the stream's end."""
    found: list[str] = []
    while line := lines.get(timeout=seconds):
        found.append(line)
    return "".join(found)


def printed_url(lines: queue.Queue[str], seconds: float = 60) -> str:
    while True:
        line = lines.get(timeout=seconds)
        assert line, "the console ended before printing its URL"
        found = URL_LINE.match(line.strip())
        if found:
            return found.group(1)


def test_the_demo_venv_serves_the_console_on_the_demo_queues(tmp_path: Path) -> None:
    command = demo_command()
    process = subprocess.Popen(
        [str(command), "console", "--demo"],
        cwd=ROOT,
        env=newcomer_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: stopped whole below, whatever happens
    )
    assert process.stdout is not None
    assert process.stderr is not None
    errors = lines_of(process.stderr)
    try:
        url = printed_url(lines_of(process.stdout))
        # As a browser opens the printed URL: redirects followed, cookies kept.
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with opener.open(url, timeout=30) as answer:
            assert answer.status == 200
            overview, at = answer.read().decode(), answer.geturl()
        for name in QUEUES:
            assert f'data-queue="{name}"' in overview, overview
        # The demo's emulator is SQS alone: CloudWatch's refusal is a note, not an error.
        assert "CloudWatch said UnknownService" in overview, overview
        link = re.search(r'href="([^"]*/q/demo-operator)"', overview)
        assert link, overview
        with opener.open(urllib.parse.urljoin(at, link.group(1)), timeout=30) as answer:
            assert answer.status == 200
            page = answer.read().decode()
        assert "demo-operator" in page
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    err = rest(errors)
    assert process.returncode == 130, err
    assert "console stopped" in err
    assert "Traceback" not in err, err
