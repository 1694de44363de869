"""The console in a real browser (headless Chromium) on the suite's emulator (moto, or
LocalStack in `make test-localstack`): the overview, a queue's page with hostile bodies shown as
text, a filter, a redrive of a selection whose tally in the page equals what arrived, and the
audit page listing the console's action and the CLI's."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.cli.main import main
from dlq_replay.demo.emulator import create_queues

from .browser import chromium, screenshot, wait_for
from .support import depth, park, served

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

HOSTILE = [
    "<script>window.hacked = 1; alert('body')</script>",
    '<img src="x" onerror="window.hacked = 2; alert(2)">',
    json.dumps({"order": 7, "note": "<b id='injected-json'>bold</b>"}),
]


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium() as found:
        yield found


def no_alert(driver: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018


def test_overview_queue_filter_redrive_and_audit(
    driver: Any, endpoint: str, client: SQSClient
) -> None:
    from selenium.webdriver.common.by import By

    queues = create_queues(client, prefix=f"web{uuid.uuid4().hex[:6]}")
    name = queues.operator.rsplit("/", 1)[-1]
    park(client, queues.operator, [json.dumps({"order": n, "sku": "A-1"}) for n in range(12)])
    park(client, queues.operator, [f"late order {n}" for n in range(6)], reason="max-age")
    client.send_message(
        QueueUrl=queues.operator,
        MessageBody=HOSTILE[0],
        MessageAttributes={
            "dlq-replay-park-reason": {"DataType": "String", "StringValue": "rejected"},
            "note": {"DataType": "String", "StringValue": "<b id='injected'>x</b>"},
        },
    )
    park(client, queues.operator, HOSTILE[1:], reason="rejected")
    total = 21
    with served(endpoint, queues) as console:
        driver.get(console.start_url)
        row = f'tr[data-queue="{name}"]'
        text = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, row).text)
        assert str(total) in text
        assert "operator queue" in text
        screenshot(driver, "overview")
        # It refreshes itself: a message parked now shows within the 5 s refresh.
        park(client, queues.operator, ["one more"])
        total += 1
        wait_for(lambda: str(total) in driver.find_element(By.ID, "overview").text, 12)

        driver.find_element(By.LINK_TEXT, name).click()
        wait_for(lambda: driver.find_elements(By.ID, "messages"))
        no_alert(driver)
        assert driver.execute_script("return window.hacked === undefined")
        assert not driver.find_elements(By.ID, "injected")
        assert not driver.find_elements(By.ID, "injected-json")
        assert not driver.find_elements(By.CSS_SELECTOR, "#messages img")
        table = driver.find_element(By.ID, "messages")
        assert "<script>window.hacked = 1; alert('body')</script>" in table.text
        assert '<img src="x" onerror=' in table.text
        for details in driver.find_elements(By.CSS_SELECTOR, "#messages details"):
            driver.execute_script("arguments[0].open = true", details)
        assert "<b id='injected'>x</b>" in driver.find_element(By.ID, "messages").text
        assert '"sku": "A-1"' in table.text  # pretty-printed JSON
        assert driver.find_element(By.ID, "match-count").text == str(total)
        screenshot(driver, "queue")

        driver.find_element(By.CSS_SELECTOR, 'select[name="reason"]').send_keys("max-age")
        driver.find_element(By.ID, "apply-filter").click()
        wait_for(lambda: driver.find_element(By.ID, "match-count").text == "6")
        boxes = driver.find_elements(By.CSS_SELECTOR, "input.tick")
        assert len(boxes) == 6
        for box in boxes[:4]:
            box.click()
        driver.find_element(By.ID, "plan-redrive").click()
        plan = wait_for(lambda: driver.find_elements(By.ID, "plan"))[0]
        assert f"move to {queues.main.rsplit('/', 1)[-1]}" in plan.text
        assert plan.text.strip().endswith("4")
        assert depth(client, queues.main) == 0  # the plan moved nothing
        screenshot(driver, "plan")

        driver.find_element(By.ID, "confirm-redrive").click()
        wait_for(lambda: driver.find_element(By.ID, "job-state").text == "done")
        tally = _tally(driver)
        assert tally["moved (sent and deleted)"] == 4
        assert tally["seen (received)"] == total
        assert driver.find_element(By.ID, "adds-up").text == "the tally adds up"
        screenshot(driver, "redrive")
        # What the page says is what the queues hold.
        assert depth(client, queues.main) == tally["moved (sent and deleted)"]
        assert depth(client, queues.operator) == total - 4

        cli = [
            "--endpoint-url", endpoint, "--main-queue-url", queues.main,
            "--operator-queue-url", queues.operator,
        ]  # fmt: skip
        assert main(["redrive", "--filter-reason", "max-attempts", "--limit", "2", *cli]) == 0
        driver.get(f"{console.url}/audit")
        audit = driver.find_element(By.ID, "audit").text
        rows = [line for line in audit.splitlines() if " redrive " in f" {line} "]
        assert any(" console " in f" {row} " and "moved 4" in row for row in rows), audit
        assert any(" cli " in f" {row} " and "moved 2" in row for row in rows), audit
        screenshot(driver, "audit")


def _tally(driver: Any) -> dict[str, int]:
    """The tally table's rows, read in one script call (the page replaces them as it polls)."""
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#tally tbody tr'))"
        ".map((tr) => Array.from(tr.cells).map((td) => td.textContent.trim()));"
    )
    return {label: int(count) for label, count in rows}


