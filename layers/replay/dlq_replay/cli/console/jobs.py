"""The console's actions, each an `ops` call in a thread of its own with a stop token, as the
CLI runs its commands under `Shutdown.run`: leaving or closing its page changes nothing. The
Stop button (`Job.halt`) or stopping the console (`Jobs.stop_all`) sets the token, and the
action ends as an interrupted command does: the same end record in the audit trail."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlq_replay import audit
from dlq_replay.audit.recorder import EXIT_STOPPED
from dlq_replay.cli.deleting import check_confirmed, delete_json, purge_json
from dlq_replay.cli.errors import EXIT_FAILED, EXIT_OK, CommandError, describe_error
from dlq_replay.cli.pace_options import stop_text
from dlq_replay.cli.pause import take_over
from dlq_replay.cli.redrive_tally import nothing_movable, redrive_json, tally_lines, tally_rows
from dlq_replay.cli.shutdown import GRACE_SECONDS, hidden_until_text, leftover_text
from dlq_replay.ops.clientmove import ClientMove
from dlq_replay.ops.deleting import (
    PURGE_INTERVAL_SECONDS,
    Deleter,
    DeleteRequest,
    DeleteTally,
    purge,
)
from dlq_replay.ops.export import Export, ExportRequest, ExportResult
from dlq_replay.ops.movefollow import action_line
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.pause import set_event_source
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.redrive import RedriveRequest, RedriveTally
from dlq_replay.ops.select import Selector
from dlq_replay.sqs.depth import queue_depth

if TYPE_CHECKING:
    from dlq_replay.cli.console import Connection

_ids = itertools.count(1)
STOP_BUTTON = "Stop button"  # who stopped a job: its page's button
CONSOLE_STOPPED = "console stopped"  # ... or the console itself (Ctrl-C, SIGTERM)
STOPPED_LINE = "stopped: rerun to continue, nothing is lost"


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
    stopped_by: str | None = None  # STOP_BUTTON, CONSOLE_STOPPED
    action_id: str | None = None  # its records in the audit trail
    move: Any = None  # the ClientMove, for what an abandoned run leaves
    thread: threading.Thread | None = None

    def halt(self, by: str = STOP_BUTTON) -> None:
        if self.stopped_by is None:
            self.stopped_by = by
        self.stop.set()

    def to_json(self) -> dict[str, Any]:
        shown = {name: getattr(self, name) for name in _SHOWN}
        return {**shown, "download": self.download is not None, "action_id": self.action_id}

    def show(self, tally: RedriveTally, request: RedriveRequest) -> None:
        """The CLI's tally table, row by row (a mapping's rows indented, as the table has them)."""
        rows: list[tuple[str, int]] = []
        for row in tally_rows(tally, request):
            if isinstance(row, tuple):
                rows.append(row)
            else:
                rows += [(f"  {key}", value) for key, value in sorted(row.items())]
        self.seen, self.rows, self.adds_up = tally.seen, rows, tally.adds_up


_SHOWN = ("id", "kind", "state", "heading", "seen", "total", "rows", "lines", "error", "adds_up")


class Jobs:
    """Every action of this console, by id; each runs until it ends or is stopped."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}

    def start(self, job: Job, work: Callable[..., None], *args: Any) -> Job:
        """Run `work(*args, job)` in a thread of its own."""

        def body() -> None:
            try:
                work(*args, job)
                if job.state == "running":
                    job.state = "stopped" if job.stop.is_set() else "done"
            except OpsError as error:  # shown on the page
                job.state, job.error = "failed", str(error)
            except Exception as error:
                job.state, job.error = "failed", describe_error(error)[0]
            except BaseException:
                job.state, job.error = "failed", "stopped"

        job.thread = threading.Thread(target=body, name=f"job-{job.id}", daemon=True)
        self.jobs[job.id] = job
        job.thread.start()
        return job

    def running(self) -> list[Job]:
        """The actions still running, oldest first (every page links back to them)."""
        return [job for job in list(self.jobs.values()) if job.state == "running"]

    def stop_all(self, grace: float = GRACE_SECONDS) -> list[str]:
        """Stop every running action, wait `grace` for them; what each did, in lines."""
        running = self.running()
        for job in running:
            job.halt(CONSOLE_STOPPED)
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


@contextmanager
def recorded(job: Job, action: audit.Action) -> Iterator[None]:
    """The job's work under its audit (`action.gate` in it): a begin that could not be written
    fails the job, nothing done; an end that could not be, is said on the page."""
    job.action_id = action.action_id
    try:
        with action:
            yield
    except audit.AuditError as refused:
        raise CommandError(f"audit: {refused}") from None
    finally:
        if action.problem:
            job.lines.append(f"audit: {action.problem}")


def _stopped(job: Job) -> int:
    job.state = "stopped"
    job.lines.append(STOPPED_LINE)
    return EXIT_STOPPED


@dataclass(frozen=True, slots=True)
class RedriveOrder:
    """The page's selection as the redrive's request; `filter`: the filter that chose it, if any."""

    request: RedriveRequest
    filter: dict[str, str] = field(default_factory=dict)

    @property
    def source(self) -> QueueInfo:
        return self.request.source

    @property
    def ids(self) -> frozenset[str]:
        return self.request.selector.message_ids


