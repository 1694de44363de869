"""`dlq-replay console`: a local web console over the operator commands (docs/console.md), on
127.0.0.1 behind a random token; its actions run the code each command runs. Flask and Jinja2
come from the `console` extra."""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import secrets
import signal
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlq_replay.cli.auditing import add_audit_option
from dlq_replay.cli.demo import require_moto
from dlq_replay.cli.deployment import add_deployment_options
from dlq_replay.cli.errors import EXIT_USAGE, CommandError, operator_command
from dlq_replay.cli.options import add_aws_options
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.cli.shutdown import SIGNALS, exit_code, signal_name

if TYPE_CHECKING:
    from werkzeug.serving import BaseWSGIServer

EXTRA_HINT = "the console needs its extra: pip install 'sqs-dlq-replay[console]'"
REASONS = ("max-attempts", "max-age", "rejected", "invalid-count")  # the demo's park reasons


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "console",
        description="Serve a web console on this machine: every dead-letter queue (of --stack, "
        "or of the region), each queue's messages read once into a local snapshot (within the "
        "receive budget, as peek reads), and the actions: plan, redrive, export, pause and "
        "resume, each the code its command runs, recorded in the audit trail. Prints its URL "
        "with a random token; Ctrl-C stops it (a running action ends as an interrupted "
        "command does). Details: docs/console.md.",
    )
    parser.add_argument(
        "--port", type=int_between(0, 65535), default=0, help="TCP port (default: a free one)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--read-only", action="store_true", help="show the queues; offer and accept no action"
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="on the demo's embedded emulator (no AWS account): its queues, with parked sample "
        "messages (`make console-demo`; needs the demo extra too)",
    )
    add_deployment_options(parser)
    add_audit_option(parser)
    add_aws_options(parser)
    parser.set_defaults(run=run_console)


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one); a usage error, not werkzeug's exit,
    for a host that cannot be resolved or bound here, or a port in use."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        address = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)[0][4]
        listener = socket.socket(family, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise CommandError(f"cannot listen on {host}: {_why(error)}", EXIT_USAGE) from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(128)
    except OSError as error:
        listener.close()
        where = f"{host}:{port}" if port else host
        raise CommandError(f"cannot listen on {where}: {_why(error)}", EXIT_USAGE) from None
    return listener


def _why(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return " ".join(str(error).split()) or type(error).__name__


def console_url(host: str, port: int, token: str) -> str:
    """The URL to open: every page lives under the token's path (docs/console.md)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)  # noqa: S104
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/{token}/"


@operator_command
def run_console(args: argparse.Namespace) -> int:
    return _on_demo_queues(args) if args.demo else _run(args)


def _on_demo_queues(args: argparse.Namespace) -> int:
    """`--demo`: the console on the demo's own emulator, its queues wired as a stack's and holding
    parked sample messages. CloudWatch and STS answer there at once with an error the pages show
    as a note; no Lambda is asked (the demo has no replay function)."""
    require_moto()
    from dlq_replay.demo.emulator import create_queues, emulator_client, sqs_emulator

    with sqs_emulator() as running:
        endpoint = running.endpoint_url
        sqs = emulator_client(endpoint)
        queues = create_queues(sqs, prefix="demo")
        rng = random.Random(7)  # noqa: S311 - sample data
        entries: list[Any] = []
        for n in range(120):  # mostly JSON orders, some plain text, a few hostile
            reason = rng.choices(REASONS, weights=(6, 2, 1, 1))[0]
            if n % 25 == 7:
                body = "<script>alert('a body is text')</script>"
            elif n % 5 == 3:
                body = f"plain text order {n}: payment gateway timed out"
            else:
                body = json.dumps({"order": 1000 + n, "sku": f"A-{n % 7}", "total": n * 3 % 97})
            attributes = {
                "dlq-replay-park-reason": {"DataType": "String", "StringValue": reason},
                "dlq-replay-count": {"DataType": "Number", "StringValue": "4"},
            }
            entries.append(
                {"Id": str(n % 10), "MessageBody": body, "MessageAttributes": attributes}
            )
        for start in range(0, len(entries), 10):
            sqs.send_message_batch(QueueUrl=queues.operator, Entries=entries[start : start + 10])
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "demo")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "demo")
        args.endpoint_url = endpoint
        args.region = args.region or "us-east-1"
        args.main_queue_url, args.dlq_url = queues.main, queues.dlq
        args.operator_queue_url = queues.operator
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        from werkzeug.serving import make_server

        from dlq_replay.cli.console.app import create_app
        from dlq_replay.cli.console.connection import Connection
        from dlq_replay.cli.console.state import Console
    except ImportError:
        raise CommandError(EXTRA_HINT, EXIT_USAGE) from None
    # The server's request log would print every URL, the token's too: warnings only.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    listener = _listen(args.host, args.port)
    port = int(listener.getsockname()[1])
    with tempfile.TemporaryDirectory(prefix="dlq-replay-console-") as folder:
        try:
            # Every option read here, once (a DLQ_KIND that is none of its values: one line).
            console = Console(
                Connection.from_args(args),
                Path(folder),
                token=secrets.token_urlsafe(24),
                csrf=secrets.token_urlsafe(24),
                hosts=frozenset({"localhost", args.host.lower()}),
                read_only=args.read_only,
            )
            server = make_server(
                args.host, port, create_app(console), threaded=True, fd=listener.fileno()
            )
        finally:
            listener.close()  # the server holds its own duplicate
        print(f"dlq-replay console: {console_url(args.host, port, console.token)}", flush=True)
        if args.read_only:
            print("read-only: no action is offered or accepted (a re-read is)", flush=True)
        print("Ctrl-C stops it", file=sys.stderr, flush=True)
        signum = _serve(server)
        for line in console.close():
            print(line, flush=True)
        print(f"dlq-replay: {signal_name(signum)}: console stopped", file=sys.stderr, flush=True)
    return exit_code(signum)


def _serve(server: BaseWSGIServer) -> int:
    """Serve in a thread until a signal (SIGINT, SIGTERM, SIGHUP) comes; its number. The signals
    are blocked here (and so in every thread started from now on) and taken by `sigwait`."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    threading.Thread(target=server.serve_forever, name="server", daemon=True).start()
    try:
        return signal.sigwait(SIGNALS)
    finally:
        server.shutdown()
        server.server_close()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
