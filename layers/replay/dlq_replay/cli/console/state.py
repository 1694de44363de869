"""What one running console knows: its connection (the command line read once, by
`Connection.from_args`: nothing below holds the Namespace), its token, snapshots and actions;
the pages (`app`) ask it, and turn its errors into HTTP answers."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from werkzeug.exceptions import BadRequest, NotFound

from dlq_replay.cli.console import Connection, inventory, jobs
from dlq_replay.cli.console.snapshot import READ_RESERVE, Filter, Snapshot
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.core.queues import queue_name
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.receiving import ReceiveBudget
from dlq_replay.ops.redrive import DEFAULT_CONCURRENCY, RedriveRequest, plan_copy
from dlq_replay.ops.select import Selector
from dlq_replay.targets.delivery import Delivery

# The overview is read by one refresher thread every OVERVIEW_SECONDS (the page's own refresh
# period) and shared by every open page, while a page asked for it within OVERVIEW_IDLE_SECONDS.
OVERVIEW_SECONDS = 5.0
OVERVIEW_IDLE_SECONDS = 60.0


class RefusedReadError(Exception):
    """A read that could exhaust a remembered message's receives; `str()` is the page's line."""

    status = 409


@dataclass(eq=False, repr=False)  # no repr: it would show the token
class Console:
    """One console's state; every method is safe from the server's threads."""

    connection: Connection  # what the pages and actions reach AWS and read with
    folder: Path
    token: str
    csrf: str
    hosts: frozenset[str]
    read_only: bool = False

    def __post_init__(self) -> None:
        self.jobs = jobs.Jobs()
        self._snapshots: dict[str, Snapshot] = {}
        self._overview: inventory.Overview | None = None
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # one overview read at a time
        self._asked_at = 0.0  # time.monotonic() a page last asked for the overview
        self._refresher: threading.Thread | None = None
        self._closed = threading.Event()

    def _read(self) -> inventory.Overview:
        c = self.connection
        return inventory.read_overview(c.sqs, c.client, c.deployment, self._kinds)

    def _kinds(self, url: str) -> tuple[Mapping[str, int], float | None]:
        snapshot = self._snapshots.get(url)
        if snapshot is None or not snapshot.ready:
            return {}, None
        now = time.time()
        return dict(snapshot.groups("kind", Filter(), now)), snapshot.oldest_age(now)

    def overview(self) -> inventory.Overview:
        """The refresher's latest read, shared by every page. Read here only while no refresher
        runs (the first request, or the first after a minute nobody asked), once however many
        pages ask at that moment; asking keeps the refresher running."""
        with self._lock:
            self._asked_at = time.monotonic()
            if self._refresher is not None and self._overview is not None:
                return self._overview
        with self._reading:
            with self._lock:
                if self._refresher is not None and self._overview is not None:
                    return self._overview  # read while this request waited
            latest = self._read()
            with self._lock:
                self._overview = latest
                if not self._closed.is_set():
                    self._refresher = threading.Thread(
                        target=self._refresh, name="overview-refresher", daemon=True
                    )
                    self._refresher.start()
        return latest

    def _refresh(self) -> None:
        """Read the overview every OVERVIEW_SECONDS (resting at least as long as a read took:
        a slow region is not read back to back) until no page asked for a minute, or close."""
        started = time.monotonic()
        while True:
            elapsed = time.monotonic() - started
            if self._closed.wait(max(OVERVIEW_SECONDS - elapsed, elapsed, 0.0)):
                return
            with self._lock:
                if time.monotonic() - self._asked_at > OVERVIEW_IDLE_SECONDS:
                    self._refresher = None
                    return
            started = time.monotonic()
            with self._reading:
                try:
                    latest = self._read()
                except Exception as error:  # a note on the last read (only readers change it)
                    last = self._overview
                    assert last is not None  # the refresher starts after the first read
                    when = time.strftime("%H:%M:%S", time.localtime(last.read_at))
                    note = (
                        f"refresh failed ({type(error).__name__}): the counters are those of {when}"
                    )
                    kept = tuple(n for n in last.notes if not n.startswith("refresh failed ("))
                    latest = replace(last, notes=(*kept, note))
                with self._lock:
                    self._overview = latest

    def close(self) -> list[str]:
        """Stop the refresher, every snapshot read and every action; what each action did."""
        self._closed.set()
        for snapshot in self.snapshots():
            snapshot.stop.set()
        return self.jobs.stop_all()

    def queue(self, name: str) -> QueueInfo:
        """A queue of the overview, by name; 404 for any other."""
        row = next((row for row in self.overview().rows if row.name == name), None)
        if row is None:
            raise NotFound("no such dead-letter queue")
        return queue_info(self.connection.sqs, row.url)

    def snapshot(self, info: QueueInfo, *, fresh: bool = False) -> Snapshot:
        """The queue's snapshot; read now when there is none (or `fresh`, unless reading). A
        fresh read the receive memory refuses is RefusedReadError; a refused first read fails,
        its snapshot saying why."""
        refused = self.reread_refusal(info) if fresh else None
        if refused is not None:
            raise RefusedReadError(refused)
        with self._lock:
            current = self._snapshots.get(info.url)
            if current is not None and (not fresh or current.state == "reading"):
                return current  # another request started one meanwhile
            snapshot = Snapshot(self.folder, info)
            self._snapshots[info.url] = snapshot
        c = self.connection
        reading = (c.sqs, c.replay_targets, c.kinds, ReceiveMemory.local())
        threading.Thread(target=snapshot.read, args=reading, name="snapshot", daemon=True).start()
        return snapshot

    def snapshots(self) -> list[Snapshot]:
        return list(self._snapshots.values())

    def reread_refusal(self, info: QueueInfo) -> str | None:
        """Why a new read would be refused (a message earlier reads saw, here or by the CLI,
        could be moved on by it, or the memory's file is unreadable); None: it may be read."""
        policy = info.redrive
        if policy is None:
            return None
        budget = ReceiveBudget(policy.max_receive_count, 0, READ_RESERVE, policy.target_name)
        try:
            return ReceiveMemory.local().refusal(info, budget)
        except OpsError as error:
            return str(error)

    def destinations(self, info: QueueInfo) -> list[tuple[str, str]]:
        """Where a redrive from this queue can go: (form value, words)."""
        found = [("source", "each message's source queue (as SQS recorded it)")]
        main = self._main_for(info)
        if main is not None:
            found.insert(0, ("main", f"the main queue ({queue_name(main)})"))
        if self.connection.replay_targets:
            found.append(("target", "each record's recorded target (the stack's allowed targets)"))
        return found

    def _main_for(self, info: QueueInfo) -> str | None:
        main = self.connection.deployment.main
        if main and info.url != main:
            return main
        row = next((row for row in self.overview().rows if row.url == info.url), None)
        if row is not None and len(row.sources) == 1:
            return str(self.connection.sqs.get_queue_url(QueueName=row.sources[0])["QueueUrl"])
        return None

    def order(self, info: QueueInfo, form: Any) -> jobs.RedriveOrder:
        """The selection (ticked ids) or the filter's result in the snapshot, and where to."""
        snapshot = self.snapshot(info)
        selected = Filter.from_form(form)
        if form.get("scope") == "filter":
            ids = frozenset(snapshot.ids(selected, time.time())) if snapshot.ready else frozenset()
        else:
            ids = frozenset(str(i) for i in form.getlist("id"))
        if not ids:
            raise BadRequest("nothing selected: tick messages, or choose the filter's result")
        to = form.get("to", "main")
        destination: QueueInfo | None = None
        if to == "main":
            main = self._main_for(info)
            if main is None:
                raise BadRequest("no main queue known for this queue")
            destination = queue_info(self.connection.sqs, main)
        elif to not in {"source", "target"}:
            raise BadRequest("unknown destination")
        rate = form.get("rate", type=float)
        rate = rate if rate and rate > 0 else None
        request = RedriveRequest(
            source=info,
            destination=destination,
            rate=rate,
            reset_count=form.get("reset_count") == "1",
            selector=Selector(message_ids=ids),
            count_attribute=self.connection.count_attribute,
            concurrency=1 if rate else DEFAULT_CONCURRENCY,
            target_arns=self.connection.replay_targets if to == "target" else frozenset(),
            accepted_kinds=self.connection.kinds,
        )
        return jobs.RedriveOrder(request, selected.query() if form.get("scope") == "filter" else {})

    def plan(self, order: jobs.RedriveOrder) -> list[tuple[str, int]]:
        """What would move where, by the redrive's own `plan_copy` of each snapshot message."""
        request = order.request
        counts: dict[str, int] = defaultdict(int)
        source_urls: dict[str, str | None] = {}
        for message in self.snapshot(order.source).messages(sorted(order.ids)):
            planned = plan_copy(self.connection.sqs, message, request, source_urls)
            if isinstance(planned, OutboundMessage):
                counts[f"move to {queue_name(planned.queue_url)}"] += 1
            elif isinstance(planned, Delivery):
                counts[f"deliver to {planned.target_arn}"] += 1
            else:
                counts[f"stays in {order.source.name}: {planned}"] += 1
        missing = len(order.ids) - sum(counts.values())
        if missing:
            counts["no longer in the snapshot"] = missing
        return sorted(counts.items(), key=lambda item: -item[1])

    def _total(self, order: jobs.RedriveOrder) -> int:
        """A redrive or delete receives the whole queue (the unchosen given back)."""
        return max(len(order.ids), self.snapshot(order.source).examined)

    def start_redrive(self, order: jobs.RedriveOrder) -> jobs.Job:
        destination, source = order.request.destination, order.source.name
        heading = f"{source} -> {destination.name if destination else 'source'}"
        job = jobs.Job("redrive", source, heading, self._total(order))
        return self.jobs.start(job, jobs.run_redrive, self.connection, order)

    def start_export(self, order: jobs.RedriveOrder, filename: str) -> jobs.Job:
        source = order.source.name
        job = jobs.Job("export", source, f"export of {source}", len(order.ids))
        return self.jobs.start(job, jobs.run_export, self.connection, self.folder, order, filename)

    def start_purge(self, info: QueueInfo, confirm: str) -> jobs.Job:
        job = jobs.Job("purge", info.name, f"purge {info.name}")
        return self.jobs.start(job, jobs.run_purge, self.connection, info, confirm)

    def start_delete(self, order: jobs.RedriveOrder, confirm: str) -> jobs.Job:
        source = order.source.name
        job = jobs.Job(
            "delete", source, f"delete {len(order.ids)} from {source}", self._total(order)
        )
        return self.jobs.start(job, jobs.run_delete, self.connection, order, confirm)

    def start_pause(self, *, enable: bool) -> jobs.Job:
        word = "resume" if enable else "pause"
        job = jobs.Job(word, "", f"{word} the replay")
        return self.jobs.start(job, jobs.run_pause, self.connection, enable)

    def job(self, job_id: str) -> jobs.Job:
        found = self.jobs.jobs.get(job_id)
        if found is None:
            raise NotFound("no such action")
        return found

    def audit_actions(self) -> tuple[list[Any], str, str | None]:
        """The trail's latest actions (the CLI's and this console's), where it is kept."""
        from dlq_replay.cli import followed, trail

        try:
            store = self.connection.store()
            actions = store.actions(limit=200)
        except Exception as error:  # shown on the page
            return [], "", f"{type(error).__name__}: {error}"
        problem = None
        try:
            follows = followed.follows_of(store.follow_store(), actions)
        except Exception as error:  # the trail is shown; the column says it was not read
            follows, problem = {}, f"followed: not read ({type(error).__name__}: {error})"
        cells = followed.followed_cells(actions, follows, time.time())
        if problem is not None:  # the trail is shown; a move's cell says it was not read
            cells = dict.fromkeys(cells, "not read")
        # Escaped as the CLI's table is: a bidi control would reorder the page's text too.
        rows = [
            {
                name: trail.visible(text)
                for name, text in (
                    ("started", action.record.started_at.replace("T", " ")[:19]),
                    ("command", action.record.command),
                    ("origin", str(action.record.origin)),
                    ("who", trail.who_text(action.record.identity)),
                    ("what", trail.what_text(action.record, action.end)),
                    ("result", trail.result_text(action)),
                    ("followed", cells.get(action.record.action_id, "")),
                )
            }
            for action in actions
        ]
        return rows, trail.visible(store.where), problem

    def recovery(
        self, info: QueueInfo
    ) -> tuple[tuple[str, list[tuple[str, int]]] | None, str | None]:
        """The replay's recovery on this DLQ over the last day, from the stack's table (the
        trail's), as a chart's title and bars, and a problem line; (None, None) without a table."""
        from dlq_replay.cli import followed

        try:
            store = self.connection.store()
            if not store.shared:
                return None, None
            summary = followed.last_day(store.follow_store(), info.name, time.time())
        except Exception as error:  # the page is shown; the chart's place says why
            return None, f"replay recovery not read ({type(error).__name__}: {error})"
        return (f"replay recovery, {summary.text()}", followed.recovery_bars(summary)), None
