"""SQS I/O: the client as the replay configures it, and the batched calls with every per-entry
failure mapped back. Imports only the core."""
