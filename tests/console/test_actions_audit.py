"""Pause and purge from the console, on a stack (the tests' stand-in stack in moto's server):
each goes to the stack's audit table as the CLI's command does, from `console`, with the
request the CLI records for it: the same option names."""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from dlq_replay.cli.main import main
from dlq_replay.demo.emulator import emulator_session

from .support import Browser, park, served

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.standin_stack import template  # noqa: E402

pytestmark = pytest.mark.moto_only(reason="a stack with a Lambda function, deployed into moto")


def finished(browser: Browser, body: str) -> dict[str, Any]:
    found = re.search(r'data-job="(\d+)"', body)
    assert found, body
    deadline = time.monotonic() + 20
    while (job := browser.json(f"/api/jobs/{found.group(1)}"))["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return job  # type: ignore[no-any-return]


def test_pause_and_purge_from_the_console_are_audited_with_the_cli_s_request(
    endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"aud{uuid.uuid4().hex[:6]}"
    session = emulator_session()
    cfn = session.client("cloudformation", endpoint_url=endpoint)
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template(prefix=name)))
    sqs = session.client("sqs", endpoint_url=endpoint)
    connection = ["--stack", name, "--region", "us-east-1", "--endpoint-url", endpoint]
    dlq = sqs.get_queue_url(QueueName=f"{name}-dlq")["QueueUrl"]
    operator = sqs.get_queue_url(QueueName=f"{name}-operator")["QueueUrl"]
    park(sqs, dlq, ["a"])
    park(sqs, operator, ["b", "c"])
    assert main(["pause", *connection]) == 0
    assert main(["resume", *connection]) == 0
    assert main(["purge", "dlq", "--confirm", f"{name}-dlq", *connection]) == 0

    with served(endpoint, None, *connection[:-2]) as console:
        browser = Browser(console.url)
        csrf = browser.csrf()
        assert (
            finished(browser, browser.request("/pause", {"enable": "0", "csrf": csrf}).body)[
                "state"
            ]
            == "done"
        )
        assert (
            finished(browser, browser.request("/pause", {"enable": "1", "csrf": csrf}).body)[
                "state"
            ]
            == "done"
        )
        purged = browser.request(
            f"/q/{name}-operator/purge", {"confirm": f"{name}-operator", "csrf": csrf}
        )
        assert finished(browser, purged.body)["state"] == "done"

    capsys.readouterr()
    assert main(["audit", "--json", *connection]) == 0
    actions = json.loads(capsys.readouterr().out)["actions"]
    by = {(a["origin"], a["command"]): a for a in actions}
    assert len(by) == len(actions) == 6
    for command in ("pause", "resume", "purge"):
        cli, console_action = by["cli", command], by["console", command]
        assert console_action["request"].keys() == cli["request"].keys(), command
        assert console_action["tally"].keys() == cli["tally"].keys(), command
        assert (console_action["outcome"], console_action["exit_code"]) == ("ok", 0)
        assert console_action["identity"] == cli["identity"]
        worked_on = [queue.rsplit("/", 1)[-1] for queue in console_action["queues"]]
        assert worked_on == [f"{name}-operator" if command == "purge" else f"{name}-dlq"]
    assert by["console", "resume"]["request"]["enable"] is True
    assert by["console", "purge"]["request"]["confirm"] == f"{name}-operator"
    assert by["console", "purge"]["tally"]["purged"] == 2
