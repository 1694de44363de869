"""The operator's SQS work, apart from how the CLI shows it (docs/design.md, "Operator tools").

Every function takes boto3 clients (or nothing at all) and returns frozen dataclasses; parsing
options and printing live in `dlq_replay.cli`. Two SQS facts shape it:

* `ReceiveMessage` raises a message's receive count, and on a queue with a RedrivePolicy that
  count decides when SQS moves the message on (the DLQ's safety net, the main queue's DLQ).
  Looking at messages therefore spends a budget (`receiving.ReceiveBudget`) and stops before
  it is gone.
* `StartMessageMoveTask` only takes a queue that is some queue's DLQ as its source and moves
  messages unchanged (`movetask`); anything else (a rewritten count, a filter, a limit) is a
  client-side move (`redrive`): send the copy, then delete exactly the originals whose copy
  was sent.

One module per concern: `stack` (finding a deployment), `queueinfo` (a queue's attributes),
`draining`, `status`, `pause` (the event source on and off), `receiving`, `recognition` (who
wrote a record, where it goes back to), `peek`, `redrive` (`clientmove` for its client-side
move, `pacing` for its speed and `--until-failing`, `ending` for when it is done, `preflight`
for what it reads first), `movetask`, `plan`, `archive` (the JSON Lines records of `export`
and `import`), `export` (`s3archive` for its S3 side, `archivefile` for its file),
`importing`, `receivememory` (the receive counts reads saw), `opserror` (the one error).

This package re-exports nothing: callers import the module that defines what they use
(`from dlq_replay.ops.queueinfo import QueueInfo`), and a command imports only the modules it
uses when it runs, which keeps `dlq-replay --help` from loading any of them.
"""
