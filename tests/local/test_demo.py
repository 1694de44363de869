"""`make demo` in CI's short mode: every message ends processed or parked, none lost."""

from __future__ import annotations

import json
import random
import re
import sys
import threading
from typing import TYPE_CHECKING, Any, cast

import pytest
from dlq_replay.cli.main import main
from dlq_replay.core.decision import Action, Decision, ParkReason
from dlq_replay.core.messages import InboundMessage
from dlq_replay.demo.emulator import emulator_client, sqs_emulator
from dlq_replay.demo.run import demo
from dlq_replay.demo.scenario import (
    DemoOptions,
    DemoResult,
    Tally,
    send_messages,
    settle_timeout,
)
from dlq_replay.demo.view import outcome_rows
from dlq_replay.engine.report import Outcome
from dlq_replay.sqs.sending import SendFailure

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class Outbox:
    """Takes the demo's SendMessageBatch calls without a queue: what the demo will send."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:  # noqa: N803
        assert len(Entries) <= 10
        self.bodies.extend(json.loads(entry["MessageBody"]) for entry in Entries)
        return {"Successful": [], "Failed": []}


def planned_kinds(options: DemoOptions) -> dict[str, int]:
    """How many messages of each kind the demo sends with these options (its seeded draw)."""
    outbox = Outbox()
    send_messages(cast("SQSClient", outbox), "outbox", options, random.Random(options.seed))
    kinds: dict[str, int] = {}
    for body in outbox.bodies:
        kinds[body["kind"]] = kinds.get(body["kind"], 0) + 1
    return kinds


def assert_adds_up(result: DemoResult) -> None:
    """Every sent message is in exactly one of the summary's four counts."""
    assert result.processed + result.parked + result.not_yet_done + result.lost == result.sent
    assert sum(result.parked_by_reason.values()) == result.parked


@pytest.mark.usefixtures("fresh_backends")
def test_short_demo_accounts_for_every_message() -> None:
    options = DemoOptions(messages=40, seed=7, poison_rate=0.1, live=False, timeout_seconds=60)
    kinds = planned_kinds(options)
    assert kinds.get("poison", 0) > 0, kinds
    assert kinds.get("transient", 0) > 0, kinds

    result = demo(options)

    assert result.completed, result
    assert (result.sent, result.lost, result.not_yet_done) == (40, 0, 0), result
    assert_adds_up(result)
    # Exactly the always-failing messages are parked, all for the attempt limit.
    assert result.parked == kinds["poison"] + kinds.get("invalid", 0)
    assert result.parked_by_reason == {
        "max-attempts": kinds["poison"],
        **({"consumer:invalid-order": kinds["invalid"]} if "invalid" in kinds else {}),
    }
    # The consumer saw every message once first, and every replayed copy once; the poison
    # ones reached the attempt limit. (moto's server alone loses first deliveries to
    # concurrent receives answered with HTTP 500; the demo's emulator makes requests atomic.)
    deliveries = result.deliveries_by_attempt
    assert deliveries[0] == result.sent, deliveries
    assert sum(count for attempt, count in deliveries.items() if attempt > 0) == result.replays
    assert max(deliveries) == options.max_attempts
    assert deliveries[options.max_attempts] == kinds["poison"]


@pytest.mark.usefixtures("fresh_backends")
def test_with_consumer_backoff_only_poison_reaches_the_dlq_and_invalid_is_parked_at_once() -> None:
    options = DemoOptions(
        messages=30,
        seed=11,
        poison_rate=0.1,
        invalid_rate=0.1,
        cap_seconds=2,
        consumer_backoff=True,
        live=False,
        timeout_seconds=120,
    )
    kinds = planned_kinds(options)
    assert all(kinds.get(kind, 0) > 0 for kind in ("poison", "invalid", "transient")), kinds

    result = demo(options)

    assert result.completed, result
    assert (result.lost, result.not_yet_done) == (0, 0), result
    assert_adds_up(result)
    assert result.parked_by_reason == {
        "max-attempts": kinds["poison"],
        "consumer:invalid-order": kinds["invalid"],
    }
    # Transient failures were retried in the main queue; only the poison ones went on to the
    # DLQ, to be replayed up to the limit.
    assert result.replays == kinds["poison"] * options.max_attempts
    assert result.consumer_backoffs >= kinds["transient"]
    assert result.deliveries_by_attempt[0] == result.sent


@pytest.mark.usefixtures("fresh_backends")
@pytest.mark.parametrize(
    ("seed", "failure_rate", "poison_rate"),
    [
        (3, DemoOptions().failure_rate, DemoOptions().poison_rate),  # docs/consumer.md: 22 poison
        (7, 0.0, 0.1),  # no transient failures: the good messages are all done first
    ],
)
def test_with_consumer_backoff_the_poison_alone_in_the_dlq_never_opens_the_breaker(
    seed: int, failure_rate: float, poison_rate: float
) -> None:
    """Behind the consumer's backoff the poison reaches the DLQ alone, after the messages sent
    with it were deleted, and its first replays all come back: bad messages, not an outage.
    (Before the breaker looked for the consumer's deletions from before the first replays, the
    second case opened it within 10 s, and again at every probe, until the time limit.)"""
    options = DemoOptions(
        seed=seed,
        failure_rate=failure_rate,
        poison_rate=poison_rate,
        consumer_backoff=True,
        live=False,
        timeout_seconds=120,
    )
    kinds = planned_kinds(options)
    assert kinds["poison"] >= 20, kinds  # enough returns for the rule to trip

    result = demo(options)

    assert result.completed, result
    assert (result.breaker_openings, result.lost, result.not_yet_done) == (0, 0, 0), result
    assert result.parked_by_reason["max-attempts"] == kinds["poison"]
    assert result.processed == kinds.get("ok", 0) + kinds.get("transient", 0)


