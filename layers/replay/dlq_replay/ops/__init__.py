"""The operator's SQS work, apart from how the CLI shows it.

Finding a deployment's queues, their status, peeking within the receive budget that keeps a
look from pushing a message over its `maxReceiveCount`, redriving (SQS's native move task, or
a client-side send-then-delete), and the backoff plan. Returns values; prints nothing.
"""
