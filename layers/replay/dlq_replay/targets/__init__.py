"""Delivering a record of a serverless DLQ to its target again, as the service would have
(`deliverer`), and the ledger of the Lambda invocations it made (`ledger`). Nothing is
imported here: the ledger's users do not pay for the delivery's clients.
"""
