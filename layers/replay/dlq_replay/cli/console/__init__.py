"""`dlq-replay console`: a local web console over the operator commands (docs/console.md), on
127.0.0.1 behind a random token; its actions run the code each command runs. Flask and Jinja2
come from the `console` extra. What it reads from its command line is read once, at its start,
into a `Connection`: how it reaches AWS and the replay function's settings it reads with. Its
actions make their clients and audits there, with the CLI's option names, so no action needs
the command line's Namespace."""

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3

from dlq_replay import audit
from dlq_replay.cli.auditing import add_audit_option, describe, identifier, request_from, store_of
from dlq_replay.cli.demo import require_moto
from dlq_replay.cli.deployment import (
    accepted_kinds_of,
    add_deployment_options,
    command_sqs,
    count_attribute_of,
    function_settings,
    lookup_config,
    replay_targets_of,
    resolve_deployment,
)
from dlq_replay.cli.errors import EXIT_USAGE, CommandError, operator_command
from dlq_replay.cli.options import add_aws_options, aws_session, endpoint
from dlq_replay.cli.parsing import Subparsers, int_between
from dlq_replay.cli.shutdown import SIGNALS, exit_code, signal_name
from dlq_replay.core.kinds import KIND_CHOICES, RecordKind
from dlq_replay.local.answers import refuse_foreign_answers
from dlq_replay.ops.receiving import ALL_KINDS

if TYPE_CHECKING:
    from types import FrameType

    from mypy_boto3_sqs import SQSClient
    from werkzeug.serving import BaseWSGIServer

    from dlq_replay.ops.stack import Deployment
    from dlq_replay.targets.deliverer import Deliverer

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
    from dlq_replay.demo.scenario import send_batches

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
            entries.append({"MessageBody": body, "MessageAttributes": attributes})
        send_batches(sqs, queues.operator, entries)
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
    """Serve in a thread until a signal (SIGINT, SIGTERM, SIGHUP) comes; its number. A handler,
    not `sigwait`: a signal blocked here could reach a thread started earlier (the demo's
    emulator) and be lost."""
    received: list[int] = []
    stopped = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        del frame
        received.append(signum)
        stopped.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in SIGNALS}
    threading.Thread(target=server.serve_forever, name="server", daemon=True).start()
    try:
        while not stopped.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.shutdown()
        server.server_close()
    return received[0]


# Every service a page, an action or the audit calls; their endpoints are resolved at start, where a
# wrong AWS_ENDPOINT_URL_<SERVICE> is one line before anything is served.
SERVICES = (
    "cloudformation",
    "cloudwatch",
    "dynamodb",
    "events",
    "lambda",
    "s3",
    "sns",
    "sqs",
    "stepfunctions",
    "sts",
)
# The options that name the deployment, as the CLI records them when given.
DEPLOYMENT_OPTIONS = (
    "stack",
    "main_queue_url",
    "dlq_url",
    "operator_queue_url",
    "function_name",
    "region",
    "endpoint_url",
)


@dataclass(frozen=True, slots=True)
class Connection:
    """How the console reaches AWS and reads, fixed at start. Clients are made once each, under a
    lock (a boto3 session is not safe to make clients from in two threads at once), and shared;
    `kinds_line` says which kinds records are read as and why."""

    deployment: Deployment
    region: str | None
    profile: str | None
    stack: str | None
    audit_table: str | None
    given: Mapping[str, str]  # DEPLOYMENT_OPTIONS as given on the command line
    endpoints: Mapping[str, str | None]  # by service
    session: boto3.Session = field(repr=False, compare=False)
    replay_targets: frozenset[str]
    count_attribute: str
    kinds: frozenset[RecordKind]
    kinds_line: str
    sqs: SQSClient = field(repr=False, compare=False)  # the commands' (its retries, pool, timeouts)
    _clients: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Connection:
        deployment = resolve_deployment(args)
        given = {
            name: str(value) for name in DEPLOYMENT_OPTIONS if (value := getattr(args, name, None))
        }
        endpoints = {service: endpoint(args, service) for service in SERVICES}
        session = aws_session(args)  # the session the console's SQS client comes from
        settings = function_settings(args, deployment)
        return cls(
            deployment,
            args.region,
            args.profile,
            args.stack,
            getattr(args, "audit_table", None),
            given,
            endpoints,
            session,
            replay_targets_of(settings),
            count_attribute_of(settings),
            *_kinds_read(settings, deployment),
            command_sqs(args),
        )

    def client(self, service: str) -> Any:
        """The console's client of `service` (made on first use)."""
        with self._lock:
            if service not in self._clients:
                self._clients[service] = self.session.client(
                    service,  # type: ignore[call-overload]
                    endpoint_url=self.endpoints.get(service),
                    config=lookup_config(service),  # the CLI's: a person is waiting
                )
            return self._clients[service]

    def deliverer(self) -> Deliverer:
        """Delivery to a record's target, as the CLI's `make_deliverer` on these endpoints."""
        from dlq_replay.targets.deliverer import Deliverer, TargetClients

        session = boto3.Session(profile_name=self.profile, region_name=self.region)
        refuse_foreign_answers(session)
        return Deliverer(TargetClients(session, endpoint_url=self.endpoints.get), concurrency=8)

    def action(
        self, command: str, stop: threading.Event | None = None, **asked: Any
    ) -> audit.Action:
        """The audit of one console action (origin `console`), not started yet: its request the
        deployment's options as given and what it asks, as the CLI's command would record them;
        `stop` set makes its end `interrupted`."""
        return audit.Action(
            command,
            audit.Origin.CONSOLE,
            request_from({**self.given, **asked}),
            open_store=self.store,
            identify=identifier(lambda: self.client("sts")),
            describe=describe,
            stop=stop,
        )

    def store(self) -> audit.AuditStore:
        """The audit trail, as the CLI finds it with the same options."""
        return store_of(self.audit_table, self.stack, self.client)


def _kinds_read(
    settings: Mapping[str, str], deployment: Deployment
) -> tuple[frozenset[RecordKind], str]:
    """The kinds read as, and the line saying which and why: with a function (or DLQ_KIND set
    here), its DLQ_KIND, as every command reads it; without one, every kind (the CLI's default,
    `sqs`, is the function's default). A DLQ_KIND that is none of its values is one line, now."""
    if not (deployment.function_name or os.environ.get("DLQ_KIND")):
        return ALL_KINDS, "DLQ_KIND=any (no --stack: every kind recognised)"
    kinds = accepted_kinds_of(settings)
    name = next((n for n, k in KIND_CHOICES.items() if k == kinds), "?")
    if settings.get("DLQ_KIND"):
        why = "the function's setting"
    elif os.environ.get("DLQ_KIND"):
        why = "DLQ_KIND of this shell"
    else:
        why = "the function's default"
    return kinds, f"DLQ_KIND={name} ({why})"
