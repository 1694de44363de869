"""What the console's domain code (state, jobs, snapshots) raises when a request cannot be
served: plain exceptions that name the problem in one line. The web layer (`app`) alone turns
them into HTTP answers (404, 400, 409), so no Flask call sits below the routes."""

from __future__ import annotations


class ConsoleRequestError(Exception):
    """A request the console cannot serve; `str()` is the line the page shows."""

    status = 400


class NotFoundError(ConsoleRequestError):
    """No such queue, action or download."""

    status = 404


class BadRequestError(ConsoleRequestError):
    """The form or query makes no sense (nothing selected, an age that is no duration)."""


class RefusedReadError(ConsoleRequestError):
    """A read that could exhaust a remembered message's receives (the line says which)."""

    status = 409
