"""`dlq-replay`, the console command: one module per subcommand (status, peek, redrive, plan,
worker, demo), each a parser and the rendering of what `dlq_replay.ops` (or the local runtime,
or the demo) returns; `main` dispatches and turns every error into one line and an exit code.
"""
