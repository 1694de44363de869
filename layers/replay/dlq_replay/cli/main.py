"""`dlq-replay`: one console command for the worker, the demo and the operator's needs.

AWS CLI habits: `--region`, `--profile`, `--endpoint-url` on every command; exit codes
0 (ok), 1 (something failed), 2 (usage). Errors are one line on stderr, never a traceback."""

from __future__ import annotations

import argparse
import atexit
import gc
import sys
from collections.abc import Callable, Sequence

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay import __version__
from dlq_replay.cli import demo, export, importing, pause, peek, plan, redrive, status, worker
from dlq_replay.cli.errors import CommandError, describe_error
from dlq_replay.cli.options import CommandParser
from dlq_replay.core.settings import SettingsError


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="dlq-replay",
        description="Replay SQS dead-letter messages with backoff; inspect and redrive what "
        "was parked.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )
    for command in (worker, demo, status, pause, peek, redrive, export, importing, plan):
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # At exit the collector would walk every object still alive (botocore's service models
    # among them), 0.1-0.4 s after the work is done; frozen, they are freed without the walk.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except KeyboardInterrupt as stop:
        # One line: a command that has more to say raises KeyboardInterrupt with it.
        print(f"dlq-replay: {stop.args[0] if stop.args else 'interrupted'}", file=sys.stderr)
        return 130
    except (CommandError, SettingsError, ClientError, BotoCoreError) as error:
        message, code = describe_error(error)
        print(f"dlq-replay: error: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
