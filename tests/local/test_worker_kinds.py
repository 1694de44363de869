"""The worker's names of the serverless kinds' settings: `--kind` (DLQ_KIND) and `--target-arn`
(REPLAY_TARGET_ARNS, repeated or a comma list), checked by the parser like every setting."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING

import pytest
from dlq_replay.cli.main import build_parser, main
from dlq_replay.cli.options import make_deliverer
from dlq_replay.cli.parsing import setting_overrides
from dlq_replay.core.kinds import RecordKind
from dlq_replay.local.worker_loop import WorkerOptions, delivers, run_worker, settings_from
from dlq_replay.ops.receiving import drain
from dlq_replay.sqs.depth import queue_depth
from emulation import eventually
from operator_cli.records import EVENT, send_eventbridge
from operator_cli.support import queue_arn

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

PREFIX = "dlq-replay: error: "
BASE = [
    "worker",
    "--dlq-url",
    "http://127.0.0.1:9/123456789012/dlq",
    "--operator-queue-url",
    "http://127.0.0.1:9/123456789012/operator",
    "--endpoint-url",
    "http://127.0.0.1:9",
]
QUEUE = "arn:aws:sqs:us-east-1:123456789012:target"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:orders"
BUS = "arn:aws:events:us-east-1:123456789012:event-bus/orders"
FORGED = "arn:aws:sqs:us-east-1:123456789012:someone-elses-queue"


def exit_code(argv: list[str]) -> int:
    """`dlq-replay ARGV`'s exit code; the parser's refusal and --help exit from argparse."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def worker_settings(*options: str) -> tuple[str | None, str | None]:
    args = build_parser(["worker"]).parse_args([*BASE, *options])
    overrides = setting_overrides(args)
    return overrides["DLQ_KIND"], overrides["REPLAY_TARGET_ARNS"]


def test_kind_and_targets_repeated_or_as_a_comma_list() -> None:
    assert worker_settings("--kind", "eventbridge", "--target-arn", QUEUE) == (
        "eventbridge",
        QUEUE,
    )
    repeated = worker_settings("--target-arn", QUEUE, "--target-arn", f"{FUNCTION},{BUS}")
    assert repeated == (None, f"{QUEUE},{FUNCTION},{BUS}")
    # The table's own names stay, and join the same way.
    assert worker_settings("--dlq-kind", "any", "--replay-target-arns", QUEUE) == ("any", QUEUE)


def test_the_options_become_the_settings() -> None:
    kind, targets = worker_settings(
        "--kind", "lambda", "--target-arn", FUNCTION, "--target-arn", QUEUE
    )
    settings = settings_from(
        {"OPERATOR_QUEUE_URL": "http://127.0.0.1:9/123456789012/operator"},
        {"DLQ_KIND": kind, "REPLAY_TARGET_ARNS": targets},
    )
    assert settings.accepted_kinds == {RecordKind.LAMBDA, RecordKind.LAMBDA_DESTINATION}
    assert settings.replay_target_arns == {FUNCTION, QUEUE}


