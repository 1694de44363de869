"""The console's actions, each in a thread of its own with a stop token, as the CLI runs its
commands under `Shutdown.run`: closing the page or stopping the console sets the token, and
the action ends as an interrupted command does (requests in flight finish, the originals of
confirmed copies are deleted, every other message is given back) with its tally.

Redrive is `ops.prepare` and `ClientMove.run` (what `dlq-replay redrive` runs client-side),
recorded in the audit trail by the CLI's own `audited` / `gate` / `audit_tally`; the tally's
rows are `redrive_tally.tally_rows`, the lines the CLI prints under its table. Pause and
resume are the CLI's `run_pause` itself; export is `ops.prepare_export`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlq_replay import ops
from dlq_replay.cli.auditing import audit_tally, audited, gate
from dlq_replay.cli.errors import describe_error
from dlq_replay.cli.options import make_deliverer
from dlq_replay.cli.pacing import stop_text
from dlq_replay.cli.redrive_tally import redrive_json, tally_lines, tally_rows
from dlq_replay.cli.shutdown import GRACE_SECONDS, leftover_text
from dlq_replay.core.kinds import RecordKind

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# A job page that has not asked for its progress this long was closed: its action stops.
ABANDONED_SECONDS = 20.0
_ids = itertools.count(1)
STDOUT = threading.Lock()  # the CLI run functions print: one at a time
# The console's own options: how it serves, not what an action asks.
_SERVING = frozenset({"host", "port", "read_only", "run"})


@dataclass(slots=True)
class Job:
    """One action: what the page shows of it while it runs and once it has ended."""

    kind: str
    queue: str
    heading: str
    total: int = 0
    id: str = field(default_factory=lambda: str(next(_ids)))
    stop: threading.Event = field(default_factory=threading.Event)
    state: str = "running"  # running, done, stopped, failed
    seen: int = 0
    rows: list[tuple[str, int]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    error: str | None = None
    adds_up: bool | None = None
    download: Path | None = None
    download_name: str = ""
    polled: float = field(default_factory=time.monotonic)
    move: Any = None  # the ClientMove, for what an abandoned run leaves
    thread: threading.Thread | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "heading": self.heading,
            "seen": self.seen,
            "total": self.total,
            "rows": self.rows,
            "lines": self.lines,
            "error": self.error,
            "adds_up": self.adds_up,
            "download": self.download is not None,
        }

    def show(self, tally: ops.RedriveTally, request: ops.RedriveRequest) -> None:
        self.seen = tally.seen
        self.rows = flat_rows(tally, request)
        self.adds_up = tally.adds_up


def flat_rows(tally: ops.RedriveTally, request: ops.RedriveRequest) -> list[tuple[str, int]]:
    """The CLI's tally table, row by row (a mapping's rows indented, as the table has them)."""
    flat: list[tuple[str, int]] = []
    for row in tally_rows(tally, request):
        if isinstance(row, tuple):
            flat.append(row)
        else:
            flat += [(f"  {key}", value) for key, value in sorted(row.items())]
    return flat


class Jobs:
    """Every action of this console, by id."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self._watch = threading.Thread(target=self._watch_pages, name="pages", daemon=True)
        self._watch.start()

    def start(self, job: Job, work: Callable[[Job], None]) -> Job:
        def body() -> None:
            try:
                work(job)
                if job.state == "running":
                    job.state = "stopped" if job.stop.is_set() else "done"
            except BaseException as error:  # shown on the page
                job.state = "failed"
                job.error = describe_error(error)[0] if isinstance(error, Exception) else "stopped"

        job.thread = threading.Thread(target=body, name=f"job-{job.id}", daemon=True)
        self.jobs[job.id] = job
        job.thread.start()
        return job

    def _watch_pages(self) -> None:
        """Stop an action whose page went away (no progress asked for in a while)."""
        while True:
            time.sleep(2)
            now = time.monotonic()
            for job in list(self.jobs.values()):
                if job.state == "running" and now - job.polled > ABANDONED_SECONDS:
                    job.stop.set()

    def stop_all(self, grace: float = GRACE_SECONDS) -> list[str]:
        """Stop every running action, wait `grace` for them; what each did, in lines."""
        running = [job for job in self.jobs.values() if job.state == "running"]
        for job in running:
            job.stop.set()
        deadline = time.monotonic() + grace
        report: list[str] = []
        for job in running:
            if job.thread is not None:
                job.thread.join(max(0.0, deadline - time.monotonic()))
            alive = job.thread is not None and job.thread.is_alive()
            if alive and job.move is not None:
                snapshot, left = job.move.abandoned()
                job.show(snapshot, job.move.request)
                report.append(f"{job.heading}: abandoned; {leftover_text(left, 'source queue')}")
            report.append(f"{job.heading} ({job.state}, stopped with the console):")
            report += [f"  {label}: {count}" for label, count in job.rows]
            report += [f"  {line}" for line in job.lines]
        return report


