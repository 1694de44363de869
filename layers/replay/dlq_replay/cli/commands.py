"""The commands of `dlq-replay`: each one's module and summary. Light on purpose: `--help` lists
them without importing their modules (boto3, rich and the operations come with a command)."""

from __future__ import annotations

from typing import Any, NamedTuple


class Command(NamedTuple):
    module: str  # under dlq_replay.cli; its register() adds the command's parser
    summary: str


COMMANDS: dict[str, Command] = {
    "worker": Command(
        "worker", "run the replay as a long-lived worker on a DLQ (any SQS-compatible endpoint)"
    ),
    "demo": Command("demo", "see the replay work on an embedded SQS emulator (no AWS account)"),
    "status": Command(
        "status", "depth of the main, DLQ and operator queues; is the replay's event source on"
    ),
    "pause": Command("pause", "stop replaying the DLQ: disable the replay function's event source"),
    "resume": Command("pause", "replay the DLQ again: enable the replay function's event source"),
    "peek": Command("peek", "look at messages without consuming them"),
    "redrive": Command("redrive", "send parked messages back once the bug is fixed"),
    "export": Command(
        "export", "write parked messages to a JSON Lines archive (to edit with jq, then import)"
    ),
    "import": Command("importing", "send the messages of an export archive to a queue (resumable)"),
    "purge": Command(
        "deleting", "delete every message of a queue (PurgeQueue), its name typed back"
    ),
    "delete": Command(
        "deleting", "delete the messages a selection takes, the queue's name typed back"
    ),
    "audit": Command(
        "trail", "who moved, deleted or paused what, and how it ended: the audit trail"
    ),
    "console": Command(
        "console", "a web console on this machine: every DLQ, its messages, the actions"
    ),
    "plan": Command(
        "plan", "what a backoff setting means: the delay of each attempt, the time to parking"
    ),
}


class Registry:
    """What a command module's register() adds its parsers to: the subparsers, with each
    command's summary from COMMANDS (one copy of it)."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self._subparsers.add_parser(name, help=COMMANDS[name].summary, **kwargs)
