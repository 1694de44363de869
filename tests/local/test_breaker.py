"""The outage breaker outside Lambda: the worker's pollers stop receiving while it is open (no
receive, no attempt spent) and start again at the probe; the demo's outage and --no-breaker;
the worker's --no-breaker."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from dlq_replay.breaker.breaker_state import Phase
from dlq_replay.breaker.rule import Counts
from dlq_replay.breaker.worker_side import BreakerGate, worker_breaker
from dlq_replay.cli.main import main
from dlq_replay.demo.run import demo
from dlq_replay.demo.scenario import DemoOptions
from dlq_replay.demo.view import breaker_line
from dlq_replay.local.eventsource import LocalEventSource, Polling
from dlq_replay.local.worker_loop import settings_from
from moto import mock_aws

LOG = logging.getLogger("test.breaker")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class CountingGate(BreakerGate):
    """The worker's gate, counting how often a poller asked it."""

    asked = 0

    def wait_until_receiving(self, stop: threading.Event) -> bool:
        self.asked += 1
        return super().wait_until_receiving(stop)


def opened_breaker(clock: Clock) -> BreakerGate:
    breaker, _ = worker_breaker(logger=LOG, count_attribute="n", clock=clock)
    state = breaker.record([(clock.now, Counts(22, 20))])
    assert state.phase is Phase.OPEN
    return CountingGate(breaker)


def test_an_open_breaker_holds_the_poller_until_the_probe() -> None:
    clock = Clock()
    gate = opened_breaker(clock)
    stop = threading.Event()
    answer: list[bool] = []
    waiting = threading.Thread(target=lambda: answer.append(gate.wait_until_receiving(stop)))
    waiting.start()
    waiting.join(timeout=1.5)
    assert waiting.is_alive()  # open: the poller waits
    clock.now += 120  # the pause is over: the probe receives again
    waiting.join(timeout=10)
    assert answer == [True]
    assert gate.breaker.store.load().phase is Phase.HALF_OPEN


def test_stop_ends_the_wait_of_a_paused_poller() -> None:
    gate = opened_breaker(Clock())
    stop = threading.Event()
    stop.set()
    assert gate.wait_until_receiving(stop) is False


def test_while_open_the_worker_receives_nothing_so_no_attempt_is_spent() -> None:
    clock = Clock()
    gate = opened_breaker(clock)
    with mock_aws():
        import boto3

        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="dlq")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="waiting")
        handled: list[object] = []

        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            handled.append(event)
            return {"batchItemFailures": []}

        source = LocalEventSource(
            sqs,
            url,
            handler,
            Polling(wait_seconds=0),
            gate=gate,
        )
        stop = threading.Event()
        poller = threading.Thread(target=source.run, args=(stop,))
        poller.start()
        poller.join(timeout=1.5)
        assert isinstance(gate, CountingGate)
        assert gate.asked == 1  # still waiting in its first question
        stop.set()
        poller.join(timeout=10)
        assert not poller.is_alive()
        assert handled == []
        assert source.stats.received == 0
        # Never received: its first receive now is its first receive ever.
        message = sqs.receive_message(
            QueueUrl=url, MessageSystemAttributeNames=["ApproximateReceiveCount"]
        )["Messages"][0]
        assert message["Attributes"]["ApproximateReceiveCount"] == "1"


def test_worker_no_breaker_turns_it_off_and_the_default_is_on() -> None:
    env = {"OPERATOR_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/op"}
    assert settings_from(env, {}).outage_breaker is True
    assert settings_from(env, {"OUTAGE_BREAKER": "off"}).outage_breaker is False
    assert settings_from({**env, "OUTAGE_BREAKER": "off"}, {}).outage_breaker is False