def test_leaving_the_page_leaves_the_redrive_running_and_stop_loses_nothing(
    driver: Any, endpoint: str, client: SQSClient
) -> None:
    """The action runs in the console: another page (here the overview) shows it in the
    running bar, whose link leads back to it; its Stop button ends it as Ctrl-C ends the
    command."""
    from selenium.webdriver.common.by import By

    queues = create_queues(client, prefix=f"close{uuid.uuid4().hex[:6]}")
    name = queues.operator.rsplit("/", 1)[-1]
    main_name = queues.main.rsplit("/", 1)[-1]
    total = 30
    park(client, queues.operator, [f"order {n}" for n in range(total)])
    with served(endpoint, queues) as console:
        driver.get(console.start_url)
        driver.get(f"{console.url}/q/{name}")
        wait_for(lambda: driver.find_elements(By.ID, "scope-filter"))
        driver.find_element(By.ID, "scope-filter").click()
        driver.find_element(By.NAME, "rate").send_keys("4")
        driver.find_element(By.ID, "plan-redrive").click()
        wait_for(lambda: driver.find_elements(By.ID, "confirm-redrive"))[0].click()
        wait_for(lambda: _tally(driver).get("moved (sent and deleted)", 0) >= 3)
        job_url = driver.current_url
        driver.get("about:blank")  # the page closes
        driver.get(console.start_url)
        job = next(iter(console.console.jobs.jobs.values()))
        assert job.state == "running"
        bar = driver.find_element(By.ID, "running")
        assert f"running: redrive {name} -> {main_name}" in bar.text
        screenshot(driver, "running")
        bar.find_element(By.TAG_NAME, "a").click()
        wait_for(lambda: driver.current_url == job_url)
        wait_for(lambda: driver.find_elements(By.ID, "job-stop"))[0].click()
        wait_for(lambda: job.state != "running", 15)
        assert job.state == "stopped"
        assert job.adds_up
        moved = dict(job.rows)["moved (sent and deleted)"]
        assert 3 <= moved < total
        assert "stopped: rerun to continue, nothing is lost" in job.lines
        assert depth(client, queues.main) == moved
        assert depth(client, queues.operator) == total - moved
        hidden = client.get_queue_attributes(
            QueueUrl=queues.operator, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]["ApproximateNumberOfMessagesNotVisible"]
        assert hidden == "0"
        # The page shows the end the console recorded; the bar is gone.
        wait_for(lambda: driver.find_element(By.ID, "job-state").text == "stopped")
        driver.refresh()
        assert driver.find_element(By.ID, "job-state").text == "stopped"
        assert not driver.find_elements(By.ID, "running")
