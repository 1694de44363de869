"""Every failure of a command as one line a human can act on, and its exit code: 0 ok, 1 failed,
2 usage."""

from __future__ import annotations

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

from dlq_replay.core.settings import SettingsError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class CommandError(Exception):
    """A failure worth one line to the user; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def describe_error(error: Exception) -> tuple[str, int]:
    """One line a human can act on, and the exit code."""
    if isinstance(error, CommandError):
        return str(error), error.code
    if isinstance(error, SettingsError):
        return str(error), EXIT_USAGE
    if isinstance(error, NoCredentialsError):
        return (
            "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY, or pass --profile",
            EXIT_FAILED,
        )
    if isinstance(error, NoRegionError):
        return "no AWS region: pass --region or set AWS_DEFAULT_REGION", EXIT_USAGE
    if isinstance(error, ProfileNotFound):
        return str(error), EXIT_USAGE
    if isinstance(error, (BotoConnectionError, HTTPClientError)):
        # botocore names the URL it tried; the retries behind it are the client's config.
        return (
            f"cannot reach the endpoint: {error} (check --endpoint-url, --region and the network)",
            EXIT_FAILED,
        )
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        code = str(info.get("Code", ""))
        operation = error.operation_name
        if "NonExistentQueue" in code or code == "QueueDoesNotExist":
            return f"queue not found ({operation}): {info.get('Message', code)}", EXIT_FAILED
        if code in {"AccessDenied", "AccessDeniedException", "AuthorizationError"}:
            return f"access denied ({operation}): {info.get('Message', code)}", EXIT_FAILED
        if code == "ValidationError" and "does not exist" in str(info.get("Message", "")):
            return f"not found ({operation}): {info.get('Message')}", EXIT_FAILED
        return f"{operation} failed: {code}: {info.get('Message', '')}", EXIT_FAILED
    return f"{type(error).__name__}: {error}", EXIT_FAILED


def one_line(error: ClientError | BotoCoreError) -> tuple[str, int]:
    """describe_error's line, and never more than one: an endpoint that answers with an HTML
    page (an emulator without the operation) is reported by its HTTP status."""
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        if "<" in str(info.get("Message", "")) or str(info.get("Code", "")).isdigit():
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
            return f"{error.operation_name} failed: the endpoint answered HTTP {status}", 1
    message, code = describe_error(error)
    return " ".join(message.split()), code


def error_code(error: Exception) -> str:
    """The error code a log line can name: SQS's own, else the exception's class."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "error"))
    return type(error).__name__
