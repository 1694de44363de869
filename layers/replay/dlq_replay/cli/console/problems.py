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
    """The form or query asks for something that makes no sense (nothing selected, an age that
    is no duration, an unknown destination)."""

    status = 400


class RefusedReadError(ConsoleRequestError):
    """A read the console will not make now: it could exhaust a remembered message's receives
    (the receive memory's line says which, and what to do)."""

    status = 409
