"""How the console reaches AWS, fixed once at its start: region, profile, endpoints, the stack and
the audit table, with the options that named the deployment. Its actions make their clients
and audits here, with the CLI's option names, so no action needs the command line's Namespace."""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3

from dlq_replay import audit
from dlq_replay.cli.auditing import describe, identifier, request_from, store_of
from dlq_replay.cli.deployment import (
    accepted_kinds_of,
    count_attribute_of,
    function_settings,
    lookup_config,
    replay_targets_of,
)
from dlq_replay.cli.options import aws_session, endpoint
from dlq_replay.core.kinds import KIND_CHOICES, RecordKind
from dlq_replay.local.answers import refuse_foreign_answers
from dlq_replay.ops.recognition import ALL_KINDS

if TYPE_CHECKING:
    from dlq_replay.ops.stack import Deployment
    from dlq_replay.targets.deliverer import Deliverer

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
    """How the console reaches AWS, fixed at start. Clients are made once each, under a lock (a
    boto3 session is not safe to make clients from in two threads at once), and shared."""

    region: str | None
    profile: str | None
    stack: str | None
    audit_table: str | None
    given: Mapping[str, str]  # DEPLOYMENT_OPTIONS as given on the command line
    endpoints: Mapping[str, str | None]  # by service
    session: boto3.Session = field(repr=False, compare=False)
    _clients: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Connection:
        given = {
            name: str(value) for name in DEPLOYMENT_OPTIONS if (value := getattr(args, name, None))
        }
        return cls(
            region=args.region,
            profile=args.profile,
            stack=args.stack,
            audit_table=getattr(args, "audit_table", None),
            given=given,
            endpoints={service: endpoint(args, service) for service in SERVICES},
            session=aws_session(args),  # the session the console's SQS client came from
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


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """The replay function's settings the console reads and redrives with, read once at start as
    every command reads them; `kinds_line` says which kinds records are read as and why."""

    replay_targets: frozenset[str]
    count_attribute: str
    kinds: frozenset[RecordKind]
    kinds_line: str

    @classmethod
    def from_args(cls, args: argparse.Namespace, deployment: Deployment) -> ReadSettings:
        """With a function (or DLQ_KIND set here), its DLQ_KIND, as every command reads it;
        without one, every kind: the CLI's default (`sqs`) is the function's default, and no
        function is known here. A DLQ_KIND that is none of its values is one line, now."""
        settings = function_settings(args, deployment)
        targets = replay_targets_of(settings)
        count = count_attribute_of(settings)
        if not (deployment.function_name or os.environ.get("DLQ_KIND")):
            line = "DLQ_KIND=any (no --stack: every kind recognised)"
            return cls(targets, count, ALL_KINDS, line)
        kinds = accepted_kinds_of(settings)
        name = next((n for n, k in KIND_CHOICES.items() if k == kinds), "?")
        if settings.get("DLQ_KIND"):
            why = "the function's setting"
        elif os.environ.get("DLQ_KIND"):
            why = "DLQ_KIND of this shell"
        else:
            why = "the function's default"
        return cls(targets, count, kinds, f"DLQ_KIND={name} ({why})")
