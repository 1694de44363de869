"""SNS I/O: the park notices out to a topic (PublishBatch), every failure reported back.

Its own package, under the SQS I/O that uses it: the replayer (sqs) publishes a notice per
park through it, and the Lambda adapter and the worker make its client. Imports only the core.
"""
