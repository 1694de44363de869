"""What was followed, in the console (docs/console.md): the Audit page's `followed` column says
for each move what the CLI's `audit` says, and a DLQ's page charts the replay's recovery by
attempt (sent, came back, recovered, parked) when the console has the stack's table; without
one, no chart. The stand-in stack runs in moto's server; the counts are written through the
follow package's own stores, as the moves and the replay write them."""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dlq_replay import audit
from dlq_replay.demo.emulator import create_queues, emulator_session
from dlq_replay.follow.recovery import RecoveryTally
from dlq_replay.follow.tables import DynamoFollowStore
from dlq_replay.follow.tag import FollowTag
from operator_cli.support import finished_action

from .browser import chromium, screenshot, wait_for
from .support import Browser, served

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.standin_stack import template  # noqa: E402

pytestmark = pytest.mark.moto_only(reason="a stack with its table, deployed into moto's server")


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium() as found:
        yield found


def deployed(endpoint: str) -> tuple[str, str, Any]:
    """The stand-in stack: its name, its table and a DynamoDB client on the server."""
    name = f"shop{uuid.uuid4().hex[:6]}"
    session = emulator_session()
    cfn = session.client("cloudformation", endpoint_url=endpoint)
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template(prefix=name)))
    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in cfn.describe_stacks(StackName=name)["Stacks"][0]["Outputs"]
    }
    return name, outputs["AuditTableName"], session.client("dynamodb", endpoint_url=endpoint)


def clock(at: float) -> str:
    """A time as the audit writes it: `14:32` today (UTC), with its date on another day."""
    same_day = time.gmtime(at)[:3] == time.gmtime()[:3]
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.gmtime(at))


def replayed(store: DynamoFollowStore, queue: str, at: float) -> None:
    """One invocation's counts: 10 failed first and were replayed; 4 came back and were
    replayed again; 1 of those came back and was parked."""
    tally = RecoveryTally()
    for _ in range(10):
        tally.arrived(0)
        tally.sent(1)
    for _ in range(4):
        tally.arrived(1)
        tally.sent(2)
    tally.arrived(2)
    tally.parked(2)
    store.add(queue, tally, at)


def test_the_audit_page_and_the_queue_page_show_what_was_followed(
    driver: Any, endpoint: str
) -> None:
    from selenium.webdriver.common.by import By

    name, table, dynamodb = deployed(endpoint)
    now = time.time()
    follows = DynamoFollowStore(dynamodb, table)
    settled = finished_action(dynamodb, table, "redrive", ago=7200, origin=audit.Origin.CONSOLE)
    follows.started(settled, 60, now - 7200, command="redrive")
    follows.sent(settled, 1000, 0)
    follows.finished(settled, now - 3000)
    follows.returns([FollowTag(settled, f"m{i}") for i in range(120)], now - 3000)
    settling = finished_action(dynamodb, table, "import", ago=300, origin=audit.Origin.CONSOLE)
    follows.started(settling, 3600, now - 300, command="import")
    follows.sent(settling, 40, 2)
    follows.finished(settling, now - 10)
    native = finished_action(dynamodb, table, "redrive", ago=60, origin=audit.Origin.CONSOLE)
    finished_action(dynamodb, table, "pause", ago=30, origin=audit.Origin.CONSOLE)
    replayed(DynamoFollowStore(dynamodb, table), f"{name}-dlq", now - 3 * 3600)

    with served(endpoint, None, "--stack", name, "--region", "us-east-1") as console:
        driver.get(console.url + "/audit")
        rows = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr"))
        cells = [
            (
                row.find_elements(By.TAG_NAME, "td")[1].text,
                row.find_element(By.CLASS_NAME, "followed").text,
            )
            for row in rows
        ]
        screenshot(driver, "audit-followed")

        assert cells == [
            ("pause", ""),
            ("redrive", "not followed"),
            (
                "import",
                f"sent 40 · returned 0 · untracked 2 · settling until {clock(now - 10 + 3600)}",
            ),
            (
                "redrive",
                f"sent 1,000 · returned 120 · untracked 0 · settled {clock(now - 3000 + 60)}",
            ),
        ], (native, cells)

        driver.get(console.url + f"/q/{name}-dlq")
        chart = wait_for(lambda: driver.find_element(By.ID, "recovery"))
        caption = chart.find_element(By.TAG_NAME, "figcaption").text
        labels = [t.text for t in chart.find_elements(By.CSS_SELECTOR, "svg text.label")]
        counts = [t.text for t in chart.find_elements(By.CSS_SELECTOR, "svg text.count")]
        screenshot(driver, "queue-recovery")

        assert caption == (
            "replay recovery, last 24 h: 10 failed first; 6 recovered on replay 1, 3 on 2; 1 parked"
        )
        assert list(zip(labels, counts, strict=True)) == [
            ("replay 1: sent", "10"),
            ("replay 1: came back", "4"),
            ("replay 1: recovered", "6"),
            ("replay 1: parked", "0"),
            ("replay 2: sent", "4"),
            ("replay 2: came back", "1"),
            ("replay 2: recovered", "3"),
            ("replay 2: parked", "1"),
        ]


def test_without_a_table_the_queue_page_has_no_recovery_chart(endpoint: str) -> None:
    queues = create_queues(
        emulator_session().client("sqs", endpoint_url=endpoint),
        prefix=f"plain{uuid.uuid4().hex[:6]}",
    )
    with served(endpoint, queues) as console:
        browser = Browser(console.url)
        page = browser.request("/q/" + queues.dlq.rsplit("/", 1)[1])

        assert page.status == 200, page.body
        assert 'id="kinds-read"' in page.body  # the page itself
        assert 'id="recovery"' not in page.body
        assert "replay recovery" not in page.body
        assert "followed" in browser.request("/audit").body  # the column is there
