"""`dlq-replay redrive` with SQS's own message move task, against a botocore Stubber (moto has
no StartMessageMoveTask): the exact requests, `--wait` following ListMessageMoveTasks."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.stub import StubAssertionError, Stubber
from dlq_replay.cli import deployment as cli_deployment

from .support import ACCOUNT, REGION, assert_one_line_error, run_cli

if TYPE_CHECKING:
    import argparse

    from mypy_boto3_sqs import SQSClient

BASE = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}"
MAIN, DLQ, OPERATOR = f"{BASE}/orders", f"{BASE}/orders-dlq", f"{BASE}/orders-operator"
ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}"
MAIN_ARN, DLQ_ARN, OPERATOR_ARN = f"{ARN}:orders", f"{ARN}:orders-dlq", f"{ARN}:orders-operator"
QUEUES = ["--main-queue-url", MAIN, "--dlq-url", DLQ, "--operator-queue-url", OPERATOR]
INFO_NAMES = [
    "QueueArn",
    "FifoQueue",
    "VisibilityTimeout",
    "RedrivePolicy",
    "MessageRetentionPeriod",
    "DelaySeconds",
]
COUNTERS = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


class AnyOrderStubber(Stubber):
    """A Stubber for calls made at once from several threads (the pre-flight reads): each call
    takes the first queued response whose operation and parameters match it, so responses to
    the same request still go out in the order they were added."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self._lock = threading.Lock()
        self._taken = threading.local()

    def _assert_expected_params(self, model: Any, params: Any, context: Any, **kwargs: Any) -> None:
        queue: deque[dict[str, Any]] = vars(self)["_queue"]  # Stubber's, in order added
        with self._lock:
            for entry in queue:
                expected = entry["expected_params"]
                if entry["operation_name"] == model.name and expected in (None, params):
                    queue.remove(entry)
                    self._taken.entry = entry
                    return
        raise StubAssertionError(
            operation_name=model.name, reason=f"no response queued for {params!r}"
        )

    def _get_response_handler(self, model: Any, params: Any, context: Any, **kwargs: Any) -> Any:
        return self._taken.entry["response"]


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """The command's SQS client, stubbed; every other client would be a test failure."""
    client: SQSClient = boto3.client("sqs", region_name=REGION)

    def make_client(args: argparse.Namespace, service: str) -> Any:
        if service != "sqs":
            raise AssertionError(f"unexpected {service} client")
        return client

    monkeypatch.setattr(cli_deployment, "make_client", make_client)
    with AnyOrderStubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def expect_queues(stub: Stubber, *, destination: tuple[str, str] | None = (MAIN, MAIN_ARN)) -> None:
    """What every native redrive asks first, all at once: the source, the destination, is it a
    DLQ, and the source's counters."""
    redrive = json.dumps({"deadLetterTargetArn": OPERATOR_ARN, "maxReceiveCount": 50})
    stub.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": OPERATOR_ARN, "VisibilityTimeout": "30"}},
        {"QueueUrl": OPERATOR, "AttributeNames": INFO_NAMES},
    )
    if destination is not None:
        url, arn = destination
        stub.add_response(
            "get_queue_attributes",
            {"Attributes": {"QueueArn": arn, "RedrivePolicy": redrive}},
            {"QueueUrl": url, "AttributeNames": INFO_NAMES},
        )
    stub.add_response(
        "list_dead_letter_source_queues", {"queueUrls": [DLQ]}, {"QueueUrl": OPERATOR}
    )
    stub.add_response(
        "get_queue_attributes",
        {"Attributes": dict.fromkeys(COUNTERS, "0") | {"ApproximateNumberOfMessages": "7"}},
        {"QueueUrl": OPERATOR, "AttributeNames": COUNTERS},
    )


def expect_progress(stub: Stubber, status: str, moved: int, **extra: Any) -> None:
    entry = {
        "Status": status,
        "SourceArn": OPERATOR_ARN,
        "DestinationArn": MAIN_ARN,
        "ApproximateNumberOfMessagesMoved": moved,
        "ApproximateNumberOfMessagesToMove": 7,
        **extra,
    }
    stub.add_response(
        "list_message_move_tasks",
        {"Results": [entry]},
        {"SourceArn": OPERATOR_ARN, "MaxResults": 1},
    )


def test_native_move_with_wait(capsys: pytest.CaptureFixture[str], stub: Stubber) -> None:
    expect_queues(stub)
    stub.add_response(
        "start_message_move_task",
        {"TaskHandle": "handle-1"},
        {"SourceArn": OPERATOR_ARN, "DestinationArn": MAIN_ARN, "MaxNumberOfMessagesPerSecond": 50},
    )
    expect_progress(stub, "RUNNING", 3, TaskHandle="handle-1")
    expect_progress(stub, "COMPLETED", 7)

    result = run_cli(
        capsys, "redrive", *QUEUES, "--rate", "50", "--wait", "--poll-seconds", "0.01", "--json"
    )

    assert result.code == 0, result
    report = result.json()
    assert (report["mode"], report["task_handle"]) == ("native", "handle-1")
    assert (report["status"], report["moved"]) == ("COMPLETED", 7)


def test_native_move_back_to_the_source_queues_without_waiting(
    capsys: pytest.CaptureFixture[str], stub: Stubber
) -> None:
    """`--to source`: no DestinationArn, SQS sends each message back where it came from."""
    expect_queues(stub, destination=None)
    stub.add_response(
        "start_message_move_task", {"TaskHandle": "handle-2"}, {"SourceArn": OPERATOR_ARN}
    )

    result = run_cli(capsys, "redrive", *QUEUES, "--to", "source")

    assert result.code == 0, result
    assert "handle-2" in result.out
    assert "native move" in result.err


def test_a_failed_move_task_exits_1(capsys: pytest.CaptureFixture[str], stub: Stubber) -> None:
    expect_queues(stub)
    stub.add_response(
        "start_message_move_task",
        {"TaskHandle": "handle-3"},
        {"SourceArn": OPERATOR_ARN, "DestinationArn": MAIN_ARN},
    )
    expect_progress(stub, "FAILED", 2, FailureReason="AWS.SimpleQueueService.NonExistentQueue")

    result = run_cli(capsys, "redrive", *QUEUES, "--wait", "--poll-seconds", "0.01")

    assert result.code == 1
    assert "FAILED" in result.out
    assert "NonExistentQueue" in result.out


def test_a_refused_move_task_is_one_line(capsys: pytest.CaptureFixture[str], stub: Stubber) -> None:
    expect_queues(stub)
    stub.add_client_error(
        "start_message_move_task",
        service_error_code="AccessDenied",
        service_message="not authorized to perform: sqs:StartMessageMoveTask",
        http_status_code=403,
        expected_params={"SourceArn": OPERATOR_ARN, "DestinationArn": MAIN_ARN},
    )

    result = run_cli(capsys, "redrive", *QUEUES)

    assert_one_line_error(result, 1, "access denied (StartMessageMoveTask)")
