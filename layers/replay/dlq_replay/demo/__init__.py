"""`make demo`: the replay at work on an embedded SQS emulator, no AWS account needed."""
