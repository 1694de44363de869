"""`export`: parked messages into a JSON Lines archive (`ops.archive`), a local file and/or an
S3 object; with `delete`, they leave the queue only once the archive is committed and uploaded.
An existing archive is continued, never overwritten: an interrupted `export --delete` is rerun.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from dlq_replay.core.kinds import RecordKind
from dlq_replay.ops.archive import ArchiveError, from_message, parse_line
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.receiving import ALL_KINDS, Receiving, in_parallel, usable_budget
from dlq_replay.ops.redrive import FailReason
from dlq_replay.ops.s3archive import ArchiveFile, S3Location, check_writable, existing_object
from dlq_replay.ops.select import Selector
from dlq_replay.sqs.depth import queue_depth

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


@dataclass(frozen=True, slots=True)
class ExportRequest:
    source: QueueInfo
    path: Path | None  # None: S3 only (the lines go through a temporary file)
    s3: S3Location | None = None
    limit: int | None = None
    selector: Selector = field(default_factory=Selector)
    delete: bool = False
    hide_seconds: int = 120
    wait_seconds: int = 1
    reserve: int = 1
    # The allowed targets (REPLAY_TARGET_ARNS): they name a `lambda` record's function.
    replay_targets: frozenset[str] = frozenset()
    accepted_kinds: frozenset[RecordKind] = ALL_KINDS  # the stack's DLQ_KIND's (ops.receiving)


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export did; `exported + already_archived + filtered + failed == examined`."""

    examined: int = 0
    exported: int = 0
    already_archived: int = 0  # in the archive from an earlier run: not written again
    filtered: int = 0
    failed: int = 0
    failures: Mapping[str, int] = field(default_factory=dict)
    deleted: int = 0
    not_deleted: int = 0  # exported, still in the queue: an import would send them twice
    not_released: int = 0
    stopped: str | None = None
    path: str | None = None
    s3_uri: str | None = None
    bytes: int = 0
    continued: int = 0  # records the archive held before this run
    interrupted: bool = False  # the stop token ended the receiving
    hidden_until: float | None = None  # when the `not_released` come back, at the latest
    partial: str | None = None  # why the read did not see the whole queue; None: it did
    expected: int | None = None  # messages in the queue before the read (visible, in flight)

    @property
    def adds_up(self) -> bool:
        archived = self.exported + self.already_archived
        return archived + self.filtered + self.failed == self.examined


class ExportPhase(StrEnum):
    RECEIVING = "receiving"  # the archive is not complete: nothing deleted
    ARCHIVED = "archived"  # the archive is complete (and uploaded); deleting or giving back


@dataclass(frozen=True, slots=True)
class ExportLeftover:
    """What an export abandoned mid-flight leaves behind."""

    phase: ExportPhase
    hidden: int  # received and not deleted (yet)
    hidden_until: float | None
    deleted: int  # confirmed deleted: these exist only in the archive
    archived: int  # records in the archive (this run's and an earlier run's)
    receiving_up_to: int = 0  # asked for by a receive in flight: hidden too if SQS answers
    receiving_until: float | None = None  # epoch seconds: when those come back at the latest
    settling: int = 0  # of `hidden`: a delete or a change back to visible of theirs in flight
    receives: int = 0  # ReceiveMessage calls in flight

    @property
    def at_most(self) -> int:
        """The most messages that can stay hidden."""
        return self.hidden + self.receiving_up_to


