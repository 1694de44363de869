"""The file an export writes (`ops.export`): the lines go to `PATH.part`, which becomes PATH
only once flushed and fsync'ed, so PATH, when it exists, is a complete archive."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

from dlq_replay.ops.s3archive import CONTENT_TYPE, S3Location

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class ArchiveFile:
    """The lines go to `PATH.part` and become PATH only once flushed and fsync'ed: PATH, when
    it exists, is complete. Without a PATH, to an anonymous temporary file (for S3). The file
    starts with `earlier`, the archive this run continues."""

    def __init__(self, path: Path | None, earlier: bytes = b"") -> None:
        self.path = path
        self.part = path.with_name(f"{path.name}.part") if path is not None else None
        # Closed by __exit__: this class is the context manager.
        self.file: IO[bytes] = (
            self.part.open("wb") if self.part is not None else tempfile.TemporaryFile()  # noqa: SIM115
        )
        if earlier and not earlier.endswith(b"\n"):
            earlier += b"\n"
        self.file.write(earlier)
        self.size = len(earlier)
        self.committed = False

    def __enter__(self) -> ArchiveFile:
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
