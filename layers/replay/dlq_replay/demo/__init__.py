"""`make demo`: the replay at work on an embedded SQS emulator, no AWS account needed.

An emulator (moto's server) on 127.0.0.1, the three queues wired as the template wires them, a
flaky consumer on the main queue and the local event source replaying the DLQ; at the end
every message is accounted for.
"""
