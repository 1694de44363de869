"""What the console's domain code (state, jobs, snapshots) raises when a request cannot be
served: plain exceptions that name the problem in one line. The web layer (`app`) alone turns
them into HTTP answers (404, 400, 409), so no Flask call sits below the routes."""

from __future__ import annotations


class ConsoleProblem(Exception):
    """A request the console cannot serve; `str()` is the line the page shows."""

    status = 400


class NotFound(ConsoleProblem):
    """No such queue, action or download."""

    status = 404


class BadRequest(ConsoleProblem):
    """The form or query asks for something that makes no sense (nothing selected, an age that
    is no duration, an unknown destination)."""

    status = 400


class Refused(ConsoleProblem):
    """A well-formed request the console will not carry out now (a read that could exhaust a
    message's receives, an action on a read-only console)."""

    status = 409