@pytest.mark.parametrize("value", ["-1", "3601", "x"])
def test_outage_seconds_is_checked_by_the_parser(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--outage-seconds", value])
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("dlq-replay: error: argument --outage-seconds")


@pytest.mark.usefixtures("fresh_backends")
def test_the_demo_breaker_opens_in_an_outage_and_every_message_is_accounted_for() -> None:
    options = DemoOptions(
        messages=60,
        failure_rate=0,
        poison_rate=0,
        invalid_rate=0,
        outage_seconds=8,
        seed=7,
        live=False,
    )

    result = demo(options)

    assert result.completed, result
    assert (result.sent, result.lost, result.not_yet_done) == (60, 0, 0), result
    assert result.breaker
    assert result.breaker_openings >= 1
    assert result.breaker_open_seconds > 0
    assert breaker_line(result).startswith("outage breaker: opened ")


@pytest.mark.usefixtures("fresh_backends")
def test_the_demo_without_the_breaker_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--plain", "--messages", "20", "--seed", "3", "--no-breaker"])
    assert code == 0
    assert "outage breaker: off" in capsys.readouterr().out


DAY = 86_400


def test_the_worker_applies_the_retention_bound_from_cloudwatch_read_once_a_minute() -> None:
    """With under a day left for the DLQ's oldest message the worker's breaker does not open
    (the replay parks as usual), and an open one closes; CloudWatch is asked once a minute."""
    from datetime import UTC, datetime, timedelta

    from dlq_replay.breaker.breaker_state import Cause
    from dlq_replay.breaker.evidence import dlq_time_left

    clock = Clock()
    with mock_aws():
        import boto3

        sqs = boto3.client("sqs", region_name="us-east-1")
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        url = sqs.create_queue(QueueName="worker-dlq")["QueueUrl"]
        retention = int(
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["MessageRetentionPeriod"])[
                "Attributes"
            ]["MessageRetentionPeriod"]
        )
        reads: list[str] = []
        cloudwatch.meta.events.register(
            "before-call.cloudwatch.GetMetricData", lambda **_: reads.append("read")
        )

        def age(seconds: float, minutes_ago: int = 1) -> None:
            cloudwatch.put_metric_data(
                Namespace="AWS/SQS",
                MetricData=[
                    {
                        "MetricName": "ApproximateAgeOfOldestMessage",
                        "Dimensions": [{"Name": "QueueName", "Value": "worker-dlq"}],
                        "Value": seconds,
                        "Timestamp": datetime.now(UTC) - timedelta(minutes=minutes_ago),
                    }
                ],
            )

        age(retention - DAY - 600, minutes_ago=3)  # a day and 10 minutes left
        left = dlq_time_left(sqs, lambda: cloudwatch, url, clock=clock)
        breaker, _ = worker_breaker(logger=LOG, count_attribute="n", clock=clock, time_left=left)
        assert breaker.record([(clock.now, Counts(22, 20))]).phase is Phase.OPEN
        assert reads == ["read"]

        clock.now += 30  # within the minute: no new read, the old one aged by 30 s
        assert breaker.step().phase is Phase.OPEN
        assert reads == ["read"]

        age(retention - DAY + 60, minutes_ago=1)  # CloudWatch now says 23h59m left
        clock.now += 40  # past the minute (before the probe): read again, closed for retention
        closed = breaker.step()
        assert (closed.phase, closed.cause) == (Phase.CLOSED, Cause.RETENTION)
        assert reads == ["read", "read"]


def test_without_cloudwatch_the_worker_decides_without_the_bound() -> None:
    clock = Clock()
    with mock_aws():
        import boto3

        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="quiet-dlq")["QueueUrl"]
        from dlq_replay.breaker.evidence import dlq_time_left

        left = dlq_time_left(sqs, lambda: boto3.client("cloudwatch", region_name="us-east-1"), url)
        assert left() is None  # no datapoint: unknown
        breaker, _ = worker_breaker(logger=LOG, count_attribute="n", clock=clock, time_left=left)
        assert breaker.record([(clock.now, Counts(22, 20))]).phase is Phase.OPEN


def test_the_queues_total_falls_only_by_what_the_consumer_deletes() -> None:
    """The worker's veto off AWS: moving messages between the main queue, the DLQ and the
    operator queue (replays, failures, parks) leaves the total; deleting lowers it."""
    with mock_aws():
        import boto3
        from dlq_replay.breaker.evidence import QueueTotals

        sqs = boto3.client("sqs", region_name="us-east-1")
        urls = [sqs.create_queue(QueueName=name)["QueueUrl"] for name in ("main", "dlq", "op")]
        main, dlq, _ = urls
        for n in range(30):
            sqs.send_message(QueueUrl=dlq, MessageBody=f"m{n}")
        clock = Clock()
        totals = QueueTotals(sqs, urls, clock=clock)
        assert totals.deleting(clock.now - 1, 5) is None  # no sample from before then
        start = clock.now
        totals.sample()
        clock.now += 1
        totals.sample()  # within two seconds of the last: not read
        # Replays: from the DLQ to the main queue. The total stays 30.
        for message in _receive(sqs, dlq, 20):
            sqs.send_message(QueueUrl=main, MessageBody=message["Body"])
            sqs.delete_message(QueueUrl=dlq, ReceiptHandle=message["ReceiptHandle"])
        clock.now += 2
        assert totals.deleting(start, 5) is False
        # The consumer deletes 6 of them: the total fell by 6.
        for message in _receive(sqs, main, 6):
            sqs.delete_message(QueueUrl=main, ReceiptHandle=message["ReceiptHandle"])
        clock.now += 2
        assert totals.deleting(start, 5) is True
        assert totals.deleting(start, 7) is False