def run_redrive(connection: Connection, order: RedriveOrder, job: Job) -> None:
    """The client-side move of the selection, audited as the CLI's redrive is."""
    request = order.request
    destination = request.destination.url if request.destination else "source"
    action = connection.action(
        "redrive",
        job.stop,
        source=order.source.url,
        destination=destination,
        client_side=True,
        rate=request.rate,
        reset_count=request.reset_count,
        target_arns=sorted(request.target_arns),
        hide_seconds=request.hide_seconds,
        wait_seconds=request.wait_seconds,
        reserve=request.reserve,
        selection=len(order.ids),  # how many were chosen, and the filter that chose them
        filter=json.dumps(order.filter, sort_keys=True) if order.filter else None,
    )
    # Each copy carries the action's id (dlq-replay-action): the move is followed.
    request = replace(request, follow_id=action.action_id)
    with recorded(job, action):
        deliverer = connection.deliverer() if request.target_arns else None
        move = ClientMove(
            connection.sqs,
            request,
            stop=job.stop,
            deliverer=deliverer,
            memory=ReceiveMemory.local(),
        )
        job.move = move
        action.gate(queues=(order.source.url, destination), selection_size=len(order.ids))
        move.follower = action.follower(connection.sqs, [request.destination])
        tally = move.run(lambda t: job.show(t, request))
        job.show(tally, request)
        job.lines = tally_lines(tally)
        job.lines.append(action_line(action.action_id, move.follower is not None or None))
        if move.follower is not None and move.follower.problem:
            job.lines.append(f"follow: {move.follower.problem}")
        if tally.stopped:
            job.lines.insert(0, stop_text(tally.stopped))
        # Who stopped it, for its tally's `interrupted` (the CLI names the signal there).
        stopped = (job.stopped_by or STOP_BUTTON) if tally.interrupted else None
        action.tally({**redrive_json(tally, request), "interrupted": stopped})
        action.leftover(leftover_text(move.leftover(), "source queue"))
        if tally.interrupted:
            action.ended(_stopped(job))
        else:
            failed = tally.failed or tally.sent_not_deleted or tally.stopped
            action.ended(EXIT_FAILED if failed or nothing_movable(tally) else EXIT_OK)


def run_pause(connection: Connection, enable: bool, job: Job) -> None:
    """`pause` / `resume` as the CLI runs them (the event source, then the breaker), audited
    with the CLI's request; not stoppable (one call each)."""
    action = connection.action("resume" if enable else "pause", enable=enable, wait=False)
    with recorded(job, action):
        deployment = connection.deployment
        function = deployment.function_name
        if not function:
            raise CommandError("which function? pass --stack NAME or --function-name NAME")
        dlq_arn = queue_info(connection.sqs, deployment.dlq).arn if deployment.dlq else None
        lam = connection.client("lambda")
        action.gate(queues=(deployment.dlq,) if deployment.dlq else ())
        result = set_event_source(lam, function, dlq_arn, enabled=enable)
        breaker = take_over(lam, lambda: connection.client("dynamodb"), function, enable=enable)
        answer = {**asdict(result), "breaker": breaker}
        action.tally(answer)
        job.lines = [f"{key}: {value}" for key, value in answer.items() if value is not None]
        action.ended(EXIT_OK)


def run_export(
    connection: Connection, folder: Path, order: RedriveOrder, name: str, job: Job
) -> None:
    """`export` of the selection (no delete: not audited) into a file the browser downloads."""
    path = folder / f"export-{job.id}.jsonl"
    request = ExportRequest(
        source=order.source,
        path=path,
        selector=Selector(message_ids=order.ids),
        replay_targets=order.request.target_arns,
        accepted_kinds=order.request.accepted_kinds,
    )

    def show(result: ExportResult) -> None:
        job.seen = result.examined

    # A read like the snapshot's: refused while it could move a message earlier reads saw.
    memory = ReceiveMemory.local()
    result = Export(connection.sqs, request, stop=job.stop, memory=memory).run(show)
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


def run_purge(connection: Connection, queue: QueueInfo, confirm: str, job: Job) -> None:
    """`dlq-replay purge QUEUE --confirm NAME`: one call, not stoppable."""
    action = connection.action("purge", queue=queue.url, confirm=confirm)
    with recorded(job, action):
        check_confirmed(confirm, queue)
        sqs = connection.sqs
        before = queue_depth(sqs, queue.url)
        action.gate(queues=(queue.url,), selection_size=before.total)
        result = purge(sqs, queue, before)
        action.tally(purge_json(result))
        job.rows = [("purged (about)", result.purged)]
        job.lines = [f"SQS removes them within {PURGE_INTERVAL_SECONDS} seconds"]
        action.ended(EXIT_OK)


def run_delete(connection: Connection, order: RedriveOrder, confirm: str, job: Job) -> None:
    """Delete the chosen messages (the CLI's Deleter with the console's selection)."""
    queue, ids = order.source, order.ids
    request = DeleteRequest(source=queue, selector=Selector(message_ids=ids))
    action = connection.action(
        "delete",
        job.stop,
        queue=queue.url,
        confirm=confirm,
        hide_seconds=request.hide_seconds,
        wait_seconds=request.wait_seconds,
        reserve=request.reserve,
        selection=len(ids),
    )

    def show(tally: DeleteTally) -> None:
        job.seen = tally.seen
        job.rows = [
            ("deleted", tally.deleted),
            ("skipped (not selected, given back)", tally.skipped),
            ("failed (still in the queue)", tally.failed),
            ("seen (received)", tally.seen),
        ]
        job.adds_up = tally.adds_up

    with recorded(job, action):
        check_confirmed(confirm, queue)
        deleter = Deleter(connection.sqs, request, stop=job.stop, memory=ReceiveMemory.local())
        action.gate(queues=(queue.url,), selection_size=len(ids))
        tally = deleter.run(show)
        show(tally)
        if tally.stopped:
            job.lines.append(tally.stopped)
        action.tally(delete_json(queue, tally))
        action.leftover(hidden_until_text(tally.not_released, tally.hidden_until))
        if tally.interrupted:
            action.ended(_stopped(job))
        else:
            action.ended(EXIT_FAILED if tally.failed or tally.stopped else EXIT_OK)
