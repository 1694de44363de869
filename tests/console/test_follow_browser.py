"""A redrive followed to its end through the console, in headless Chromium (docs/console.md):
the operator redrives every parked message from the operator queue's page; the main queue's
consumer fails every fourth copy (the main queue's redrive policy moves it to the DLQ) and
deletes the rest; `dlq-replay worker`, a real process on the DLQ, counts the returns and parks
them again; the Audit page's `followed` cell then says what came back, and, once the main
queue's window has passed, when the move settled. On moto's server and on LocalStack, with the
trail in the local file (as the console keeps it without a table)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.demo.emulator import Queues
from emulation import eventually
from operator_cli.support import depth, park
from operator_cli.test_follow_end_to_end import Consumer, make_queues, start_worker

from .browser import chromium, screenshot, wait_for
from .support import served

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

MESSAGES = 20
FAIL_EVERY = 4


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium() as found:
        yield found


def followed_cell(driver: Any, action_id: str) -> str:
    """The Audit page's `followed` cell of the console's redrive (the page read afresh)."""
    from selenium.webdriver.common.by import By

    driver.get(driver.current_url)
    rows = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr"))
    cells = [
        row.find_element(By.CLASS_NAME, "followed").text
        for row in rows
        if row.find_elements(By.TAG_NAME, "td")[1].text == "redrive"
    ]
    assert len(cells) == 1, (action_id, [row.text for row in rows])
    return str(cells[0])


def test_the_audit_page_shows_what_came_back_of_a_console_redrive_and_when_it_settled(
    driver: Any, endpoint: str, client: SQSClient, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    made = make_queues(client, prefix=f"fb{time.time_ns() % 10**8}")
    queues = Queues(main=made.main, dlq=made.dlq, operator=made.operator)
    name = queues.operator.rsplit("/", 1)[-1]
    bodies = [f"order-{i}" for i in range(MESSAGES)]
    failing = {b for i, b in enumerate(bodies) if i % FAIL_EVERY == 0}
    park(client, queues.operator, bodies)  # count 3: a return is parked again
    worker = start_worker(endpoint, made, tmp_path)
    try:
        with served(endpoint, queues) as console:
            driver.get(f"{console.url}/q/{name}")
            wait_for(  # the page shows the messages once its snapshot is read
                lambda: [
                    e for e in driver.find_elements(By.ID, "match-count") if e.text == f"{MESSAGES}"
                ]
            )
            driver.find_element(By.ID, "scope-filter").click()
            driver.find_element(By.ID, "plan-redrive").click()
            wait_for(lambda: driver.find_elements(By.ID, "confirm-redrive"))[0].click()
            wait_for(
                lambda: [e for e in driver.find_elements(By.ID, "job-state") if e.text == "done"]
            )
            lines = driver.find_element(By.ID, "job-lines").text
            found = re.search(r"followed as action ([0-9a-f]{32})", lines)
            assert found, lines
            action_id = found.group(1)
            screenshot(driver, "follow-redrive")

            consumer = Consumer(client, queues.main, lambda body: body in failing)

            def all_back() -> bool:
                consumer.poll()
                return depth(client, queues.operator) == (len(failing), 0) and all(
                    depth(client, url) == (0, 0) for url in (queues.main, queues.dlq)
                )

            eventually(all_back, "every failed copy back and parked again", after=0, within=40)
            assert sorted(consumer.deleted) == sorted(set(bodies) - failing)

            driver.get(f"{console.url}/audit")
            head = f"sent {MESSAGES} · returned {len(failing)} · untracked 0 · "

            def cell_when(wanted: str) -> Callable[[], str | None]:
                def read() -> str | None:
                    cell = followed_cell(driver, action_id)
                    return cell if cell.startswith(head) and wanted in cell else None

                return read

            counted = eventually(cell_when(""), "the returns on the Audit page", after=0)
            screenshot(driver, "follow-returned")
            settled = eventually(cell_when("settled "), "the move settled", after=0, within=45)
            screenshot(driver, "follow-settled")
    finally:
        stopped = worker.stop()
    assert stopped == 0, worker.lines()
    assert re.fullmatch(r"settling until [0-9: -]+|settled [0-9: -]+", counted[len(head) :])
    assert re.fullmatch(re.escape(head) + r"settled [0-9: -]+", settled), settled