def test_a_fall_since_the_first_sample_counts_for_an_earlier_moment() -> None:
    """The veto looks back before a stretch, possibly before the pollers' first sample: a fall
    since that sample is a fall since the earlier moment too; too small a fall says nothing."""
    with mock_aws():
        import boto3
        from dlq_replay.breaker.evidence import QueueTotals

        sqs = boto3.client("sqs", region_name="us-east-1")
        urls = [sqs.create_queue(QueueName=name)["QueueUrl"] for name in ("main", "dlq", "op")]
        for n in range(30):
            sqs.send_message(QueueUrl=urls[0], MessageBody=f"m{n}")
        clock = Clock()
        totals = QueueTotals(sqs, urls, clock=clock)
        totals.sample()
        earlier = clock.now - 10
        for message in _receive(sqs, urls[0], 6):
            sqs.delete_message(QueueUrl=urls[0], ReceiptHandle=message["ReceiptHandle"])
        clock.now += 2
        assert totals.deleting(earlier, 5) is True
        assert totals.deleting(earlier, 7) is None  # not known: deletions before the sample


def _receive(sqs: Any, url: str, count: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while len(got) < count:
        got += sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=min(10, count - len(got)))[
            "Messages"
        ]
    return got


def test_lambda_reads_the_main_queues_deletions_from_cloudwatch_since_the_stretch() -> None:
    """Lambda's veto: NumberOfMessagesDeleted of the main queue over the whole minutes since
    the stretch began; None without a datapoint (CloudWatch is minutes late) or a minute."""
    from datetime import UTC, datetime

    with mock_aws():
        import boto3
        from dlq_replay.breaker.evidence import consumer_deleting

        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        made: list[int] = []

        def make() -> Any:
            made.append(1)
            return cloudwatch

        start = (datetime.now(UTC).timestamp() // 60) * 60 - 600  # ten minutes ago, whole
        clock = Clock()
        clock.now = start + 30
        deleting = consumer_deleting(make, "https://sqs/123/orders", clock=clock)
        assert deleting(start, 20) is None  # not a whole minute yet: not even asked
        assert made == []
        clock.now = start + 300
        assert deleting(start, 20) is None  # no datapoint
        for minute, deleted in ((-1, 500.0), (1, 15.0), (2, 10.0)):  # one before the stretch
            cloudwatch.put_metric_data(
                Namespace="AWS/SQS",
                MetricData=[
                    {
                        "MetricName": "NumberOfMessagesDeleted",
                        "Dimensions": [{"Name": "QueueName", "Value": "orders"}],
                        "Timestamp": datetime.fromtimestamp(start + 60 * minute + 1, UTC),
                        "Value": deleted,
                    }
                ],
            )
        assert deleting(start, 20) is True  # 25 since the stretch
        assert deleting(start, 30) is False  # the 500 from before it do not count
        assert made == [1]  # one client, made at the first read


def test_the_main_queues_timing_is_read_from_its_attributes_or_is_unknown() -> None:
    with mock_aws():
        import boto3
        from dlq_replay.breaker.evidence import main_queue_timing
        from dlq_replay.breaker.rule import QueueTiming

        sqs = boto3.client("sqs", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        redrive = f'{{"deadLetterTargetArn": "{arn}", "maxReceiveCount": "4"}}'
        main = sqs.create_queue(
            QueueName="main", Attributes={"VisibilityTimeout": "7", "RedrivePolicy": redrive}
        )["QueueUrl"]
        assert main_queue_timing(sqs, main) == QueueTiming(7.0, 4)
        assert main_queue_timing(sqs, dlq) is None  # no redrive: its failures reach no DLQ
        assert main_queue_timing(sqs, main.replace("main", "gone")) is None
