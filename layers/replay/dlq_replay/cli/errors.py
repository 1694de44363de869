"""Every failure of a command as one line a human can act on, and its exit code: 0 ok, 1 failed,
2 usage."""

from __future__ import annotations

import argparse
import functools

import boto3
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    InvalidRegionError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.parsers import ResponseParserError

from dlq_replay.cli.parsing import Run
from dlq_replay.core.queues import url_region
from dlq_replay.core.settings import SETTING, SettingsError
from dlq_replay.local.answers import ForeignAnswerError, NoAnswerError

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
        row = SETTING.get(error.variable)
        if row is None or row.option in str(error):
            return str(error), EXIT_USAGE
        return f"{error} (pass {row.option} or set {error.variable})", EXIT_USAGE
    if isinstance(error, ClientError):
        return _client_error_line(error), EXIT_FAILED
    for kinds, line, code in _BOTOCORE_LINES:
        if isinstance(error, kinds):
            # {1}: botocore's first line of an answer that goes on with a whole HTML page.
            return line.format(error, "".join(str(error).splitlines()[:1])), code
    return f"{type(error).__name__}: {error}", EXIT_FAILED


# botocore's errors that are not an AWS service's answer: (types, the line, the exit code).
_BOTOCORE_LINES: tuple[tuple[type[Exception] | tuple[type[Exception], ...], str, int], ...] = (
    (
        NoCredentialsError,
        "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
        "or pass --profile",
        EXIT_FAILED,
    ),
    (NoRegionError, "no AWS region: pass --region or set AWS_DEFAULT_REGION", EXIT_USAGE),
    (
        InvalidRegionError,
        "{0} (pass --region or set AWS_DEFAULT_REGION, e.g. us-east-1)",
        EXIT_USAGE,
    ),
    (ProfileNotFound, "{0}", EXIT_USAGE),
    # An answer that is not the service's, or none within the read timeout (local.answers):
    # the endpoint, the operation and what came back, in the error's own line.
    ((ForeignAnswerError, NoAnswerError), "{0}", EXIT_FAILED),
    # botocore names the URL it tried; the retries behind it are the client's config.
    (
        (BotoConnectionError, HTTPClientError),
        "cannot reach the endpoint: {0} (check --endpoint-url, --region and the network)",
        EXIT_FAILED,
    ),
    (ResponseParserError, "the endpoint's answer is not an AWS response: {1}", EXIT_FAILED),
)


def _client_error_line(error: ClientError) -> str:
    """An AWS service's refusal: what it refused, and the service's own words."""
    info = error.response.get("Error", {})
    code = str(info.get("Code", ""))
    operation = error.operation_name
    if _queue_not_found(error):
        return f"queue not found ({operation}): {info.get('Message', code)}"
    if code in {"AccessDenied", "AccessDeniedException", "AuthorizationError"}:
        return f"access denied ({operation}): {info.get('Message', code)}"
    if code == "ValidationError" and "does not exist" in str(info.get("Message", "")):
        return f"not found ({operation}): {info.get('Message')}"
    return f"{operation} failed: {code}: {info.get('Message', '')}"


def one_line(error: ClientError | BotoCoreError | ResponseParserError) -> tuple[str, int]:
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


def file_error(error: OSError, then: str) -> str:
    """A file that could not be read or written, and what that means for the messages."""
    where = f"{error.filename}: " if error.filename else ""
    return f"{where}{error.strerror or error} ({then})"


def operator_command(run: Run) -> Run:
    """Turn the logic's refusals (OpsError) into the CLI's one-line errors."""
    # Imported here, with the operations that raise it: importing it loads every operation
    # (their package's names), which a command without any (the worker) need not pay for.
    from dlq_replay.ops.opserror import OpsError, QueueNotFoundError

    @functools.wraps(run)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except QueueNotFoundError as error:
            raise CommandError(str(error) + region_hint(args)) from None
        except OpsError as error:
            raise CommandError(str(error), EXIT_USAGE if error.usage else EXIT_FAILED) from None
        except (ClientError, BotoCoreError, ResponseParserError) as error:
            message, code = one_line(error)
            if _queue_not_found(error):
                message += region_hint(args)
            raise CommandError(message, code) from None

    return wrapper


def _queue_not_found(error: Exception) -> bool:
    code = error.response.get("Error", {}).get("Code", "") if isinstance(error, ClientError) else ""
    return "NonExistentQueue" in str(code) or code == "QueueDoesNotExist"


def region_hint(args: argparse.Namespace) -> str:
    """When a queue URL of the command names another region than the client's, say so: SQS
    answers such a request with a plain "queue does not exist"."""
    client_region = args.region or boto3.Session(profile_name=args.profile).region_name
    options = ("queue", "main_queue_url", "dlq_url", "operator_queue_url", "source", "destination")
    for url in (getattr(args, name, None) for name in options):
        region = url_region(url) if isinstance(url, str) else None
        if region and region != client_region:
            return (
                f" (the URL {url} names region {region}, the command used "
                f"{client_region}: pass --region {region})"
            )
    return ""
