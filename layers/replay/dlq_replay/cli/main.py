"""`dlq-replay`: one console command for the worker, the demo and the operator's needs.

AWS CLI habits: `--region`, `--profile`, `--endpoint-url` on every command; exit codes
0 (ok), 1 (something failed), 2 (usage), 128 + the signal's number when a signal stopped it
(130 SIGINT, 143 SIGTERM, 129 SIGHUP). Errors are one line on stderr, never a traceback: the
signal handlers go in first, before anything heavy is imported (`cli.shutdown`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from dlq_replay import __version__
from dlq_replay.cli.shutdown import Interrupted, install_default_handlers

EXIT_INTERRUPTED = 130  # SIGINT: a KeyboardInterrupt that is not an `Interrupted`


def build_parser() -> argparse.ArgumentParser:
    from dlq_replay.cli import archive, demo, pause, peek, plan, redrive, status, worker
    from dlq_replay.cli.options import CommandParser

    parser = CommandParser(
        prog="dlq-replay",
        description="Replay SQS dead-letter messages with backoff; inspect and redrive what "
        "was parked.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )
    for command in (worker, demo, status, pause, peek, redrive, archive, plan):
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    restore = install_default_handlers()
    try:
        return _main(argv)
    except KeyboardInterrupt as stop:
        # One line: a command that has more to say raises KeyboardInterrupt with it.
        print(f"dlq-replay: {stop.args[0] if stop.args else 'interrupted'}", file=sys.stderr)
        return stop.code if isinstance(stop, Interrupted) else EXIT_INTERRUPTED
    finally:
        restore()


def _main(argv: Sequence[str] | None) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from dlq_replay.cli.errors import CommandError, describe_error
    from dlq_replay.core.settings import SettingsError

    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except (CommandError, SettingsError, ClientError, BotoCoreError) as error:
        message, code = describe_error(error)
        print(f"dlq-replay: error: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
