"""`functions/replay/app.py` as Lambda runs it: settings from the environment, logs on stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from dlq_replay.aws_lambda.replay import MalformedEventError
from dlq_replay.core.settings import SettingsError
from emulation import eventually

from integration.harness import (
    AppHandle,
    Outgoing,
    ReplayQueues,
    Sqs,
    drain_within,
    number,
    string,
)

pytestmark = pytest.mark.emulator


HAND_MADE = Path(__file__).resolve().parents[2] / "events" / "hand-made"
SECRET_BODY = "card=4111-1111-1111-1111 secret-7f3a"


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, queues: ReplayQueues) -> pytest.MonkeyPatch:
    monkeypatch.setenv("MAIN_QUEUE_URL", queues.main.url)
    monkeypatch.setenv("OPERATOR_QUEUE_URL", queues.operator.url)
    return monkeypatch


def log_lines(out: str) -> list[dict[str, Any]]:
    """The JSON lines Powertools wrote (EMF metric blobs included)."""
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_init_makes_the_sqs_client_and_the_first_event_reads_the_settings(
    app: AppHandle, app_env: pytest.MonkeyPatch, sqs: Sqs, queues: ReplayQueues
) -> None:
    """The client is made once per execution environment, at init (before the first event's
    clock starts, and inside a SnapStart snapshot); the settings still wait for an event."""
    module = app.reimport()

    assert module._sqs.cache_info().currsize == 1
    assert module._replay.cache_info().currsize == 0
    made_at_init = module._sqs()

    response = app.handler(sqs.dead_letter_event(queues, [Outgoing("hello")]))

    assert response == {"batchItemFailures": []}
    assert module._sqs() is made_at_init
    assert module._sqs.cache_info().misses == 1  # never made again
    assert module._replay.cache_info().currsize == 1


@pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
def test_bad_setting_fails_the_invocation_naming_the_variable(
    app: AppHandle,
    app_env: pytest.MonkeyPatch,
    sqs: Sqs,
    queues: ReplayQueues,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app_env.setattr(app.logger.registered_handler, "stream", sys.stdout)
    app_env.setenv("MAX_ATTEMPTS", "0")
    event = sqs.dead_letter_event(queues, [Outgoing("waits for a fix")])

    with pytest.raises(SettingsError, match=r"^MAX_ATTEMPTS='0' is invalid: .*1 to 100") as error:
        app.handler(event)

    assert error.value.variable == "MAX_ATTEMPTS"
    errors = [line for line in log_lines(capsys.readouterr().out) if line.get("level") == "ERROR"]
    assert [(line["message"], line["variable"]) for line in errors] == [
        ("MAX_ATTEMPTS='0' is invalid: must be an integer from 1 to 100", "MAX_ATTEMPTS")
    ]
    assert sqs.total(queues.main) == 0

    # A failed start is not cached: once the value is fixed, the same event goes through.
    app_env.setenv("MAX_ATTEMPTS", "3")
    assert app.handler(event) == {"batchItemFailures": []}
    assert sqs.total(queues.main) == 1  # delayed by the default full jitter over [0, 60] s


@pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
def test_an_event_without_message_ids_fails_with_one_log_line(
    app: AppHandle, app_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app_env.setattr(app.logger.registered_handler, "stream", sys.stdout)

    with pytest.raises(MalformedEventError):
        app.handler({"Records": [{"body": "no messageId"}]})

    errors = [line for line in log_lines(capsys.readouterr().out) if line.get("level") == "ERROR"]
    assert [line["message"] for line in errors] == ["not an SQS event: record 0 has no messageId"]


@pytest.mark.parametrize("log_body", [False, True])
def test_message_body_reaches_the_logs_only_when_allowed(
    app: AppHandle,
    app_env: pytest.MonkeyPatch,
    sqs: Sqs,
    queues: ReplayQueues,
    capsys: pytest.CaptureFixture[str],
    log_body: bool,
) -> None:
    # Powertools bound its handler to the stdout of import time; point it at capsys's.
    app_env.setattr(app.logger.registered_handler, "stream", sys.stdout)
    app_env.setenv("LOG_MESSAGE_BODY", str(log_body).lower())
    event = sqs.dead_letter_event(
        queues,
        [Outgoing(SECRET_BODY, {"note": string("attribute values are not logged either")})],
    )
    (message_id,) = [r["messageId"] for r in event["Records"]]

    assert app.handler(event) == {"batchItemFailures": []}

    out = capsys.readouterr().out
    # A routine record is reported on its batch's line (its own line is at DEBUG).
    (line,) = [entry for entry in log_lines(out) if entry.get("message") == "batch outcomes"]
    assert not [entry for entry in log_lines(out) if entry.get("message_id") == message_id]
    assert line["level"] == "INFO"
    assert line["counts"] == {"replay": 1}
    assert line["destination"] == queues.main.url
    assert line["function_name"] == "sqs-dlq-replay"  # the Lambda context was injected
    (record,) = line["records"]
    assert (record["message_id"], record["action"], record["attempt"]) == (message_id, "replay", 1)
    assert "attribute values are not logged either" not in out
    if log_body:
        assert record["body"] == SECRET_BODY
    else:
        assert "body" not in record
        assert "4111" not in out
        assert "secret-7f3a" not in out


def test_metrics_carry_the_function_name_the_alarms_select(
    app: AppHandle,
    app_env: pytest.MonkeyPatch,
    sqs: Sqs,
    queues: ReplayQueues,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app_env.setattr(app.logger.registered_handler, "stream", sys.stdout)
    event = sqs.dead_letter_event(queues, [Outgoing("order 1", {})])

    assert app.handler(event) == {"batchItemFailures": []}

    blobs = [line for line in log_lines(capsys.readouterr().out) if "_aws" in line]
    replayed = [blob for blob in blobs if "Replayed" in blob]
    assert len(replayed) == 1
    (directive,) = replayed[0]["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "SqsDlqReplay"
    assert sorted(directive["Dimensions"][0]) == ["FunctionName", "service"]
    assert replayed[0]["FunctionName"] == "sqs-dlq-replay"  # the Lambda context's name
    assert replayed[0]["service"] == "sqs-dlq-replay"


@pytest.mark.parametrize("log_body", [False, True], ids=["body-not-logged", "body-logged"])
def test_records_whose_text_cannot_be_encoded_fail_alone_with_one_line_each(
    app: AppHandle,
    app_env: pytest.MonkeyPatch,
    sqs: Sqs,
    queues: ReplayQueues,
    capsys: pytest.CaptureFixture[str],
    log_body: bool,
) -> None:
    """A hand-made event (events/hand-made/) whose records hold lone surrogates, in the body
    and in an attribute value: no copy of them can be encoded, so each fails alone with one
    log line naming it and why; the healthy record is replayed."""
    app_env.setattr(app.logger.registered_handler, "stream", sys.stdout)
    app_env.setenv("LOG_MESSAGE_BODY", str(log_body).lower())
    app_env.setenv("BACKOFF_BASE_SECONDS", "1")
    app_env.setenv("JITTER", "none")
    event = json.loads((HAND_MADE / "dlq-lone-surrogates.json").read_text(encoding="utf-8"))
    in_body, in_attribute, healthy = event["Records"]

    response = app.handler(event)

    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": in_body["messageId"]},
            {"itemIdentifier": in_attribute["messageId"]},
        ]
    }
    (replayed,) = eventually(lambda: sqs.drain(queues.main), "the replayed copy", after=1)
    assert replayed["Body"] == healthy["body"]
    assert sqs.total(queues.operator) == 0
    errors = [line for line in log_lines(capsys.readouterr().out) if line.get("level") == "ERROR"]
    assert [(line["message"], line["message_id"]) for line in errors] == [
        ("record not done", in_body["messageId"]),
        ("record not done", in_attribute["messageId"]),
    ]
    assert errors[0]["problem"].startswith("the body holds a lone surrogate (U+DCE9")
    assert errors[1]["problem"].startswith(
        "the value of message attribute 2 (customer) holds a lone surrogate (U+D800"
    )
    if log_body:
        assert errors[0]["body"] == '{"orderId": "o-2001", "note": "caf\\udce9"}'


LOOK_ALIKES = [
    # An application's own attributes that happen to bear the services' names.
    Outgoing("order 1", {"RequestID": string("req-1"), "ErrorCode": number(500)}),
    Outgoing(
        "order 2",
        {"RULE_ARN": string("arn:aws:events:us-east-1:1:rule/r")}
        | {"TARGET_ARN": string("arn:aws:lambda:us-east-1:1:function:f")},
    ),
    # A body an application consumed that is shaped like a Lambda destination record.
    Outgoing(
        json.dumps(
            {
                "requestContext": {
                    "functionArn": "arn:aws:lambda:us-east-1:1:function:f",
                    "requestId": "r",
                },
                "requestPayload": {"order": 3},
            }
        )
    ),
    # JSON nested past any parser's depth (about 20 KB).
    Outgoing('{"a":' * 5000 + "1" + "}" * 5000),
    *(Outgoing(f"plain {index}") for index in range(6)),
]


def test_default_mode_replays_look_alikes_and_a_hostile_body_to_the_main_queue(
    app: AppHandle, app_env: pytest.MonkeyPatch, sqs: Sqs, queues: ReplayQueues
) -> None:
    """DLQ_KIND unset (sqs): no recognition. Every one of the ten records is replayed to the
    main queue, the deep one included; the batch fails for none of them."""
    app_env.delenv("DLQ_KIND", raising=False)
    app_env.setenv("BACKOFF_BASE_SECONDS", "1")
    event = sqs.dead_letter_event(queues, LOOK_ALIKES)
    assert len(event["Records"]) == 10

    assert app.handler(event) == {"batchItemFailures": []}
    assert sqs.total(queues.main) == 10
    assert sqs.total(queues.operator) == 0


@pytest.mark.parametrize("mode", ["lambda", "eventbridge"])
def test_a_serverless_mode_parks_a_plain_record_unexpected_kind(
    app: AppHandle, app_env: pytest.MonkeyPatch, sqs: Sqs, queues: ReplayQueues, mode: str
) -> None:
    app_env.setenv("DLQ_KIND", mode)
    app_env.setenv("REPLAY_TARGET_ARNS", "arn:aws:lambda:us-east-1:123456789012:function:f")
    # Read only for a Lambda record that comes back; a plain one never reaches it.
    app_env.setenv("INVOCATION_LEDGER_TABLE", "never-read")
    event = sqs.dead_letter_event(queues, [Outgoing("a plain SQS dead letter")])

    assert app.handler(event) == {"batchItemFailures": []}
    (parked,) = drain_within(sqs.client, queues.operator.url, batches=5)
    assert parked["MessageAttributes"]["dlq-replay-park-reason"]["StringValue"] == (
        "unexpected-kind"
    )
    assert sqs.total(queues.main) == 0
