"""Delivering a record of a serverless DLQ to its target again, as the service would have.

`deliverer.Deliverer` sends each `delivery.Delivery` to its target's service (Lambda
`Invoke` with `Event`, SQS `SendMessage`, SNS `Publish`, Step Functions `StartExecution`,
EventBridge `PutEvents`), several at once, and answers `Delivered` or `Refused` per record;
`clients.TargetClients` makes one client per service and region. `ledger` counts the
invocations a Lambda target accepted. Nothing is imported here: the ledger's users do not pay
for the delivery's clients.
"""
