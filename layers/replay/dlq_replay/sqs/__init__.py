"""SQS I/O: the replay's calls to SQS, batched.

The SQS client as the replay configures it (retries, timeouts), and SendMessageBatch /
DeleteMessageBatch / ChangeMessageVisibilityBatch with every per-entry failure mapped back
(the engine's replayer writes through them). Imports only the core.
"""
