"""The operator's SQS work, apart from how the CLI shows it (docs/design.md, "Operator tools").
Re-exports nothing, so that `dlq-replay --help` loads none of it."""
