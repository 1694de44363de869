"""How long the oldest message of a queue has left: CloudWatch's age against the retention.

SQS reports a queue's oldest message only as a CloudWatch metric; `dlq-replay status` shows it
and the outage breaker closes on it (it never holds messages past their retention).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from dlq_replay.core.queues import queue_name


def seconds_until_expiry(retention_seconds: int, age_seconds: float | None) -> float | None:
    """Retention minus age, never below 0 (a late metric may lag a deletion); None when the
    age is unknown: unknown is not "fine"."""
    if age_seconds is None:
        return None
    return max(0.0, retention_seconds - age_seconds)


def oldest_message_ages(
    cloudwatch: Any, queue_names: Sequence[str], *, now: datetime | None = None
) -> tuple[dict[str, float], str | None]:
    """The latest ApproximateAgeOfOldestMessage of each queue (CloudWatch, 1-minute periods).

    SQS reports the age only as a CloudWatch metric, a few minutes behind; a queue without a
    recent datapoint is left out. A failure to read CloudWatch is a note, not an error.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    end = now or datetime.now(UTC)
    queries = [
        {
            "Id": f"q{index}",
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/SQS",
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Dimensions": [{"Name": "QueueName", "Value": name}],
                },
                "Period": 60,
                "Stat": "Maximum",
            },
        }
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


def time_left(
    cloudwatch: Any, queue_name: str, retention_seconds: int, *, now: datetime | None = None
) -> float | None:
    """Seconds until SQS deletes the queue's oldest message; None when unknown (no datapoint,
    or CloudWatch could not be read)."""
    ages, _ = oldest_message_ages(cloudwatch, [queue_name], now=now)
    return seconds_until_expiry(retention_seconds, ages.get(queue_name))


def queue_time_left(sqs: Any, cloudwatch: Any, queue_url: str) -> float | None:
    """`time_left` of the queue at `queue_url`, its retention read from SQS (the outage
    breaker's retention bound, in Lambda and in the worker); raises what SQS raises."""
    retention = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]["MessageRetentionPeriod"]
    return time_left(cloudwatch, queue_name(queue_url), int(retention))
