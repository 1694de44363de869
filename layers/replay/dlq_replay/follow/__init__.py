"""Every replay and every operator move followed to its end: the replay's recovery by attempt
and the returns of the copies a `redrive` or `import` sent, kept in the stack's table or a
local file. Between the SQS I/O and the engine: the replay counts (replay_side.py), the moves
tag their copies (ops/movefollow.py), the CLI and the console read (cli/followed.py).

Nothing is imported here: a caller imports the module that defines what it needs, so the
Lambda loads only tag, recovery, moves and tables, and never the file store.
"""
