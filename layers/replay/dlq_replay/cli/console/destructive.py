"""The console's destructive actions, behind the queue's name typed back (the CLI's
`check_confirmed`): `purge` (`ops.purge`, as `dlq-replay purge` runs it) and `delete` of the
chosen messages (the CLI's `Deleter`), each audited with the request the CLI's command records,
a stopped delete as `interrupted` with what it left."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlq_replay.audit.recorder import EXIT_STOPPED
from dlq_replay.cli.console.jobs import STOPPED_LINE, Job, recorded
from dlq_replay.cli.deleting import delete_json
from dlq_replay.cli.errors import EXIT_FAILED, EXIT_OK
from dlq_replay.cli.purge import check_confirmed, purge_json
from dlq_replay.cli.shutdown import hidden_until_text
from dlq_replay.ops.deleting import Deleter, DeleteRequest, DeleteTally
from dlq_replay.ops.purge import PURGE_INTERVAL_SECONDS, depth_before_purge, purge
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.select import Selector

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.cli.console.connection import Connection


def run_purge(
    connection: Connection, sqs: SQSClient, queue: QueueInfo, confirm: str, job: Job
) -> None:
    """`dlq-replay purge QUEUE --confirm NAME`: the name checked, then PurgeQueue (one call,
    not stoppable)."""
    action = connection.action("purge", connection.options(queue=queue.url, confirm=confirm))

    def work() -> int:
        check_confirmed(confirm, queue)
        before = depth_before_purge(sqs, queue)
        action.gate(queues=(queue.url,), selection_size=before.total)
        result = purge(sqs, queue, before)
        action.tally(purge_json(result))
        job.rows = [("purged (about)", result.purged)]
        job.lines = [f"SQS removes them within {PURGE_INTERVAL_SECONDS} seconds"]
        return EXIT_OK

    recorded(job, action, work)


def run_delete(
    connection: Connection,
    sqs: SQSClient,
    queue: QueueInfo,
    *,
    ids: frozenset[str],
    confirm: str,
    job: Job,
) -> None:
    """Delete the chosen messages (the CLI's Deleter with the console's selection)."""
    request = DeleteRequest(source=queue, selector=Selector(message_ids=ids))
    asked = connection.options(
        queue=queue.url,
        confirm=confirm,
        hide_seconds=request.hide_seconds,
        wait_seconds=request.wait_seconds,
        reserve=request.reserve,
        selection=len(ids),
    )
    action = connection.action("delete", asked, job.stop)

    def show(tally: DeleteTally) -> None:
        job.seen = tally.seen
        job.rows = [
            ("deleted", tally.deleted),
            ("skipped (not selected, given back)", tally.skipped),
            ("failed (still in the queue)", tally.failed),
            ("seen (received)", tally.seen),
        ]
        job.adds_up = tally.adds_up

    def work() -> int:
        check_confirmed(confirm, queue)
        deleter = Deleter(sqs, request, stop=job.stop, memory=ReceiveMemory.local())
        action.gate(queues=(queue.url,), selection_size=len(ids))
        tally = deleter.run(show)
        show(tally)
        if tally.stopped:
            job.lines.append(tally.stopped)
        action.tally(delete_json(queue, tally))
        action.leftover(hidden_until_text(tally.not_released, tally.hidden_until))
        if tally.interrupted:
            job.state = "stopped"
            job.lines.append(STOPPED_LINE)
            return EXIT_STOPPED
        return EXIT_FAILED if tally.failed or tally.stopped else EXIT_OK

    recorded(job, action, work)
