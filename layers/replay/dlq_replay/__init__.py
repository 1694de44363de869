"""sqs-dlq-replay: replays SQS dead-letter messages with backoff and parks what keeps failing."""

__version__ = "0.1.0"
