"""The one error the operator's operations raise: a line for the user."""

from __future__ import annotations


class OpsError(Exception):
    """An operation that cannot go on; one line for the user. `usage` marks a bad request."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


class QueueNotFoundError(OpsError):
    """A queue the command names does not exist (or is in another region): named, by URL."""

    def __init__(self, url: str, operation: str, message: str) -> None:
        super().__init__(f"queue not found ({operation}): {url}: {message}")
        self.url = url
