"""The local runtime: the replay outside Lambda, against any SQS-compatible endpoint.

A local event source polls a DLQ as Lambda's event source mapping does (batches of up to 10,
Lambda's exact record shape, deletion of successes only) and calls the same `LambdaReplay`;
the worker runs it with several pollers and clean signal handling. Never in the layer.
"""
