"""`dlq-replay demo --kind eventbridge`: a bus, a rule and its target queue on the demo's
emulator, the DLQ records EventBridge would write staged in its documented shape, and the
target's DLQ replayed until every event is delivered or parked, none lost."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.cli.main import main
from dlq_replay.core.kinds import RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.demo.emulator import emulator_client, emulator_session, sqs_emulator
from dlq_replay.demo.eventbridge_run import (
    EventBridgeResult,
    Fate,
    create_wiring,
    eventbridge_demo,
    plan_events,
    publish,
    summary,
)
from dlq_replay.demo.scenario import DemoOptions
from dlq_replay.engine.kinds import recognise
from unit._support import EVENT_FIELDS, EVENTBRIDGE_DLQ_ATTRIBUTES

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def receive_all(sqs: SQSClient, url: str) -> list[Any]:
    messages: list[Any] = []
    while batch := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", []):
        messages += batch
    return messages


@pytest.mark.usefixtures("fresh_backends")
def test_staged_records_are_eventbridges_and_the_bus_delivers_the_rest() -> None:
    plan = {
        "e1": Fate.DELIVERED,
        "e2": Fate.FAILED,
        "e3": Fate.RETIRED,
        "e4": Fate.FORGED,
        "e5": Fate.DELIVERED,
    }
    with sqs_emulator() as running:
        sqs = emulator_client(running.endpoint_url)
        events = emulator_session().client("events", endpoint_url=running.endpoint_url)
        wiring = create_wiring(sqs, events)

        staged = publish(sqs, events, wiring, plan)

        delivered = receive_all(sqs, wiring.target_url)
        records = receive_all(sqs, wiring.dlq_url)
    assert staged == 3
    # moto's EventBridge routed the delivered events through the rule to the target queue.
    assert sorted(json.loads(m["Body"])["detail"]["id"] for m in delivered) == ["e1", "e5"]
    by_id = {json.loads(m["Body"])["detail"]["id"]: m for m in records}
    assert sorted(by_id) == ["e2", "e3", "e4"]
    for message in records:
        # A staged body is the event as a target receives it (moto's EventBridge leaves out
        # `account`, which AWS's events carry).
        assert set(json.loads(message["Body"])) == EVENT_FIELDS
        assert set(message["MessageAttributes"]) == EVENTBRIDGE_DLQ_ATTRIBUTES
    assert set(json.loads(delivered[0]["Body"])) <= EVENT_FIELDS
    targets = {
        id_: message["MessageAttributes"]["TARGET_ARN"]["StringValue"]
        for id_, message in by_id.items()
    }
    assert targets == {
        "e2": wiring.target_arn,
        "e3": wiring.retired_arn,
        "e4": wiring.outside_arn,
    }
    assert wiring.target_arn in wiring.replay_targets
    assert wiring.outside_arn not in wiring.replay_targets
    # The replay recognises each as an eventbridge record of the demo's rule.
    for message in records:
        inbound = InboundMessage.from_boto3(message)
        recognised = recognise(inbound, wiring.replay_targets)
        assert recognised.kind is RecordKind.EVENTBRIDGE
        assert recognised.rule_arn == wiring.rule_arn
        assert recognised.payload == message["Body"]


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_backends")
def test_the_eventbridge_demo_delivers_or_parks_every_event_none_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The replay's target clients go to the emulator even where the user's environment names
    # another endpoint.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:9")
    options = DemoOptions(
        messages=40,
        seed=3,
        failure_rate=0.4,
        poison_rate=0.1,
        invalid_rate=0.1,
        cap_seconds=2,
        live=False,
        timeout_seconds=90,
    )
    fates = Counter(plan_events(options, random.Random(options.seed)).values())
    assert all(fates[fate] > 0 for fate in (Fate.FAILED, Fate.RETIRED, Fate.FORGED)), fates

    result = eventbridge_demo(options)

    assert result.completed, result
    assert (result.sent, result.lost, result.not_yet_done) == (40, 0, 0), result
    assert result.delivered + result.parked == result.sent
    # Every failed delivery was delivered by the replay; the retired target's records were
    # parked at their first refusal (the rule no longer has it), the forged ones without a call.
    assert result.by_eventbridge == fates[Fate.DELIVERED]
    assert result.delivered == fates[Fate.DELIVERED] + fates[Fate.FAILED]
    assert result.staged == result.sent - fates[Fate.DELIVERED]
    assert result.parked_by_reason == {
        "target-not-in-rule": fates[Fate.RETIRED],
        "target-not-allowed": fates[Fate.FORGED],
    }


def test_the_summary_accounts_like_the_sqs_demos() -> None:
    result = EventBridgeResult(
        sent=100,
        delivered=93,
        by_eventbridge=60,
        parked=7,
        not_yet_done=0,
        lost=0,
        parked_by_reason={"target-not-allowed": 2, "max-attempts": 5},
        staged=40,
        seconds=9.5,
        completed=True,
    )

    assert summary(result).splitlines() == [
        "eventbridge demo complete in 9.5 s: sent 100, delivered 93, parked 7 "
        "(max-attempts=5, target-not-allowed=2), not yet done 0, lost 0",
        "delivered by EventBridge 60, by the replay 33; the demo staged 40 DLQ records "
        "(moto writes none)",
    ]


@pytest.mark.parametrize("option", ["--consumer-backoff", "--no-breaker", "--outage-seconds=5"])
def test_options_of_the_sqs_demo_are_refused_with_eventbridge_in_one_line(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--kind", "eventbridge", option])

    captured = capsys.readouterr()
    assert code == 2
    (line,) = captured.err.splitlines()
    name = option.split("=", maxsplit=1)[0]
    assert line.startswith(f"dlq-replay: error: {name} is for the sqs demo")


def test_an_unknown_kind_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--kind", "lambda"])
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("dlq-replay: error: argument --kind: invalid choice: 'lambda'")
