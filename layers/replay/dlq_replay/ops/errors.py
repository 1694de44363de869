"""The one error the operator's operations raise: a line for the user."""

from __future__ import annotations


class OpsError(Exception):
    """An operation that cannot go on; one line for the user. `usage` marks a bad request."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage
