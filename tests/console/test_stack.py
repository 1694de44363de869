"""The console on a stack (--stack, the tests' stand-in stack deployed into moto's server): the
replay's state on the overview, and pause / resume from the page, which are the CLI's own
commands (audited as `pause` and `resume`)."""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path

import pytest
from dlq_replay.demo.emulator import emulator_session

from .support import Browser, served

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.standin_stack import template  # noqa: E402

pytestmark = pytest.mark.moto_only(reason="a stack with a Lambda function, deployed into moto")


def wait_state(browser: Browser, word: str) -> str:
    deadline = time.monotonic() + 20
    while word not in (state := browser.json("/api/overview")["replay"] or ""):
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    return state


def test_the_overview_shows_the_replay_and_pauses_and_resumes_it(endpoint: str) -> None:
    name = f"shop{uuid.uuid4().hex[:6]}"
    cfn = emulator_session().client("cloudformation", endpoint_url=endpoint)
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template(prefix=name)))
    with served(endpoint, None, "--stack", name, "--region", "us-east-1") as console:
        browser = Browser(console.url)
        page = browser.request("/").body
        assert f"of stack {name}" in page
        overview = browser.json("/api/overview")
        roles = {row["name"]: row["roles"] for row in overview["rows"]}
        assert roles == {f"{name}-dlq": ["stack DLQ"], f"{name}-operator": ["operator queue"]}
        assert overview["replay"] == "running"
        csrf = browser.csrf()

        paused = browser.request("/pause", {"enable": "0", "csrf": csrf})
        job_id = re.search(r'data-job="(\d+)"', paused.body)
        assert job_id, paused.body
        wait_state(browser, "paused")
        resumed = browser.request("/pause", {"enable": "1", "csrf": csrf})
        assert resumed.status == 200
        assert wait_state(browser, "running") == "running"

        audit = browser.request("/audit").body
        assert re.search(r"<td>pause</td><td>console</td>", audit), audit
        assert re.search(r"<td>resume</td><td>console</td>", audit), audit