SUMMARY = re.compile(
    r"sent (?P<sent>\d+), processed (?P<processed>\d+), parked (?P<parked>\d+) \(.*\), "
    r"not yet done (?P<not_yet_done>\d+), lost (?P<lost>\d+)"
)


@pytest.mark.usefixtures("fresh_backends")
def test_a_timeout_reports_unfinished_messages_as_not_yet_done_never_lost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A fifth always fails: with a 4 s cap their last replays come well after 1 s.
    argv = ["demo", "--plain", "--messages", "60", "--seed", "5", "--poison-rate", "0.2"]

    code = main([*argv, "--backoff-cap-seconds", "4", "--timeout", "1"])

    out = capsys.readouterr().out
    assert code == 1, out
    assert "demo timed out (limit 1 s)" in out
    match = SUMMARY.search(out)
    assert match, out
    counts = {name: int(value) for name, value in match.groupdict().items()}
    assert counts["not_yet_done"] > 0, out
    assert counts["lost"] == 0, out
    assert sum(counts.values()) - counts["sent"] == counts["sent"], out


def test_the_default_timeout_grows_with_the_work() -> None:
    small = settle_timeout(DemoOptions(messages=10))
    assert settle_timeout(DemoOptions(messages=10_000)) > small + 900
    assert settle_timeout(DemoOptions(messages=10, max_attempts=10, cap_seconds=60)) > small + 400
    assert settle_timeout(DemoOptions(messages=10, timeout_seconds=5)) == 5


def test_the_outcomes_table_has_one_row_per_outcome_in_plain_words() -> None:
    tally = Tally(expected={"m1", "m2", "m3", "m4"}, processed={"m1"})
    counter = tally.on_outcome
    replayed = Decision(Action.REPLAY, "https://main", attempt=1)
    parked = Decision(Action.PARK, "https://operator", reason=ParkReason.MAX_ATTEMPTS)
    unavailable = SendFailure("ServiceUnavailable", "try later", permanent=False)
    # What the replay hands its `on_outcome` hook: two replayed, one parked, one park whose
    # write failed (not parked yet).
    for message_id, decision, failure in (
        ("m2", replayed, None),
        ("m3", replayed, None),
        ("m4", parked, None),
        ("m1", parked, unavailable),
    ):
        counter(Outcome(_inbound(message_id), decision, failure))

    assert outcome_rows(tally) == [
        ("sent", 4),
        ("processed by the consumer", 1),
        ("replayed to the main queue", 2),
        ("not replayed yet: SQS call failed", 1),
        ("parked: max-attempts", 1),
    ]


def _inbound(message_id: str) -> InboundMessage:
    return InboundMessage(message_id, "handle", "{}", {}, "arn:aws:sqs:us-east-1:1:dlq")


@pytest.mark.usefixtures("fresh_backends")
def test_demo_command_in_plain_mode_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--plain", "--messages", "30", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    # Plain is never silent: a start line with the time limit, then progress every few seconds.
    assert re.search(r"^demo: started with 30 messages; time limit \d+ s", out, re.MULTILINE)
    assert "demo complete" in out
    assert "sent 30" in out
    assert "not yet done 0, lost 0" in out
    assert "0:30 (first deliveries)" in out


def test_without_moto_the_demo_says_which_extra_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "moto", None)  # as after a plain `pip install .`

    code = main(["demo", "--plain", "--messages", "5"])

    captured = capsys.readouterr()
    assert code == 2  # a missing extra is a usage error, in every command
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("dlq-replay: error: the demo needs moto, from the `demo` extra: ")


@pytest.mark.usefixtures("fresh_backends")
def test_ending_the_emulators_waits_answers_long_polls_at_once() -> None:
    """The demo's end does not wait for its threads' long polls: a 20 s receive already waiting,
    and one asked afterwards, are both answered at once (empty)."""
    with sqs_emulator() as running:
        sqs = emulator_client(running.endpoint_url)
        queue_url = sqs.create_queue(QueueName="waits")["QueueUrl"]
        answers: list[int] = []

        def receive() -> None:
            reply = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=20)
            answers.append(len(reply.get("Messages", [])))

        waiting = threading.Thread(target=receive, daemon=True)
        waiting.start()
        running.app.end_waits()
        later = threading.Thread(target=receive, daemon=True)
        later.start()
        for thread in (waiting, later):
            thread.join(timeout=10)  # far less than the polls' 20 s
        assert answers == [0, 0]
