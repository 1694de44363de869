"""The S3 side of `export`: where the archive goes (`S3Location`), whether it may be written
there before anything is received (`check_writable`), and the archive already there, which an
export continues rather than replaces (`existing_object`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    """Whether the export may write its object, before a single message is received.

    A multipart upload is created at the very key and aborted at once: it is authorised as
    s3:PutObject on that key (and needs the bucket's KMS key, as the real PUT does), and writes
    no object, so nothing is overwritten and nothing is left to delete. HeadBucket would prove
    only s3:ListBucket; a test PUT would need s3:DeleteObject to clean up. A refused abort
    (no s3:AbortMultipartUpload) leaves an empty upload that a lifecycle rule removes.
    """
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
        if code in {"NoSuchKey", "404", "NoSuchBucket"}:
            return b""  # a missing bucket is check_writable's to report
        if not delete:
            return b""
        raise OpsError(
            f"cannot tell whether {location} holds an earlier archive ({_s3_reason(error)}): "
            "with --delete an export to S3 continues it rather than replace it; allow "
            "s3:GetObject on it or export to a --file too; nothing was received or deleted"
        ) from None
