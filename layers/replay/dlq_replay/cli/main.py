"""`dlq-replay`: exit codes 0 (ok), 1 (failed), 2 (usage), 128 + the signal's number; errors
are one line, never a traceback (the signal handlers go in first). Only the module of the
command being run is imported: `--help` and `--version` import none (COMMANDS lists them)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple, NoReturn

from dlq_replay import __version__
from dlq_replay.cli.parsing import CommandParser
from dlq_replay.cli.prestart import prestart
from dlq_replay.cli.shutdown import (
    Interrupted,
    end_process,
    exit_with_on_signal,
    install_default_handlers,
)

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command cut off by `head`
EXIT_INTERRUPTED = 130  # SIGINT: a KeyboardInterrupt that is not an `Interrupted`


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
    """What a command module's register() adds its parsers to: the subparsers, each command's
    summary from COMMANDS."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self._subparsers.add_parser(name, help=COMMANDS[name].summary, **kwargs)


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `commands`, only those commands' options (the others are listed
    with their summary, their modules not imported)."""
    parser = CommandParser(
        prog="dlq-replay",
        description="Replay SQS dead-letter messages with backoff; inspect and redrive what "
        "was parked.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )
    parser.commands = subparsers.choices
    registry = Registry(subparsers)
    wanted = None if commands is None else {COMMANDS[name].module for name in commands}
    for name, (module, summary) in COMMANDS.items():
        if wanted is not None and module not in wanted:
            subparsers.add_parser(name, help=summary, add_help=False)
        elif name not in subparsers.choices:  # a module registers all of its commands at once
            importlib.import_module(f"dlq_replay.cli.{module}").register(registry)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `dlq-replay` command. In process (`argv`, tests) it hands the signal handlers back;
    as the process's own command a signal after it finished changes not its exit code."""
    restore = install_default_handlers()
    code = EXIT_INTERRUPTED
    try:
        code = _main(argv)
    except KeyboardInterrupt as stop:
        # One line: a command that has more to say raises KeyboardInterrupt with it.
        print(f"dlq-replay: {stop.args[0] if stop.args else 'interrupted'}", file=sys.stderr)
        code = stop.code if isinstance(stop, Interrupted) else EXIT_INTERRUPTED
    except SystemExit as done:  # the parser's exit 2, --help's 0
        code = done.code if isinstance(done.code, int) else int(done.code is not None)
        raise
    finally:
        if argv is None:
            exit_with_on_signal(code)
        else:
            restore()
    return code


def _main(argv: Sequence[str] | None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if argv is None:  # the process's own command line: a redrive's second process, early
        prestart(arguments)
    # The command is the first argument (`dlq-replay` itself takes only -h and --version).
    parser = build_parser([name for name in arguments[:1] if name in COMMANDS])
    args = parser.parse_args(arguments)
    run: Callable[[argparse.Namespace], int] = args.run
    from botocore.exceptions import BotoCoreError, ClientError

    from dlq_replay.cli.errors import CommandError, describe_error
    from dlq_replay.core.settings import SettingsError

    try:
        return run(args)
    except BrokenPipeError:
        # The reader went away (`dlq-replay plan --json | head`): stop quietly, as `cat` does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (CommandError, SettingsError, ClientError, BotoCoreError) as error:
        message, code = describe_error(error)
        print(f"dlq-replay: error: {message}", file=sys.stderr)
        return code


def console() -> NoReturn:
    """The `dlq-replay` console script: `main`, then `end_process` (no interpreter teardown)."""
    end_process(main())


if __name__ == "__main__":  # pragma: no cover
    console()
