"""`import`: send the records of an archive (`ops.archive`) to a queue, resumably.

Records go out in SendMessageBatch requests of up to 10, in file order (a FIFO group keeps its
order). After each request the ids SQS took are appended to `PATH.progress` (one message id a
line), flushed and fsync'ed; a rerun skips every id listed there, so an interrupted or partly
failed import is simply run again. A crash between a send and its progress line sends that
batch again: at least once (on a FIFO queue the deduplication id `<message_id>-import` absorbs
a rerun within SQS's five-minute window).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from dlq_replay.core.messages import OutboundMessage
from dlq_replay.ops.archive import ArchiveError, parse_line
from dlq_replay.ops.pacing import PaceReport, UntilFailing, make_pace
from dlq_replay.ops.queues import QueueInfo, source_queue_url
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

    @property
    def progress_path(self) -> Path:
        return progress_path(self.path)


@dataclass(frozen=True, slots=True)
class ImportFailure:
    line: int
    message_id: str | None  # None: the line is not a record
    reason: str


@dataclass(frozen=True, slots=True)
class ImportTally:
    """What an import did; `sent + skipped + failed == read` once it has finished."""

    read: int = 0
    sent: int = 0
    skipped: int = 0
    failed: int = 0
    skips: Mapping[str, int] = field(default_factory=dict)
    failures: tuple[ImportFailure, ...] = ()
    stopped: str | None = None  # why --until-failing stopped it (a rerun continues)
    pace: PaceReport | None = None

    @property
    def adds_up(self) -> bool:
        return self.sent + self.skipped + self.failed == self.read


def progress_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.progress")


def import_archive(
    sqs: SQSClient,
    request: ImportRequest,
    *,
    on_progress: Callable[[ImportTally], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ImportTally:
    """Send every record of the archive not imported yet; see the module."""
    done = _imported(request.progress_path)
    with (
        request.path.open("rb") as source,
        request.progress_path.open("a", encoding="utf-8") as progress,
    ):
        run = _Import(sqs, request, done=done, progress=progress, clock=clock, sleep=sleep)
        for number, line in _lines(source):
            run.take(number, line)
            if len(run.pending) >= run.pace.batch_size:
                run.send()
                if on_progress is not None:
                    on_progress(run.tally())
            if run.stopped is not None:
                break
        else:
            run.send()
    return run.tally()


class _Import:
    def __init__(
        self,
        sqs: SQSClient,
        request: ImportRequest,
        *,
        done: set[str],
        progress: IO[str],
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self.request = request
        self.sqs = sqs
        self.source_urls: dict[str, str | None] = {}
        self.sender = BatchSender(sqs)
        self.done = done
        self.claimed: set[str] = set()
        self.progress = progress
        self.drop = frozenset([request.count_attribute] if request.reset_count else [])
        self.pending: list[tuple[int, OutboundMessage]] = []
        self.read = 0
        self.sent = 0
        self.skips: Counter[str] = Counter()
        self.failures: list[ImportFailure] = []
        self.pace = make_pace(sqs, request.rate, request.until_failing, clock, sleep)
        self.stopped: str | None = None

    def take(self, number: int, line: bytes) -> None:
        """Read one non-blank line: a record to send, skip, or a failure."""
        self.read += 1
        try:
            record = parse_line(line.decode("utf-8"))
        except UnicodeDecodeError as error:
            self.failures.append(ImportFailure(number, None, f"not UTF-8: {error.reason}"))
            return
        except ArchiveError as error:
            self.failures.append(ImportFailure(number, None, str(error)))
            return
        if record.message_id in self.done:
            self.skips[ALREADY_IMPORTED] += 1
            return
        if record.message_id in self.claimed:
            self.skips[REPEATED] += 1
            return
        self.claimed.add(record.message_id)
        queue_url = self._queue_url(record.source_arn)
        if queue_url is None:
            why = "the record names no source queue" if not record.source_arn else "not found"
            self.failures.append(
                ImportFailure(number, record.message_id, f"{SkipReason.NO_SOURCE}: {why}")
            )
            return
        outcome = record.outbound(queue_url, drop=self.drop)
        if isinstance(outcome, FailReason):
            self.failures.append(ImportFailure(number, record.message_id, outcome.value))
            return
        self.pending.append((number, outcome))

    def _queue_url(self, source_arn: str | None) -> str | None:
        if self.request.destination is not None:
            return self.request.destination.url
        if not source_arn:
            return None
        return source_queue_url(self.sqs, source_arn, self.source_urls)

    def send(self) -> None:
        """Send what is pending (one SendMessageBatch, or more when over 1 MiB), then list
        what SQS took in the progress file."""
        if not self.pending:
            return
        if not self.pace.acquire(len(self.pending)):
            # Not sent, so not read: a rerun starts with these.
            self.stopped = self.pace.stopped
            self.read -= len(self.pending)
            self.claimed.difference_update(message.record_id for _, message in self.pending)
            self.pending.clear()
            return
        failed = self.sender.send([message for _, message in self.pending])
        taken: list[str] = []
        for number, message in self.pending:
            failure = failed.get(message.record_id)
            if failure is None:
                taken.append(message.record_id)
            else:
                reason = f"{failure.code}: {failure.message}" if failure.message else failure.code
                self.failures.append(ImportFailure(number, message.record_id, reason))
        self.pending.clear()
        if taken:
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
            pace=self.pace.report(),
        )


def _lines(source: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines, with their numbers (from 1)."""
    for number, line in enumerate(source, 1):
        if line.strip():
            yield number, line


def _imported(path: Path) -> set[str]:
    """The message ids a progress file lists (none when there is no file yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    return {line.strip() for line in text.splitlines() if line.strip()}
