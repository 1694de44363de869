"""What one running console knows: its connection (the CLI's options), token, snapshots and
actions; the pages (`app`) ask it."""

from __future__ import annotations

import argparse
import threading
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import abort

from dlq_replay import ops
from dlq_replay.cli.console import inventory, jobs
from dlq_replay.cli.console.snapshot import Filter, Snapshot
from dlq_replay.cli.deployment import accepted_kinds_of, count_attribute_of, replay_targets_of
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.targets.delivery import Delivery

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

OVERVIEW_SECONDS = 2.0  # the overview is read again at most this often


class Console:
    """One console's state; every method is safe from the server's threads."""

    def __init__(
        self,
        args: argparse.Namespace,
        sqs: SQSClient,
        deployment: ops.Deployment,
        folder: Path,
        *,
        token: str,
        csrf: str,
        hosts: frozenset[str],
    ) -> None:
        self.args = args
        self.sqs = sqs
        self.deployment = deployment
        self.folder = folder
        self.token = token
        self.csrf = csrf
        self.hosts = hosts
        self.read_only = bool(args.read_only)
        self.jobs = jobs.Jobs()
        self._snapshots: dict[str, Snapshot] = {}
        self._overview: inventory.Overview | None = None
        self._lock = threading.Lock()

    # -- reading -----------------------------------------------------------------------------

    def _kinds(self, url: str) -> tuple[dict[str, int], float | None]:
        snapshot = self._snapshots.get(url)
        if snapshot is None or not snapshot.ready:
            return {}, None
        now = time.time()
        return dict(snapshot.groups("kind", Filter(), now)), snapshot.oldest_age(now)

    def overview(self) -> inventory.Overview:
        with self._lock:
            fresh = self._overview and time.time() - self._overview.read_at < OVERVIEW_SECONDS
            if not fresh:
                self._overview = inventory.overview(
                    self.args, self.sqs, self.deployment, self._kinds
                )
            assert self._overview is not None
            return self._overview

    def overview_json(self) -> dict[str, Any]:
        view = self.overview()
        return {
            "stack": view.stack,
            "replay": view.replay,
            "operator_depth": view.operator_depth,
            "notes": list(view.notes),
            "rows": [{**asdict(row), "backlog": row.backlog} for row in view.rows],
        }

    def queue(self, name: str) -> ops.QueueInfo:
        """A queue of the overview, by name; 404 for any other."""
        row = next((row for row in self.overview().rows if row.name == name), None)
        if row is None:
            abort(404, "no such dead-letter queue")
        return ops.queue_info(self.sqs, row.url)

    def snapshot(self, info: ops.QueueInfo, *, fresh: bool = False) -> Snapshot:
        """The queue's snapshot; read now when there is none (or `fresh`, unless reading)."""
        with self._lock:
            current = self._snapshots.get(info.url)
            if current is not None and (not fresh or current.state == "reading"):
                return current
            snapshot = Snapshot(self.folder, info)
            self._snapshots[info.url] = snapshot
        targets = replay_targets_of(self.args, self.deployment)
        kinds = {"accepted_kinds": accepted_kinds_of(self.args, self.deployment)}
        threading.Thread(
            target=snapshot.read,
            args=(self.sqs, targets),
            kwargs=kinds,
            name="snapshot",
            daemon=True,
        ).start()
        return snapshot

    def snapshots(self) -> list[Snapshot]:
        return list(self._snapshots.values())

    # -- actions -----------------------------------------------------------------------------

    def destinations(self, info: ops.QueueInfo) -> list[tuple[str, str]]:
        """Where a redrive from this queue can go: (form value, words)."""
        found = [("source", "each message's source queue (as SQS recorded it)")]
        main = self._main_for(info)
        if main is not None:
            found.insert(0, ("main", f"the main queue ({main.rsplit('/', 1)[-1]})"))
        if replay_targets_of(self.args, self.deployment):
            found.append(("target", "each record's recorded target (the stack's allowed targets)"))
        return found

    def _main_for(self, info: ops.QueueInfo) -> str | None:
        if self.deployment.main and info.url != self.deployment.main:
            return self.deployment.main
        row = next((row for row in self.overview().rows if row.url == info.url), None)
        if row is not None and len(row.sources) == 1:
            return str(self.sqs.get_queue_url(QueueName=row.sources[0])["QueueUrl"])
        return None

    def order(self, info: ops.QueueInfo, form: Any) -> jobs.RedriveOrder:
        """The selection (ticked ids) or the filter's result in the snapshot, and where to."""
        snapshot = self.snapshot(info)
        selected = Filter.from_form(form)
        if form.get("scope") == "filter":
            ids = frozenset(snapshot.ids(selected, time.time())) if snapshot.ready else frozenset()
        else:
            ids = frozenset(str(i) for i in form.getlist("id"))
        if not ids:
            abort(400, "nothing selected: tick messages, or choose the filter's result")
        to = form.get("to", "main")
        destination: ops.QueueInfo | None = None
        if to == "main":
            main = self._main_for(info)
            if main is None:
                abort(400, "no main queue known for this queue")
            destination = ops.queue_info(self.sqs, main)
        elif to not in {"source", "target"}:
            abort(400, "unknown destination")
        rate = form.get("rate", type=float)
        return jobs.RedriveOrder(
            source=info,
            destination=destination,
            ids=ids,
            target_arns=replay_targets_of(self.args, self.deployment)
            if to == "target"
            else frozenset(),
            accepted_kinds=accepted_kinds_of(self.args, self.deployment),
            rate=rate if rate and rate > 0 else None,
            reset_count=form.get("reset_count") == "1",
            count_attribute=count_attribute_of(_with_count(self.args), self.deployment),
            filter=selected.query() if form.get("scope") == "filter" else {},
        )

    def plan(self, order: jobs.RedriveOrder) -> list[tuple[str, int]]:
        """What would move where, message by message from the snapshot (`ops.plan_copy`, the
        redrive's own decision for each message), counted by outcome."""
        request = jobs.redrive_request(order)
        counts: dict[str, int] = defaultdict(int)
        source_urls: dict[str, str | None] = {}
        for message in self.snapshot(order.source).messages(sorted(order.ids)):
            planned = ops.plan_copy(self.sqs, message, request, source_urls)
            if isinstance(planned, OutboundMessage):
                counts[f"move to {planned.queue_url.rsplit('/', 1)[-1]}"] += 1
            elif isinstance(planned, Delivery):
                counts[f"deliver to {planned.target_arn}"] += 1
            else:
                counts[f"stays in {order.source.name}: {planned}"] += 1
        missing = len(order.ids) - sum(counts.values())
        if missing:
            counts["no longer in the snapshot"] = missing
        return sorted(counts.items(), key=lambda item: -item[1])

    def start_redrive(self, order: jobs.RedriveOrder) -> jobs.Job:
        where = order.destination.name if order.destination else "source"
        # The redrive receives the whole queue (the unchosen are given back): about as many.
        seen = max(len(order.ids), self.snapshot(order.source).examined)
        job = jobs.Job("redrive", order.source.name, f"{order.source.name} -> {where}", seen)
        return self.jobs.start(job, lambda j: jobs.run_redrive(self.args, self.sqs, order, j))

    def start_export(self, order: jobs.RedriveOrder, filename: str) -> jobs.Job:
        job = jobs.Job(
            "export", order.source.name, f"export of {order.source.name}", len(order.ids)
        )
        return self.jobs.start(
            job, lambda j: jobs.run_export(self.sqs, self.folder, order, j, filename)
        )

    def start_purge(self, info: ops.QueueInfo, confirm: str) -> jobs.Job:
        from dlq_replay.cli.console import destructive

        job = jobs.Job("purge", info.name, f"purge {info.name}")
        return self.jobs.start(job, lambda j: destructive.run_purge(self.args, info, confirm, j))

    def start_delete(self, order: jobs.RedriveOrder, confirm: str) -> jobs.Job:
        from dlq_replay.cli.console import destructive

        source = order.source
        seen = max(len(order.ids), self.snapshot(source).examined)
        job = jobs.Job("delete", source.name, f"delete {len(order.ids)} from {source.name}", seen)
        return self.jobs.start(
            job,
            lambda j: destructive.run_delete(
                self.args, self.sqs, source, ids=order.ids, confirm=confirm, job=j
            ),
        )

    def start_pause(self, *, enable: bool) -> jobs.Job:
        word = "resume" if enable else "pause"
        job = jobs.Job(word, "", f"{word} the replay")
        return self.jobs.start(job, lambda j: jobs.run_pause(self.args, j, enable=enable))

    def job(self, job_id: str) -> jobs.Job:
        found = self.jobs.jobs.get(job_id)
        if found is None:
            abort(404, "no such action")
        return found

    def audit_actions(self) -> tuple[list[Any], str, str | None]:
        """The trail's latest actions (the CLI's and this console's), where it is kept."""
        from dlq_replay.cli import trail
        from dlq_replay.cli.auditing import open_store

        try:
            store = open_store(self.args)
            actions = store.actions(limit=200)
        except Exception as error:  # shown on the page
            return [], "", f"{type(error).__name__}: {error}"
        rows = [
            {
                "started": action.record.started_at.replace("T", " ")[:19],
                "command": action.record.command,
                "origin": str(action.record.origin),
                "who": trail.who_text(action.record.identity),
                "what": trail.what_text(action.record, action.end),
                "result": trail.result_text(action),
            }
            for action in actions
        ]
        return rows, store.where, None


def _with_count(args: argparse.Namespace) -> argparse.Namespace:
    if not hasattr(args, "count_attribute"):
        args.count_attribute = None
    return args