class Export:
    """One export run, checked before anything is received (with `delete`, a message may spend
    its last receive: it is deleted); `leftover` is safe to call from another thread."""

    def __init__(
        self,
        sqs: SQSClient,
        request: ExportRequest,
        *,
        s3: S3Client | None = None,
        now: Callable[[], float] = time.time,
        stop: threading.Event | None = None,
        memory: ReceiveMemory | None = None,
    ) -> None:
        if request.path is None and request.s3 is None:
            raise OpsError("name a file or an S3 object to export to", usage=True)
        if request.s3 is not None and s3 is None:
            raise OpsError("an S3 export needs an S3 client")
        if request.path is not None and request.path.is_dir():
            raise OpsError(f"{request.path} is a directory", usage=True)
        self.earlier = b""  # the archive this run continues
        if request.path is not None and request.path.exists():
            self.earlier = request.path.read_bytes()
        elif request.s3 is not None and s3 is not None:
            self.earlier = existing_object(s3, request.s3, delete=request.delete)
        self.archived = _archived_ids(self.earlier, request.path or request.s3)
        if request.s3 is not None and s3 is not None:
            check_writable(s3, request.s3)
        budget = usable_budget(sqs, request.source, request.reserve)
        if memory is not None and budget is not None:
            memory.check(request.source, budget, takes_all=request.delete)
        depth = queue_depth(sqs, request.source.url)
        self.expected = depth.visible + depth.in_flight  # in the queue before the read
        self.receiving = Receiving(
            sqs, request.source.url, budget, request.hide_seconds, request.wait_seconds, stop=stop
        )
        self.request, self.s3, self.now = request, s3, now
        self.memory = memory  # what the read saw goes there
        self.phase = ExportPhase.RECEIVING
        self.already: list[str] = []  # of the archived ids, the ones received again
        self.exported: list[str] = []
        self.filtered = self.deleted = self.not_deleted = self.not_released = self.bytes = 0
        self.deleting = 0  # in a delete request in flight
        self.failures: Counter[str] = Counter()
        self._lock = threading.Lock()  # the deletes go several at once

    def run(
        self,
        on_progress: Callable[[ExportResult], None] | None = None,
        on_archived: Callable[[], None] | None = None,
    ) -> ExportResult:
        """The export; `on_archived` is called once the archive is complete."""
        request, receiving = self.request, self.receiving
        try:
            with ArchiveFile(request.path, self.earlier) as archive:
                for batch in receiving.batches(request.limit, self.selected):
                    for message in batch:
                        self.write(archive, message)
                    if on_progress is not None:
                        on_progress(self.result())
                # The rest at once: only the exported wait for the archive.
                self.not_released += receiving.release(self.unexported())
                archive.commit()
                self.bytes = archive.size
                if request.s3 is not None and self.s3 is not None:
                    archive.upload(self.s3, request.s3)
                self.phase = ExportPhase.ARCHIVED
                if on_archived is not None:
                    on_archived()
                if request.delete:
                    self.delete()
        finally:
            self.not_released += receiving.release()
            if self.memory is not None:
                self.memory.record(request.source, receiving.sighting)
        return self.result()

    def leftover(self) -> ExportLeftover:
        receiving = self.receiving
        # Read before the handles: a receive that ends meanwhile is then counted twice, never
        # missed (an upper bound); a release in flight still counts the messages it names.
        asked, releasing, receives = (
            receiving.receiving_up_to,
            receiving.releasing,
            receiving.receives,
        )
        answered_by = time.time() + receiving.wait_seconds + receiving.hide_seconds
        return ExportLeftover(
            phase=self.phase,
            hidden=len(receiving.handles) + releasing,
            hidden_until=receiving.hidden_until,
            deleted=self.deleted,
            archived=len(self.exported) + len(self.archived),
            receiving_up_to=asked,
            receiving_until=answered_by if asked else None,
            settling=releasing + self.deleting,
            receives=receives if asked else 0,
        )

    def selected(self, message: MessageTypeDef) -> bool:
        chosen = self.request.selector.takes(message, self.now())
        self.filtered += not chosen
        return chosen

    def write(self, archive: ArchiveFile, message: MessageTypeDef) -> None:
        if message["MessageId"] in self.archived:
            self.already.append(message["MessageId"])
            return
        record = from_message(message, self.request.replay_targets, self.request.accepted_kinds)
        if isinstance(record, FailReason):
            self.failures[record] += 1
            return
        archive.write(record.to_line())
        self.exported.append(record.message_id)

    def unexported(self) -> list[str]:
        written = set(self.exported) | set(self.already)
        return [m for m in self.receiving.handles if m not in written]

    def delete(self) -> None:
        """Delete what the archive holds, 10 a request and several at once."""
        handles = self.receiving.handles
        in_hand: list[MessageTypeDef] = [
            {"MessageId": m, "ReceiptHandle": handles[m]}
            for m in [*self.already, *self.exported]
            if m in handles
        ]
        in_parallel(in_hand, self._delete)

    def _delete(self, batch: list[MessageTypeDef]) -> int:
        with self._lock:
            self.deleting += len(batch)
        try:
            done = self.receiving.delete(batch)
        finally:
            with self._lock:
                self.deleting -= len(batch)
        with self._lock:
            self.deleted += len(done)
            self.not_deleted += len(batch) - len(done)
        return len(done)

    def result(self) -> ExportResult:
        request = self.request
        archived = len(self.exported) + len(self.already)
        return ExportResult(
            examined=archived + self.filtered + sum(self.failures.values()),
            exported=len(self.exported),
            already_archived=len(self.already),
            filtered=self.filtered,
            failed=sum(self.failures.values()),
            failures=dict(self.failures),
            deleted=self.deleted,
            not_deleted=self.not_deleted,
            not_released=self.not_released,
            stopped=self.receiving.stopped,
            path=str(request.path) if request.path is not None else None,
            s3_uri=str(request.s3) if request.s3 is not None else None,
            bytes=self.bytes,
            continued=len(self.archived),
            interrupted=bool(self.receiving.stop and self.receiving.stop.is_set()),
            hidden_until=self.receiving.hidden_until if self.not_released else None,
            partial=self.receiving.partial,
            expected=self.expected,
        )


def _archived_ids(earlier: bytes, where: object) -> set[str]:
    """The message ids of an archive to continue; OpsError when it is not one."""
    ids: set[str] = set()
    for number, line in enumerate(earlier.splitlines(), 1):
        if not line.strip():
            continue
        try:
            ids.add(parse_line(line.decode("utf-8")).message_id)
        except (ArchiveError, UnicodeDecodeError) as error:
            raise OpsError(
                f"{where} exists and is not an export archive (line {number}: {error}); "
                "export continues an archive but never overwrites another file",
                usage=True,
            ) from None
    return ids