@pytest.mark.parametrize(
    ("args", "start"),
    [
        pytest.param(["--kind", "kinesis"], "argument --kind: 'kinesis' ", id="kind"),
        pytest.param(
            ["--target-arn", "orders"],
            "argument --target-arn: 'orders' ",
            id="not-an-arn",
        ),
        pytest.param(
            [
                "--target-arn",
                QUEUE,
                "--target-arn",
                "arn:aws:kinesis:us-east-1:123456789012:stream/s",
            ],
            "argument --target-arn: 'arn:aws:kinesis:",
            id="unsupported-service",
        ),
        pytest.param(["--kind"], "argument --kind: expected one argument", id="empty"),
        pytest.param(["--dlq-kind", "kinesis"], "argument --dlq-kind: 'kinesis' ", id="table-name"),
        pytest.param(
            ["--target-arn", QUEUE],
            "--target-arn names the targets of records of serverless kinds, but the kind is sqs",
            id="targets-of-the-sqs-kind",
        ),
        pytest.param(
            ["--kind", "sqs", "--replay-target-arns", QUEUE],
            "--target-arn names the targets of records of serverless kinds, but the kind is sqs",
            id="targets-of-the-sqs-kind-by-the-table-name",
        ),
    ],
)
def test_a_bad_kind_or_target_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], start: str
) -> None:
    assert exit_code([*BASE, *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{PREFIX}{start}"), lines[0]
    assert lines[0].endswith("(see: dlq-replay worker --help)")


def test_the_help_shows_one_name_and_the_kinds_once(capsys: pytest.CaptureFixture[str]) -> None:
    """The table's names still work (above), unlisted: one name an option in --help."""
    assert exit_code(["worker", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "--kind VALUE" in shown
    assert "--target-arn ARN" in shown
    assert "--dlq-kind" not in shown
    assert "--replay-target-arns" not in shown
    assert "repeatable" in shown
    kind_help = shown[shown.rindex("--kind VALUE") : shown.rindex("--target-arn ARN")]
    assert kind_help.count("eventbridge") == 2  # the list of choices, and what it means
    assert "one of: sqs, lambda, eventbridge, any" in kind_help


def test_targets_with_the_kind_from_the_environment_are_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kind the options are judged with is the one the worker runs with: DLQ_KIND too."""
    monkeypatch.setenv("DLQ_KIND", "lambda")
    monkeypatch.setenv("MAIN_QUEUE_URL", "http://127.0.0.1:9/123456789012/main")
    # Past the parser: the worker starts and gives up on the unreachable endpoint at once.
    assert exit_code([*BASE, "--target-arn", FUNCTION, "--start-up-patience", "0"]) == 1


def test_the_worker_delivers_eventbridge_records_to_their_target_without_a_main_queue(
    setup_client: SQSClient,
) -> None:
    """`--kind eventbridge --target-arn QUEUE`: each record goes to its rule's target queue (the
    clients `make_deliverer` builds from the worker's options), a forged target is parked, and
    no main queue is asked for."""
    sqs = setup_client
    dlq = sqs.create_queue(QueueName="rule-target-dlq")["QueueUrl"]
    operator = sqs.create_queue(QueueName="orders-operator")["QueueUrl"]
    target = sqs.create_queue(QueueName="orders-target")["QueueUrl"]
    target_arn = queue_arn(sqs, target)
    bodies = [json.dumps({**EVENT, "detail": {"order": n}}) for n in range(3)]
    for body in bodies:
        send_eventbridge(sqs, dlq, target_arn, body)
    send_eventbridge(sqs, dlq, FORGED)
    options = [
        "worker",
        "--dlq-url",
        dlq,
        "--operator-queue-url",
        operator,
        "--kind",
        "eventbridge",
        "--target-arn",
        target_arn,
        "--no-breaker",
        # A ceiling of 1 s draws a delay of 0: every record is delivered at once.
        "--backoff-base-seconds",
        "1",
        "--backoff-cap-seconds",
        "1",
    ]
    args = build_parser(["worker"]).parse_args(options)
    settings = settings_from({}, setting_overrides(args))
    assert delivers(settings)
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker,
        args=(sqs, settings, WorkerOptions(dlq_url=dlq, wait_seconds=0)),
        kwargs={"stop": stop, "deliverer": make_deliverer(args)},
    )
    got: list[str] = []

    def all_delivered() -> bool:
        got.extend(m["Body"] for m in drain(sqs, target))
        return len(got) >= len(bodies)

    worker.start()
    try:
        eventually(all_delivered, "the events delivered to the target queue", after=0.2)
        parked = eventually(lambda: drain(sqs, operator), "the forged record parked", after=0)
    finally:
        stop.set()
        worker.join(timeout=30)
    assert sorted(got) == sorted(bodies)
    assert len(parked) == 1
    assert parked[0]["MessageAttributes"]["dlq-replay-park-reason"]["StringValue"] == (
        "target-not-allowed"
    )
    assert queue_depth(sqs, dlq).total == 0
