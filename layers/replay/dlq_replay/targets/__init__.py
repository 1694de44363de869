"""Delivering a record to its target (Lambda, SQS, SNS, Step Functions, an event bus) and the
request-id ledger that counts Lambda's returns (`ledger`)."""
