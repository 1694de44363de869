"""`dlq-replay`: one module per command (`commands.COMMANDS`), each a parser and the rendering of
what `dlq_replay.ops` returns; `main` turns every error into one line and an exit code."""
