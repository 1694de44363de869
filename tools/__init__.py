"""Development tools of sqs-dlq-replay (not shipped to Lambda)."""
