"""How many messages a queue holds, as SQS's approximate counters say, and how long its oldest
has left: CloudWatch's age (the only place SQS reports it) against the retention."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from dlq_replay.core.queues import queue_name

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

_COUNTERS: list[QueueAttributeNameType] = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


@dataclass(frozen=True, slots=True)
class QueueDepth:
    visible: int
    in_flight: int
    delayed: int

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


def queue_depth(sqs: SQSClient, queue_url: str) -> QueueDepth:
    """The three approximate counters of one queue (eventually consistent, about a minute)."""
    found = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=_COUNTERS)["Attributes"]
    visible, in_flight, delayed = (int(found.get(name, "0")) for name in _COUNTERS)
    return QueueDepth(visible, in_flight, delayed)


def seconds_until_expiry(retention_seconds: int, age_seconds: float | None) -> float | None:
    """Retention minus age, never below 0; None when the age is unknown (not "fine")."""
    if age_seconds is None:
        return None
    return max(0.0, retention_seconds - age_seconds)


def sqs_metric(query_id: str, metric: str, queue_name: str, stat: str) -> dict[str, Any]:
    """One GetMetricData query of a queue's SQS metric, by the minute."""
    dimensions = [{"Name": "QueueName", "Value": queue_name}]
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {"Namespace": "AWS/SQS", "MetricName": metric, "Dimensions": dimensions},
            "Period": 60,
            "Stat": stat,
        },
    }


def oldest_message_ages(
    cloudwatch: Any, queue_names: Sequence[str], *, now: datetime | None = None
) -> tuple[dict[str, float], str | None]:
    """The latest ApproximateAgeOfOldestMessage of each queue, and a note if CloudWatch failed."""
    from botocore.exceptions import BotoCoreError, ClientError

    end = now or datetime.now(UTC)
    queries = [
        sqs_metric(f"q{index}", "ApproximateAgeOfOldestMessage", name, "Maximum")
        for index, name in enumerate(queue_names)
    ]
    try:
        response = cloudwatch.get_metric_data(
            MetricDataQueries=queries,
            StartTime=end - timedelta(minutes=15),
            EndTime=end,
            ScanBy="TimestampDescending",
        )
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "error")
        return {}, f"age of the oldest message unavailable: CloudWatch said {code}"
    except BotoCoreError as error:
        return {}, f"age of the oldest message unavailable: {type(error).__name__}"
    ages: dict[str, float] = {}
    for result in response.get("MetricDataResults", []):
        index = int(str(result.get("Id", "q-1"))[1:])
        values = list(result.get("Values", []))
        if values and 0 <= index < len(queue_names):
            ages[queue_names[index]] = float(values[0])
    return ages, None


def queue_time_left(sqs: Any, cloudwatch: Any, queue_url: str) -> float | None:
    """Seconds until SQS deletes the queue's oldest message; None when unknown."""
    retention = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]["MessageRetentionPeriod"]
    name = queue_name(queue_url)
    ages, _ = oldest_message_ages(cloudwatch, [name])
    return seconds_until_expiry(int(retention), ages.get(name))