@dataclass(frozen=True, slots=True)
class RedriveOrder:
    """What the page asked for: a selection (ids) from a queue, to a destination."""

    source: ops.QueueInfo
    destination: ops.QueueInfo | None  # None: to each message's source (or target)
    ids: frozenset[str]
    target_arns: frozenset[str] = frozenset()
    accepted_kinds: frozenset[RecordKind] = ops.ALL_KINDS  # the stack's DLQ_KIND's
    rate: float | None = None
    reset_count: bool = False
    count_attribute: str = "dlq-replay-count"
    filter: dict[str, str] = field(default_factory=dict)


def redrive_request(order: RedriveOrder) -> ops.RedriveRequest:
    return ops.RedriveRequest(
        source=order.source,
        destination=order.destination,
        rate=order.rate,
        reset_count=order.reset_count,
        selector=ops.Selector(message_ids=order.ids),
        count_attribute=order.count_attribute,
        concurrency=1 if order.rate else ops.DEFAULT_CONCURRENCY,
        target_arns=order.target_arns,
        accepted_kinds=order.accepted_kinds,
    )


def action_args(base: argparse.Namespace, command: str, **request: Any) -> argparse.Namespace:
    """The console's connection options with what this action asks (for the audit trail)."""
    kept = {k: v for k, v in vars(base).items() if not k.startswith("_") and k not in _SERVING}
    args = argparse.Namespace(**kept)
    args.command = command
    args.origin = "console"
    args.json = True
    for name, value in request.items():
        setattr(args, name, value)
    return args


def run_redrive(base: argparse.Namespace, sqs: SQSClient, order: RedriveOrder, job: Job) -> None:
    """The client-side move of the selection, audited as the CLI's redrive is."""
    request = redrive_request(order)
    destination = order.destination.url if order.destination else "source"
    args = action_args(
        base,
        "redrive",
        source=order.source.url,
        destination=destination,
        selection=len(order.ids),
        filter=json.dumps(order.filter, sort_keys=True) if order.filter else None,
        rate=order.rate,
        reset_count=order.reset_count,
        target_arns=sorted(order.target_arns),
    )

    @audited("redrive")
    def run(args: argparse.Namespace) -> int:
        deliverer = make_deliverer(args) if order.target_arns else None
        move = ops.prepare(sqs, request, stop=job.stop, deliverer=deliverer)
        job.move = move
        gate(args, queues=(order.source.url, destination), selection_size=len(order.ids))
        tally = move.run(lambda t: job.show(t, request))
        job.show(tally, request)
        job.lines = tally_lines(tally)
        if tally.stopped:
            job.lines.insert(0, stop_text(tally.stopped))
        if tally.interrupted:
            job.state = "stopped"
            job.lines.append("stopped: rerun to continue, nothing is lost")
        audit_tally(args, redrive_json(tally, request))
        return 0

    run(args)


def run_pause(base: argparse.Namespace, job: Job, *, enable: bool) -> None:
    """The CLI's `pause` / `resume` run function, its JSON answer shown on the page."""
    from dlq_replay.cli import pause

    command = "resume" if enable else "pause"
    args = action_args(base, command, enable=enable, wait=False, timeout=60.0)
    out = io.StringIO()
    with STDOUT, contextlib.redirect_stdout(out):
        pause.run_pause(args)
    answer = json.loads(out.getvalue() or "{}")
    job.lines = [f"{key}: {value}" for key, value in answer.items()]


def run_export(sqs: SQSClient, folder: Path, order: RedriveOrder, job: Job, name: str) -> None:
    """`export` (no delete) of the selection into a file the browser downloads."""
    path = folder / f"export-{job.id}.jsonl"
    request = ops.ExportRequest(
        source=order.source,
        path=path,
        selector=ops.Selector(message_ids=order.ids),
        replay_targets=order.target_arns,
        accepted_kinds=order.accepted_kinds,
    )

    def show(result: ops.ExportResult) -> None:
        job.seen = result.examined

    result = ops.prepare_export(sqs, request, stop=job.stop).run(show)
    job.seen = result.examined
    job.rows = [
        ("exported", result.exported),
        ("not selected (given back)", result.filtered),
        ("failed", result.failed),
        ("examined (received, visible again)", result.examined),
    ]
    job.adds_up = result.adds_up
    if result.stopped:
        job.lines.append(result.stopped)
    if path.exists():
        job.download = path
        job.download_name = name
