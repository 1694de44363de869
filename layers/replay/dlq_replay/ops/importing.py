"""`import`: send the records of an archive (`ops.archive`) to a queue, resumably.

Records go out in batches in file order (a FIFO group keeps its order). After each request the
ids SQS took are appended to `PATH.progress` and fsync'ed; a rerun skips every id listed there.
A crash between a send and its progress line sends that batch again: at least once (on a FIFO
queue the deduplication id `<message_id>-import` absorbs a rerun within SQS's five minutes).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from dlq_replay.core.decision import sqs_copy
from dlq_replay.core.messages import InboundMessage, OutboundMessage
from dlq_replay.core.queues import is_fifo_url
from dlq_replay.ops.archive import ArchiveError, ArchiveRecord, parse_line
from dlq_replay.ops.movefollow import MoveFollower, tag_carried
from dlq_replay.ops.pacing import PaceReport, PaceStop, UntilFailing, make_pace
from dlq_replay.ops.queueinfo import QueueInfo, source_queue_url
from dlq_replay.ops.redrive import FailReason, SkipReason
from dlq_replay.sqs.sending import BatchSender

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

ALREADY_IMPORTED = "already-imported"  # listed in the progress file
REPEATED = "repeated-in-file"  # a message id a line above already had


@dataclass(frozen=True, slots=True)
class ImportRequest:
    path: Path
    destination: QueueInfo | None  # None: each record's source queue (`source_arn`)
    reset_count: bool = False
    count_attribute: str = ""  # dropped with reset_count
    rate: float | None = None  # messages per second
    until_failing: UntilFailing | None = None  # adaptive pace, watching the DLQ
    # The action id each copy carries in `dlq-replay-action` (follow/): None, not followed.
    follow_id: str | None = None

    @property
    def progress_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.progress")


@dataclass(frozen=True, slots=True)
class ImportFailure:
    line: int
    message_id: str | None  # None: the line is not a record
    reason: str


@dataclass(frozen=True, slots=True)
class ImportTally:
    """What an import did; `sent + skipped + failed + unsettled == read` always holds, and
    `unsettled` (read, being sent: the tally of a run abandoned mid-send) is 0 once it ends."""

    read: int = 0
    sent: int = 0
    skipped: int = 0
    failed: int = 0
    skips: Mapping[str, int] = field(default_factory=dict)
    failures: tuple[ImportFailure, ...] = ()
    stopped: PaceStop | None = None  # why --until-failing stopped it (a rerun continues)
    interrupted: bool = False  # the stop token ended it (a rerun continues)
    pace: PaceReport | None = None
    unsettled: int = 0

    @property
    def adds_up(self) -> bool:
        return self.sent + self.skipped + self.failed + self.unsettled == self.read


class Importer:
    """One import; `sending` (the records of the request in flight) is safe to read from another
    thread while `run` goes on."""

    def __init__(
        self,
        sqs: SQSClient,
        request: ImportRequest,
        *,
        stop: threading.Event | None = None,
        follower: MoveFollower | None = None,
    ) -> None:
        self.request = request
        self.follower = follower  # the move's follow record: its start, counts and end
        self.sqs = sqs
        self.stop = stop or threading.Event()
        self.source_urls: dict[str, str | None] = {}
        self.sender = BatchSender(sqs)
        self.done = _imported(request.progress_path)
        self.claimed: set[str] = set()
        self.progress: IO[str] | None = None
        self.sending = 0
        self.drop = frozenset([request.count_attribute] if request.reset_count else [])
        self.pending: list[tuple[int, OutboundMessage]] = []
        self.read = 0
        self.sent = 0
        self.skips: Counter[str] = Counter()
        self.failures: list[ImportFailure] = []
        wait = self.stop.wait  # a wait for the pace ends at once on a stop
        self.pace = make_pace(sqs, request.rate, request.until_failing, time.monotonic, wait)
        self.stopped: PaceStop | None = None
        self.interrupted = False

    def run(self, on_progress: Callable[[ImportTally], None] | None = None) -> ImportTally:
        if self.follower is not None:
            self.follower.start()
        try:
            with self.request.path.open("rb") as source:
                for number, line in enumerate(source, 1):
                    if not line.strip():
                        continue
                    self.take(number, line)
                    if len(self.pending) >= self.pace.batch_size:
                        self.send()
                        if on_progress is not None:
                            on_progress(self.tally())
                    if self.stopped is not None or self.interrupted:
                        break
                else:
                    self.send()
        finally:
            if self.progress is not None:
                self.progress.close()
            if self.follower is not None:
                self.follower.finish(self.source_urls.values())
        return self.tally()

    def take(self, number: int, line: bytes) -> None:
        """Read one non-blank line: a record to send, skip, or a failure."""
        self.read += 1
        try:
            record = parse_line(line.decode("utf-8"))
        except (UnicodeDecodeError, ArchiveError) as error:
            why = f"not UTF-8: {error.reason}" if isinstance(error, UnicodeDecodeError) else error
            self.failures.append(ImportFailure(number, None, str(why)))
            return
        if record.message_id in self.done or record.message_id in self.claimed:
            self.skips[ALREADY_IMPORTED if record.message_id in self.done else REPEATED] += 1
            return
        self.claimed.add(record.message_id)
        failure = self._queue(number, record)
        if failure is not None:
            self.failures.append(ImportFailure(number, record.message_id, failure))

    def _queue(self, number: int, record: ArchiveRecord) -> str | None:
        """Add the record's copy to what is pending; why it cannot be sent."""
        if self.request.destination is not None:
            queue_url = self.request.destination.url
        elif not record.source_arn:
            return f"{SkipReason.NO_SOURCE}: the record names no source queue"
        elif (found := source_queue_url(self.sqs, record.source_arn, self.source_urls)) is None:
            return f"{SkipReason.NO_SOURCE}: not found"
        else:
            queue_url = found
        group = record.message_group_id or None
        if group is None and is_fifo_url(queue_url):
            return FailReason.MISSING_GROUP.value
        # The record as it was, but for `drop` (the count with --reset-count), by the replay's
        # builder; a FIFO queue's deduplication id `<message id>-import` absorbs a rerun.
        message = InboundMessage(
            record.message_id,
            "",
            record.body,
            record.attributes,
            "",
            message_group_id=group,
            trace_header=record.aws_trace_header,
        )
        carried = {k: v for k, v in record.attributes.items() if k not in self.drop}
        if self.request.follow_id is not None:  # the move's tag, where a slot is free
            carried = tag_carried(record.body, carried, self.request.follow_id, record.message_id)
        self.pending.append((number, sqs_copy(message, queue_url, carried, "import")))
        return None

    def send(self) -> None:
        """Send what is pending (one SendMessageBatch, or more when over 1 MiB), then list
        what SQS took in the progress file."""
        if not self.pending:
            return
        if not self.pace.acquire(len(self.pending)) or self.stop.is_set():
            # Not sent, so not read: a rerun starts with these.
            self.stopped = self.pace.stopped
            self.interrupted = self.stop.is_set()
            self.read -= len(self.pending)
            self.claimed.difference_update(message.record_id for _, message in self.pending)
            self.pending.clear()
            return
        self.sending = len(self.pending)
        try:
            failed = self.sender.send([message for _, message in self.pending])
        finally:
            self.sending = 0
        taken: list[str] = []
        for number, message in self.pending:
            failure = failed.get(message.record_id)
            if failure is None:
                taken.append(message.record_id)
            else:
                reason = f"{failure.code}: {failure.message}" if failure.message else failure.code
                self.failures.append(ImportFailure(number, message.record_id, reason))
        if self.follower is not None:
            self.follower.count(m for _, m in self.pending if m.record_id not in failed)
        self.pending.clear()
        if taken:
            if self.progress is None:
                self.progress = self.request.progress_path.open("a", encoding="utf-8")
            self.progress.write("".join(f"{message_id}\n" for message_id in taken))
            self.progress.flush()
            os.fsync(self.progress.fileno())
            self.done.update(taken)
            self.sent += len(taken)

    def tally(self) -> ImportTally:
        return ImportTally(
            read=self.read,
            sent=self.sent,
            skipped=sum(self.skips.values()),
            failed=len(self.failures),
            skips=dict(self.skips),
            failures=tuple(self.failures),
            stopped=self.stopped,
            interrupted=self.interrupted,
            pace=self.pace.report(),
            unsettled=len(self.pending),
        )


def _imported(path: Path) -> set[str]:
    """The message ids a progress file lists (none when there is no file yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    return {line.strip() for line in text.splitlines() if line.strip()}
