"""The operator's SQS work, apart from how the CLI shows it (docs/design.md, "Operator tools").

Two SQS facts shape it: a receive raises the count that decides when SQS moves a message on,
so looking spends a budget (`receiving.ReceiveBudget`); and StartMessageMoveTask takes only a
DLQ as its source, so any other move is client-side (`redrive`, `clientmove`): send the copy,
then delete exactly the originals whose copy was sent. Re-exports nothing, so that
`dlq-replay --help` loads none of it.
"""
