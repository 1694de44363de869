"""The overview: every dead-letter queue the console knows, sorted by backlog.

A queue is a DLQ when some queue's RedrivePolicy names it; the stack's DLQ and operator queue
are listed whatever they hold. Depths are SQS's approximate counters (`ops.queue_depth`, as
`status` reads them), the oldest message's age CloudWatch's (`ops.oldest_message_ages`) or,
where CloudWatch has none, the snapshot's; the replay's state is `status`'s (event source and
outage breaker). Nothing here receives a message.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay import ops
from dlq_replay.cli import deployment as clients
from dlq_replay.ops.depth import queue_depth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@dataclass(frozen=True, slots=True)
class DlqRow:
    name: str
    url: str
    arn: str
    roles: tuple[str, ...]  # "stack DLQ", "operator queue", "DLQ"
    visible: int
    in_flight: int
    delayed: int
    oldest_age: float | None
    sources: tuple[str, ...]  # queues whose RedrivePolicy names this one
    moves_to: str | None  # its own RedrivePolicy's target (the safety net)
    max_receive_count: int | None
    kinds: Mapping[str, int] = field(default_factory=dict)  # from the snapshot, when read

    @property
    def backlog(self) -> int:
        return self.visible + self.in_flight + self.delayed


@dataclass(frozen=True, slots=True)
class Overview:
    rows: tuple[DlqRow, ...]
    stack: str | None
    replay: str | None  # running, paused, outage breaker open, ... (with a stack)
    operator_depth: int | None
    notes: tuple[str, ...] = ()
    read_at: float = 0.0


def queue_urls(sqs: SQSClient) -> list[str]:
    urls: list[str] = []
    for page in sqs.get_paginator("list_queues").paginate():
        urls.extend(page.get("QueueUrls", []))
    return urls


def _infos(sqs: SQSClient, urls: list[str]) -> dict[str, ops.QueueInfo]:
    infos: dict[str, ops.QueueInfo] = {}
    for url in urls:
        try:
            info = ops.queue_info(sqs, url)
        except (ops.OpsError, ClientError):
            continue  # deleted meanwhile
        infos[info.arn] = info
    return infos


def overview(
    args: argparse.Namespace, sqs: SQSClient, deployment: ops.Deployment, kinds: Any
) -> Overview:
    """Every DLQ (of the stack, or of the region without one), sorted by backlog; `kinds(url)`
    gives a queue's kinds from its snapshot (empty when not read)."""
    known = dict(deployment.known_queues())
    urls = queue_urls(sqs)
    urls += [url for url in known.values() if url not in urls]
    infos = _infos(sqs, urls)
    sources: dict[str, list[str]] = {}
    for info in infos.values():
        if info.redrive is not None:
            sources.setdefault(info.redrive.target_arn, []).append(info.name)
    roles_by_url = {url: role for role, url in known.items()}
    stack_urls = set(known.values())
    stack_names = {info.name for info in infos.values() if info.url in stack_urls}

    def listed(info: ops.QueueInfo) -> bool:
        if roles_by_url.get(info.url) in {"dlq", "operator"}:
            return True
        named_by = sources.get(info.arn, [])
        return bool(named_by) and (not deployment.stack or bool(stack_names & set(named_by)))

    chosen = [info for info in infos.values() if listed(info)]
    notes: list[str] = []
    ages: dict[str, float] = {}
    try:
        cloudwatch = clients.make_client(args, "cloudwatch")
        ages, note = ops.oldest_message_ages(cloudwatch, [info.name for info in chosen])
        if note:
            notes.append(note)
    except (ClientError, BotoCoreError) as error:
        notes.append(f"oldest ages from the snapshots only (CloudWatch: {type(error).__name__})")
    rows = [
        _row(
            sqs, info, roles_by_url.get(info.url), sources=sources, ages=ages, kinds=kinds(info.url)
        )
        for info in chosen
    ]
    rows.sort(key=lambda row: (-row.backlog, row.name))
    operator = next((row for row in rows if "operator queue" in row.roles), None)
    replay = replay_state(args, sqs, deployment, notes)
    return Overview(
        tuple(rows),
        deployment.stack,
        replay,
        operator.backlog if operator else None,
        tuple(notes),
        time.time(),
    )


def _row(
    sqs: SQSClient,
    info: ops.QueueInfo,
    role: str | None,
    *,
    sources: dict[str, list[str]],
    ages: dict[str, float],
    kinds: tuple[Mapping[str, int], float | None],
) -> DlqRow:
    depth = queue_depth(sqs, info.url)
    counts, snapshot_age = kinds
    roles = {"dlq": "stack DLQ", "operator": "operator queue"}
    age = ages.get(info.name, snapshot_age)
    return DlqRow(
        name=info.name,
        url=info.url,
        arn=info.arn,
        roles=(roles[role],) if role in roles else ("DLQ",),
        visible=depth.visible,
        in_flight=depth.in_flight,
        delayed=depth.delayed,
        oldest_age=age,
        sources=tuple(sorted(sources.get(info.arn, []))),
        moves_to=info.redrive.target_name if info.redrive else None,
        max_receive_count=info.redrive.max_receive_count if info.redrive else None,
        kinds=counts,
    )


def replay_state(
    args: argparse.Namespace, sqs: SQSClient, deployment: ops.Deployment, notes: list[str]
) -> str | None:
    """`status`'s answer in a word or three: running, paused (by whom), outage breaker open."""
    if not deployment.function_name:
        return None
    try:
        lam = clients.make_client(args, "lambda")
        dlq_arn = ops.queue_info(sqs, deployment.dlq).arn if deployment.dlq else None
        source = ops.event_source_status(lam, deployment.function_name, dlq_arn)
        breaker = ops.breaker_status(
            lam, clients.make_client(args, "dynamodb"), deployment.function_name
        )
    except (ClientError, BotoCoreError, ops.OpsError) as error:
        notes.append(f"replay state unknown ({type(error).__name__})")
        return "unknown"
    if breaker.phase == "open":
        return "outage breaker open (paused itself)"
    if breaker.phase == "half-open":
        return "outage breaker half-open (probing)"
    if not source.found:
        return "no event source on the DLQ"
    return "running" if source.enabled else f"paused ({source.state})"
