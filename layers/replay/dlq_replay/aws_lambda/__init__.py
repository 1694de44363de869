"""The Lambda adapter: Lambda's SQS event in, the partial-batch response out
(`functions/replay/app.py` is a thin handler over it)."""
