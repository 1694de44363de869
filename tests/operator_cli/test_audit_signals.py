"""A second Ctrl-C never leaves a begin without an end: `dlq-replay redrive` in a subprocess,
behind a proxy that makes SQS stop answering in time after the first SIGINT (so the work cannot
finish), stopped by a second SIGINT. It exits at once with 130, and the audit trail holds the
action's end: `interrupted`, 130, abandoned by the second signal, with what was left. A trail
that does not answer either holds the exit up for `ABANDON_SECONDS` at most."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from dlq_replay.audit.recorder import ABANDON_SECONDS
from dlq_replay.audit.store import TABLE_KEYS
from dlq_replay.demo.emulator import emulator

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.chaos import Faults  # noqa: E402
from tools.interrupt import REGION, Run, RunOutcome, Scenario, console_command  # noqa: E402

pytestmark = pytest.mark.moto_only(reason="moto's own server in this process, behind a proxy")
MAIN = "dlq_replay.cli.main"
SECOND_AFTER = 0.5  # seconds between the two signals


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with emulator() as endpoint_url:
        yield endpoint_url


def run_of(server: str, tmp_path: Path, **env: str) -> Run:
    script = console_command()
    return Run(
        Scenario(
            endpoint=server,
            command="redrive",
            signum=signal.SIGINT,
            workdir=tmp_path,
            dlq_replay=script if Path(script[0]).exists() else [sys.executable, "-m", MAIN],
            messages=60,
            prefix=f"twice{tmp_path.name[-6:].replace('_', '')}",
            slow_after_signal=30.0,  # in-flight requests never finish before the second signal
            second_signal=SECOND_AFTER,
            env={"XDG_STATE_HOME": str(tmp_path), **env},
        )
    )


def interrupted_twice(run: Run) -> RunOutcome:
    try:
        return run.interrupted(exit_timeout=20)
    finally:
        run.proxy.faults = Faults()
        run.close()


@pytest.mark.usefixtures("atomic_receive")
def test_a_second_signal_writes_the_end_before_the_process_exits(
    server: str, tmp_path: Path
) -> None:
    outcome = interrupted_twice(run_of(server, tmp_path))

    assert outcome.code == 130, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert "second signal (SIGINT): exiting now" in outcome.stderr
    records = [
        json.loads(line)
        for line in (tmp_path / "dlq-replay" / "audit.jsonl").read_text().splitlines()
    ]
    assert [r["phase"] for r in records] == ["begin", "end"]
    end = records[1]
    assert (end["outcome"], end["exit_code"]) == ("interrupted", 130)
    assert end["abandoned"] == "second signal (SIGINT)"
    assert "hidden" in end["left"], end["left"]
    assert end["tally"]["interrupted"] == "SIGINT"
    assert end["tally"]["seen"] >= 10


@pytest.mark.usefixtures("atomic_receive")
def test_a_trail_that_does_not_answer_holds_the_exit_up_for_the_bound_at_most(
    server: str, tmp_path: Path
) -> None:
    """The trail is a DynamoDB table behind the same proxy: its begin is written before the
    signal; its end, after it, would wait 30 s for an answer."""
    boto3.client(
        "dynamodb",
        endpoint_url=server,
        region_name=REGION,
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    ).create_table(TableName="slow-trail", BillingMode="PAY_PER_REQUEST", **TABLE_KEYS)

    outcome = interrupted_twice(run_of(server, tmp_path, DLQ_REPLAY_AUDIT_TABLE="slow-trail"))

    assert outcome.code == 130, outcome.stderr
    # The second signal comes SECOND_AFTER the first; the exit ABANDON_SECONDS after it at most.
    assert outcome.seconds_to_exit < SECOND_AFTER + ABANDON_SECONDS + 1.5, outcome
    assert "audit: the result was not recorded in the audit trail in 2 s" in outcome.stderr
