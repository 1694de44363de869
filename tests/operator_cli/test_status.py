"""`dlq-replay status`: depths, redrive wiring, the age of the oldest message, event source."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.config import Config
from dlq_replay.cli import deployment as cli_deployment
from dlq_replay.demo.emulator import create_queues, emulator, emulator_client
from dlq_replay.ops.status import event_source_status

from .support import Queues, assert_one_line_error, depth, park, run_cli

if TYPE_CHECKING:
    import argparse

    from mypy_boto3_sqs import SQSClient


pytestmark = pytest.mark.emulator


def test_status_counts_each_queue_and_shows_the_wiring(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a", "b", "c"])
    park(sqs, queues.dlq, ["d"], reason=None, count=None)
    sqs.receive_message(QueueUrl=queues.dlq, VisibilityTimeout=60)  # one in flight
    sqs.send_message(QueueUrl=queues.main, MessageBody="later", DelaySeconds=60)

    result = run_cli(capsys, "status", *queues.options(), "--json")

    assert result.code == 0, result
    report = result.json()
    rows = {q["role"]: q for q in report["queues"]}
    assert [q["role"] for q in report["queues"]] == ["main", "dlq", "operator"]
    assert (rows["operator"]["visible"], rows["operator"]["in_flight"]) == (3, 0)
    assert (rows["dlq"]["visible"], rows["dlq"]["in_flight"]) == (0, 1)
    assert rows["main"]["delayed"] == 1
    assert rows["dlq"]["redrive"]["max_receive_count"] == 10
    assert rows["dlq"]["redrive"]["target_arn"].endswith(":orders-operator")
    assert rows["operator"]["redrive"] is None
    assert rows["operator"]["oldest_age_seconds"] is None  # moto's CloudWatch has no datapoint
    assert report["event_source"] is None
    # status receives nothing: the operator queue's messages are untouched
    assert depth(sqs, queues.operator) == (3, 0)


def test_status_table_by_default(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a", "b"])

    result = run_cli(capsys, "status", *queues.options())

    assert result.code == 0, result
    assert "orders-operator" in result.out
    dlq_row = next(line for line in result.out.splitlines() if "orders-dlq" in line)
    assert "-> operator after 10 receives" in dlq_row
    assert "event source: not checked" in result.out


class _CloudWatch:
    """Stands in for CloudWatch with one datapoint per queue."""

    def __init__(self, ages: dict[str, float]) -> None:
        self.ages = ages
        self.requests: list[dict[str, Any]] = []

    def get_metric_data(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        results = []
        for query in request["MetricDataQueries"]:
            name = query["MetricStat"]["Metric"]["Dimensions"][0]["Value"]
            values = [self.ages[name]] if name in self.ages else []
            results.append({"Id": query["Id"], "Values": values})
        return {"MetricDataResults": results}


def test_status_shows_the_age_of_the_oldest_message_where_cloudwatch_reports_it(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cloudwatch = _CloudWatch({"orders-operator": 5400.0})
    _with_cloudwatch(monkeypatch, cloudwatch)

    result = run_cli(capsys, "status", *queues.options(), "--json")

    ages = {q["role"]: q["oldest_age_seconds"] for q in result.json()["queues"]}
    assert ages == {"main": None, "dlq": None, "operator": 5400.0}
    (request,) = cloudwatch.requests
    metric = request["MetricDataQueries"][2]["MetricStat"]["Metric"]
    assert metric["Namespace"] == "AWS/SQS"
    assert metric["MetricName"] == "ApproximateAgeOfOldestMessage"
    table = run_cli(capsys, "status", *queues.options())
    assert "1h 30m" in table.out


def _with_cloudwatch(monkeypatch: pytest.MonkeyPatch, cloudwatch: _CloudWatch) -> None:
    original = cli_deployment.make_client

    def make_client(args: argparse.Namespace, service: str) -> Any:
        return cloudwatch if service == "cloudwatch" else original(args, service)

    monkeypatch.setattr(cli_deployment, "make_client", make_client)


DAY = 86_400


@pytest.mark.parametrize(
    ("retention", "age", "expires_in", "warning", "cell"),
    [
        (14 * DAY, 10 * DAY, 4 * DAY, False, "4d"),
        (14 * DAY, 13 * DAY, DAY, False, "1d"),  # exactly a day left: not yet
        (14 * DAY, 13 * DAY + 1, DAY - 1, True, "23h 59m !"),
        (14 * DAY, 13 * DAY + 3_000, 23 * 3_600 + 600, True, "23h 10m !"),
        (4 * DAY, 5 * DAY, 0, True, "0s !"),  # past due, as far as a late metric tells
    ],
)
def test_status_shows_when_the_oldest_message_expires_and_warns_under_a_day(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    monkeypatch: pytest.MonkeyPatch,
    retention: int,
    age: int,
    expires_in: int,
    warning: bool,
    cell: str,
) -> None:
    sqs.set_queue_attributes(
        QueueUrl=queues.operator, Attributes={"MessageRetentionPeriod": str(retention)}
    )
    _with_cloudwatch(monkeypatch, _CloudWatch({"orders-operator": float(age)}))

    result = run_cli(capsys, "status", *queues.options(), "--json")

    rows = {q["role"]: q for q in result.json()["queues"]}
    assert rows["operator"]["retention_seconds"] == retention
    assert rows["operator"]["expires_in_seconds"] == expires_in
    assert rows["operator"]["expiry_warning"] is warning
    assert rows["main"]["retention_seconds"] == 345_600  # SQS's default, read from the queue
    assert rows["main"]["expires_in_seconds"] is None  # no datapoint: unknown, not "fine"
    assert rows["main"]["expiry_warning"] is False
    warnings = [note for note in result.json()["notes"] if note.startswith("WARNING")]
    assert len(warnings) == int(warning)
    table = run_cli(capsys, "status", *queues.options())
    assert _cells(table.out, "orders-operator")[6] == cell
    assert ("WARNING" in table.out) is warning


def test_status_expires_in_column_sits_between_oldest_and_redrive(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sqs.set_queue_attributes(
        QueueUrl=queues.dlq, Attributes={"MessageRetentionPeriod": str(7 * DAY)}
    )
    _with_cloudwatch(monkeypatch, _CloudWatch({"orders-dlq": 2 * DAY + 5_400.0}))

    result = run_cli(capsys, "status", *queues.options())

    assert result.code == 0, result
    header = _cells(result.out, "in flight")
    assert header[5:8] == ["oldest", "expires in", "redrive"]
    assert _cells(result.out, "orders-dlq")[5:8] == [
        "2d 1h",
        "4d 22h",
        "-> operator after 10 receives",
    ]
    # no datapoint: neither age nor expiry is known
    assert _cells(result.out, "orders-operator")[5:8] == ["-", "-", "-"]
    footnote = " ".join(result.out.split())
    assert "'expires in' is the queue's retention minus that age, '-' when unknown" in footnote
    assert "WARNING" not in result.out


def test_status_warns_once_per_queue_whose_oldest_message_expires_within_a_day(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sqs.set_queue_attributes(
        QueueUrl=queues.operator, Attributes={"MessageRetentionPeriod": str(14 * DAY)}
    )
    ages = {"orders-operator": 14 * DAY - 18_600.0, "orders-dlq": 4 * DAY - 60.0}
    _with_cloudwatch(monkeypatch, _CloudWatch(ages))

    result = run_cli(capsys, "status", *queues.options(), "--json")

    operator_warning = (
        "WARNING: the oldest message in the operator queue orders-operator expires in 5h 10m "
        "(retention 14d): move or export it now: dlq-replay redrive (to the main queue) or "
        "dlq-replay export operator --file PATH (an archive that does not expire)"
    )
    dlq_warning = (
        "WARNING: the oldest message in the dlq queue orders-dlq expires in 1m (retention 4d): "
        "is the replay running (event source above)? else move or export it now: dlq-replay "
        "redrive --from dlq or dlq-replay export dlq --file PATH (an archive that does not expire)"
    )
    report = result.json()
    assert report["notes"] == [dlq_warning, operator_warning]  # in the order of the table
    rows = {q["role"]: q for q in report["queues"]}
    assert rows["operator"]["expires_in_seconds"] == 18_600
    assert rows["dlq"]["expires_in_seconds"] == 60
    assert [rows[role]["expiry_warning"] for role in ("main", "dlq", "operator")] == [
        False,
        True,
        True,
    ]
    table = run_cli(capsys, "status", *queues.options())
    lines = table.out.splitlines()
    assert lines[-2:] == [dlq_warning, operator_warning]  # after the table, one line each


def _cells(table: str, marker: str) -> list[str]:
    """The cells of the table row that contains `marker`, stripped."""
    row = next(line for line in table.splitlines() if marker in line)
    return [cell.strip() for cell in row.strip("│┃ ").replace("┃", "│").split("│")]


def test_status_without_queues_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], aws: None
) -> None:
    result = run_cli(capsys, "status")
    assert_one_line_error(result, 2, "no queues", "--stack")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with emulator() as endpoint_url:
        yield endpoint_url


@pytest.mark.moto_only(reason="moto's own server")
def test_status_against_an_endpoint(capsys: pytest.CaptureFixture[str], server: str) -> None:
    """The server form: an SQS-compatible endpoint named with --endpoint-url."""
    client = emulator_client(server)
    wired = create_queues(client, prefix="status")
    park(client, wired.operator, ["x", "y"])
    options = [
        "--endpoint-url",
        server,
        "--main-queue-url",
        wired.main,
        "--dlq-url",
        wired.dlq,
        "--operator-queue-url",
        wired.operator,
    ]

    result = run_cli(capsys, "status", *options, "--json")

    assert result.code == 0, result
    rows = {q["role"]: q for q in result.json()["queues"]}
    assert rows["operator"]["visible"] == 2
    assert rows["dlq"]["redrive"]["target_arn"].endswith(":status-operator")


@pytest.mark.moto_only(reason="moto's own server")
def test_redrive_against_an_endpoint_without_move_tasks_says_what_to_do(
    capsys: pytest.CaptureFixture[str], server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto's server lacks StartMessageMoveTask: one line that points at --client-side."""
    client = emulator_client(server)
    # No retries of the emulator's HTTP 500, which would only make the test slow.
    once = boto3.Session(
        aws_access_key_id="demo", aws_secret_access_key="demo", region_name="us-east-1"
    ).client("sqs", endpoint_url=server, config=Config(retries={"max_attempts": 1}))
    original = cli_deployment.make_client
    monkeypatch.setattr(
        cli_deployment,
        "make_client",
        lambda args, service: once if service == "sqs" else original(args, service),
    )
    wired = create_queues(client, prefix="native")
    park(client, wired.operator, ["x"])
    options = ["--endpoint-url", server, "--operator-queue-url", wired.operator]

    result = run_cli(capsys, "redrive", *options, "--main-queue-url", wired.main)

    assert_one_line_error(result, 1, "StartMessageMoveTask", "--client-side")
    moved = run_cli(
        capsys,
        "redrive",
        *options,
        "--main-queue-url",
        wired.main,
        "--client-side",
        "--wait-seconds",
        "0",
        "--json",
    )
    assert moved.code == 0, moved
    assert moved.json()["moved"] == 1


@pytest.mark.moto_only(reason="a stack with a Lambda function, deployed into moto")
def test_event_source_state_is_read_from_lambda(aws: None) -> None:
    """Disabled mappings are reported as such (the DLQ is then not being replayed)."""
    from .stack import deploy

    outputs = deploy(boto3.client("cloudformation"), "state")
    lam = boto3.client("lambda")
    function = outputs["ReplayFunctionName"]
    dlq_arn = outputs["DeadLetterQueueArn"]
    (mapping,) = lam.list_event_source_mappings(FunctionName=function)["EventSourceMappings"]
    assert event_source_status(lam, function, dlq_arn).enabled

    lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)

    state = event_source_status(lam, function, dlq_arn)
    assert state.found
    assert not state.enabled
    assert not event_source_status(lam, function, dlq_arn + "-other").found
