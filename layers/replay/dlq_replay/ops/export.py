"""`export`: parked messages into a JSON Lines archive (`ops.archive`), a local file and/or an
S3 object; with `delete`, the messages leave the queue only once the archive is safe.

Order of one run: receive (within the receive budget, every message once, kept hidden), write
each selected message's line to `PATH.part`; give back the messages not exported (filtered,
unwritable) at once; flush, `os.fsync` and rename the file to PATH (and fsync its folder);
`put_object` it to S3; only then delete the exported messages (`delete`) or give them back.
Any failure before the delete gives every message back and deletes nothing.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from dlq_replay.core import attributes
from dlq_replay.ops.archive import from_message
from dlq_replay.ops.errors import OpsError
from dlq_replay.ops.queues import QueueInfo
from dlq_replay.ops.receiving import Receiving, usable_budget
from dlq_replay.ops.redrive import FailReason
from dlq_replay.ops.select import Selector
from dlq_replay.sqs.sending import delete_messages

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

CONTENT_TYPE = "application/x-ndjson"


@dataclass(frozen=True, slots=True)
class S3Location:
    bucket: str
    key: str

    @classmethod
    def parse(cls, uri: str) -> S3Location:
        """`s3://bucket/key`; ValueError otherwise."""
        bucket, _, key = uri.removeprefix("s3://").partition("/")
        if not uri.startswith("s3://") or not bucket or not key or key.endswith("/"):
            raise ValueError(f"{uri!r} is not s3://BUCKET/KEY")
        return cls(bucket, key)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


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


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export did; `exported + filtered + failed == examined` always holds."""

    examined: int = 0
    exported: int = 0
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

    @property
    def adds_up(self) -> bool:
        return self.exported + self.filtered + self.failed == self.examined


def export(
    sqs: SQSClient,
    request: ExportRequest,
    *,
    s3: S3Client | None = None,
    on_progress: Callable[[ExportResult], None] | None = None,
    now: Callable[[], float] = time.time,
) -> ExportResult:
    """Write the selected messages of `request.source` to the archive; see the module."""
    if request.path is None and request.s3 is None:
        raise OpsError("name a file or an S3 object to export to", usage=True)
    if request.path is not None and request.path.exists():
        raise OpsError(f"{request.path} exists: export never overwrites an archive", usage=True)
    if request.s3 is not None and s3 is None:
        raise OpsError("an S3 export needs an S3 client")
    budget = usable_budget(sqs, request.source, request.reserve)
    receiving = Receiving(
        sqs, request.source.url, budget, request.hide_seconds, request.wait_seconds
    )
    run = _Run(request, receiving, now)
    try:
        with _ArchiveFile(request.path) as archive:
            for batch in receiving.batches(request.limit, run.selected):
                for message in batch:
                    run.write(archive, message)
                if on_progress is not None:
                    on_progress(run.result())
            # The rest at once: only the exported wait for the archive.
            run.not_released += receiving.release(run.unexported())
            archive.commit()
            run.bytes = archive.size
            if request.s3 is not None and s3 is not None:
                archive.upload(s3, request.s3)
            if request.delete:
                run.delete()
    finally:
        run.not_released += receiving.release()
    return run.result()


class _Run:
    """The counts of one export, and the ids it wrote."""

    def __init__(
        self, request: ExportRequest, receiving: Receiving, now: Callable[[], float]
    ) -> None:
        self.request = request
        self.receiving = receiving
        self.now = now
        self.exported: list[str] = []
        self.filtered = 0
        self.failures: Counter[str] = Counter()
        self.deleted = 0
        self.not_deleted = 0
        self.not_released = 0
        self.bytes = 0

    def selected(self, message: MessageTypeDef) -> bool:
        request = self.request
        values = attributes.from_sqs(message.get("MessageAttributes")).values
        chosen = request.selector.empty or request.selector.matches(message, values, self.now())
        self.filtered += not chosen
        return chosen

    def write(self, archive: _ArchiveFile, message: MessageTypeDef) -> None:
        record = from_message(message)
        if isinstance(record, FailReason):
            self.failures[record] += 1
            return
        archive.write(record.to_line())
        self.exported.append(record.message_id)

    def unexported(self) -> list[str]:
        written = set(self.exported)
        return [m for m in self.receiving.handles if m not in written]

    def delete(self) -> None:
        handles = self.receiving.handles
        in_hand: list[MessageTypeDef] = [
            {"MessageId": m, "ReceiptHandle": handles[m]} for m in self.exported if m in handles
        ]
        refused = set(delete_messages(self.receiving.sqs, self.receiving.url, in_hand))
        done = [m["MessageId"] for m in in_hand if m["MessageId"] not in refused]
        self.receiving.forget(done)
        self.deleted = len(done)
        self.not_deleted = len(self.exported) - len(done)

    def result(self) -> ExportResult:
        request = self.request
        return ExportResult(
            examined=len(self.exported) + self.filtered + sum(self.failures.values()),
            exported=len(self.exported),
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
        )


class _ArchiveFile:
    """The lines go to `PATH.part` and become PATH only once flushed and fsync'ed: PATH, when
    it exists, is complete. Without a PATH, to an anonymous temporary file (for S3)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.part = path.with_name(f"{path.name}.part") if path is not None else None
        # Closed by __exit__: this class is the context manager.
        self.file: IO[bytes] = (
            self.part.open("wb") if self.part is not None else tempfile.TemporaryFile()  # noqa: SIM115
        )
        self.size = 0
        self.committed = False

    def __enter__(self) -> _ArchiveFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()
        if self.part is not None and not self.committed:
            self.part.unlink(missing_ok=True)

    def write(self, line: str) -> None:
        data = line.encode("utf-8")
        self.file.write(data)
        self.size += len(data)

    def commit(self) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        if self.path is None or self.part is None:
            return
        self.file.close()
        os.replace(self.part, self.path)
        self.committed = True
        if os.name == "posix":  # the rename itself, on disk
            folder = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)

    def upload(self, s3: S3Client, location: S3Location) -> None:
        """PUT the committed lines as one object (PutObject takes up to 5 GB)."""
        with self.path.open("rb") if self.path is not None else self.file as body:
            body.seek(0)
            s3.put_object(
                Bucket=location.bucket, Key=location.key, Body=body, ContentType=CONTENT_TYPE
            )
