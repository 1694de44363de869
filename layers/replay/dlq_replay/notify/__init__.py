"""SNS I/O: the park notices out to a topic (PublishBatch), every failure reported back.
Imports only the core."""
