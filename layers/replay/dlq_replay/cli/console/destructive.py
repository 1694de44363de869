"""The console's destructive actions, behind the queue's name typed back: `purge` (the CLI's
`run_purge` itself, which checks the name) and `delete` of the chosen messages (the CLI's
`Deleter`, audited as `dlq-replay delete` is, the name checked by the CLI's `check_confirmed`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from typing import TYPE_CHECKING

from dlq_replay import ops
from dlq_replay.cli.auditing import audit_tally, audited, gate
from dlq_replay.cli.console.jobs import STDOUT, Job, action_args
from dlq_replay.cli.deleting import delete_json
from dlq_replay.cli.purge import check_confirmed
from dlq_replay.ops.deleting import Deleter, DeleteRequest, DeleteTally

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def run_purge(base: argparse.Namespace, queue: ops.QueueInfo, confirm: str, job: Job) -> None:
    """`dlq-replay purge QUEUE --confirm NAME`, its JSON answer shown on the page."""
    from dlq_replay.cli import purge

    args = action_args(base, "purge", queue=queue.url, confirm=confirm)
    out = io.StringIO()
    with STDOUT, contextlib.redirect_stdout(out):
        purge.run_purge(args)
    answer = json.loads(out.getvalue() or "{}")
    job.rows = [("purged (about)", int(answer.get("purged", 0)))]
    job.lines = ["SQS removes them within 60 seconds"]


def run_delete(
    base: argparse.Namespace,
    sqs: SQSClient,
    queue: ops.QueueInfo,
    *,
    ids: frozenset[str],
    confirm: str,
    job: Job,
) -> None:
    """Delete the chosen messages (the CLI's Deleter with the console's selection)."""
    args = action_args(base, "delete", queue=queue.url, confirm=confirm, selection=len(ids))
    request = DeleteRequest(source=queue, selector=ops.Selector(message_ids=ids))

    def show(tally: DeleteTally) -> None:
        job.seen = tally.seen
        job.rows = [
            ("deleted", tally.deleted),
            ("skipped (not selected, given back)", tally.skipped),
            ("failed (still in the queue)", tally.failed),
            ("seen (received)", tally.seen),
        ]
        job.adds_up = tally.adds_up

    @audited("delete")
    def run(args: argparse.Namespace) -> int:
        check_confirmed(args, queue)
        deleter = Deleter(sqs, request, stop=job.stop)
        gate(args, queues=(queue.url,), selection_size=len(ids))
        tally = deleter.run(show)
        show(tally)
        if tally.stopped:
            job.lines.append(tally.stopped)
        if tally.interrupted:
            job.state = "stopped"
        audit_tally(args, delete_json(queue, tally))
        return 0

    run(args)
