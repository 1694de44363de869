"""Where an export's archive goes: its file (`ArchiveFile`) and its S3 object (`S3Location`,
`check_writable`, and `existing_object`, the archive an export continues rather than
replaces)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.ops.opserror import OpsError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

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


def check_writable(s3: S3Client, location: S3Location) -> None:
    """Whether the export may write its object, before a single message is received: a
    multipart upload at the very key, aborted at once, is authorised as s3:PutObject (and needs
    the bucket's KMS key) and writes no object. HeadBucket would prove only s3:ListBucket; a
    test PUT would need s3:DeleteObject to clean up."""
    try:
        upload = s3.create_multipart_upload(
            Bucket=location.bucket, Key=location.key, ContentType=CONTENT_TYPE
        )
    except (ClientError, BotoCoreError) as error:
        raise OpsError(
            f"cannot write {location}: {_s3_reason(error)}; nothing was received or deleted"
        ) from None
    with contextlib.suppress(ClientError, BotoCoreError):
        s3.abort_multipart_upload(
            Bucket=location.bucket, Key=location.key, UploadId=upload["UploadId"]
        )


def _s3_reason(error: ClientError | BotoCoreError) -> str:
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        return f"{info.get('Code', 'error')}: {info.get('Message', '')}".rstrip(": ")
    return str(error)


def existing_object(s3: S3Client, location: S3Location, *, delete: bool) -> bytes:
    """The archive already at `location` (continued by this export), or nothing."""
    try:
        return s3.get_object(Bucket=location.bucket, Key=location.key)["Body"].read()
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        # A missing bucket is check_writable's to report; without `delete` the messages stay
        # in the queue, so replacing an archive unread loses nothing.
        if code in {"NoSuchKey", "404", "NoSuchBucket"} or not delete:
            return b""
        raise OpsError(
            f"cannot tell whether {location} holds an earlier archive ({_s3_reason(error)}): "
            "with --delete an export to S3 continues it rather than replace it; allow "
            "s3:GetObject on it or export to a --file too; nothing was received or deleted"
        ) from None


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
