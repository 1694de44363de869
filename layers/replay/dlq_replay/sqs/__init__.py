"""SQS I/O: the client as the replay configures it, and the batched calls."""
