"""Delivery to a serverless DLQ's targets, and the invocation ledger (nothing imported here)."""
