"""SQS I/O: the replay's calls to SQS, batched, and the replayer that makes them.

The SQS client as the replay configures it (retries, timeouts), SendMessageBatch /
DeleteMessageBatch / ChangeMessageVisibilityBatch with every per-entry failure mapped back,
and `Replayer`, which turns the core's decisions for one batch into
writes and reports one outcome per record (its park notices go out through `notify`).
Imports only the core and `notify`.
"""
