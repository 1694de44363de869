"""The console's web application (Flask, Jinja2 with autoescape): pages over `Console`'s state.

Safety (docs/console.md, "Safety model"): every page lives under a secret path prefix,
`/<token>/`, which `token_prefix` moves into SCRIPT_NAME so that `url_for` puts it in every URL;
no cookie (a cookie reaches every port of the host, a URL only its own origin). The Host header
must name this server (DNS rebinding), every POST carry the CSRF token, every answer a strict
Content-Security-Policy (no inline script or style). Bodies are text to the autoescape; the
page's script swaps in fragments the server rendered, so each table has one renderer.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import secrets
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from flask import Flask, Response, jsonify, redirect, render_template, request, send_file, url_for
from werkzeug.exceptions import BadRequest, Forbidden, HTTPException, NotFound
from werkzeug.wrappers import Response as BaseResponse

from dlq_replay.cli.console.snapshot import PAGE_SIZE, Filter
from dlq_replay.cli.console.state import RefusedReadError
from dlq_replay.cli.errors import EXIT_USAGE, CommandError, describe_error
from dlq_replay.cli.output import duration
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.select import parse_duration

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from dlq_replay.cli.console.jobs import RedriveOrder
    from dlq_replay.cli.console.state import Console

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
NO_TOKEN = "no token: open the URL the console printed"  # noqa: S105 - a message
UNKNOWN_HOST = "unknown Host: open the URL the console printed (by name or IP address)"
# A page number past any queue's last page (SQLite's OFFSET is a 64-bit integer).
MAX_PAGE = 10_000_000
LOG = logging.getLogger("dlq_replay.console")


def host_allowed(host: str | None, names: Iterable[str], port: str) -> bool:
    """Whether a Host header names this server (a `--host` name, or any IP literal) with our
    port. A DNS-rebinding page's requests carry its own domain name in Host, never an IP
    literal, so any address of this machine may be used (`--host 0.0.0.0` by its LAN address)."""
    if not host:
        return False
    found = re.fullmatch(r"(\[[^\]]*\]|[^:\[\]]*)(?::(\d{1,5}))?", host.strip().lower())
    if found is None or (found.group(2) or "80") != port:
        return False
    name = found.group(1)
    bracketed = name.startswith("[")
    try:  # a colon only within brackets (the regex): IPv6 there, IPv4 without
        address = ipaddress.ip_address(name[1:-1] if bracketed else name)
        return address.version == (6 if bracketed else 4)
    except ValueError:
        return not bracketed and name in {n.lower() for n in names}


def token_prefix(app: WSGIApplication, console: Console) -> Callable[..., Iterable[bytes]]:
    """The token segment moves into SCRIPT_NAME: Flask routes the rest, `url_for` prefixes it."""
    token = console.token.encode()

    def prefixed(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        port = str(environ.get("SERVER_PORT", ""))
        if not host_allowed(environ.get("HTTP_HOST"), console.hosts, port):
            return _refusal(400, UNKNOWN_HOST)(environ, start_response)
        path = str(environ.get("PATH_INFO", ""))
        first, _, rest = path.removeprefix("/").partition("/")
        # PATH_INFO is bytes as latin-1 text (PEP 3333): back to bytes for a constant-time check.
        if not secrets.compare_digest(first.encode("latin-1", "replace"), token):
            return _refusal(403, NO_TOKEN)(environ, start_response)
        environ["SCRIPT_NAME"] = f"{environ.get('SCRIPT_NAME', '')}/{first}"
        environ["PATH_INFO"] = f"/{rest}"
        return app(environ, start_response)

    return prefixed


def _refusal(status: int, line: str) -> BaseResponse:
    return BaseResponse(f"{line}\n", status, mimetype="text/plain", headers=dict(SECURITY_HEADERS))


def create_app(console: Console) -> Flask:
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.config["MAX_CONTENT_LENGTH"] = 2_000_000
    app.jinja_env.autoescape = True  # every template, whatever its name
    app.jinja_env.globals.update(
        duration=_age,
        csrf=console.csrf,
        read_only=console.read_only,
        kinds_read=console.connection.kinds_line,
        page_size=PAGE_SIZE,
    )
    app.wsgi_app = token_prefix(app.wsgi_app, console)  # type: ignore[method-assign]

    @app.before_request
    def guard() -> None:
        if request.method != "POST":
            return
        sent = request.form.get("csrf") or request.headers.get("X-CSRF-Token", "")
        if not secrets.compare_digest(sent.encode("utf-8", "surrogatepass"), console.csrf.encode()):
            raise Forbidden("no CSRF token: reload the page")
        # A re-read is a read (it moves nothing, within the receive budget): allowed.
        if console.read_only and request.endpoint != "reread":
            raise Forbidden("read-only console: no action is accepted")

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.context_processor
    def everywhere() -> dict[str, Any]:
        return {"running": console.jobs.running()}

    _errors(app)
    _pages(app, console)
    _actions(app, console)
    return app


def _errors(app: Flask) -> None:
    """Every refusal as a page (`{"error": line}` under /api/); 500 only for a bug, logged."""

    @app.errorhandler(RefusedReadError)
    def refused(error: RefusedReadError) -> tuple[Any, int]:
        return _answer(error.status, str(error))

    @app.errorhandler(HTTPException)
    def http_problem(error: HTTPException) -> Any:
        if error.code is None or error.code < 400:
            return error
        return _answer(error.code, error.description or error.name)

    @app.errorhandler(ClientError)
    @app.errorhandler(BotoCoreError)
    @app.errorhandler(OpsError)
    @app.errorhandler(CommandError)
    def aws_problem(error: Exception) -> tuple[Any, int]:
        line, code = describe_error(error)
        usage = code == EXIT_USAGE or getattr(error, "usage", False)
        return _answer(400 if usage else 502, line)

    @app.errorhandler(Exception)
    def bug(error: Exception) -> tuple[Any, int]:
        LOG.error("console: %s %s failed", request.method, request.path, exc_info=error)
        return _answer(500, "the console failed (a bug): its terminal shows the details")


def _answer(status: int, line: str) -> tuple[Any, int]:
    line = " ".join(line.split())
    if request.path.startswith("/api/"):
        return jsonify({"error": line}), status
    try:
        return render_template("error.html", status=status, line=line), status
    except Exception:  # the error page itself failed: the line, as text
        LOG.exception("console: the error page failed")
        return Response(f"{line}\n", mimetype="text/plain"), status


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else duration(int(seconds))


def checked_filter(form: Any) -> Filter:
    """The form's filter; BadRequest naming the field for an age that is no duration."""
    selected = Filter.from_form(form)
    for name, value in (("older than", selected.older_than), ("newer than", selected.newer_than)):
        if value:
            try:
                parse_duration(value)
            except ValueError as error:
                raise BadRequest(f"{name}: {error}") from None
    return selected


def checked_rate(form: Any) -> None:
    text = str(form.get("rate", "")).strip()
    try:
        valid = not text or 0 < float(text) < 1e6
    except ValueError:
        valid = False
    if not valid:
        raise BadRequest(f"rate: {text[:40]!r} is no number of messages per second")


def safe_filename(given: str, default: str) -> str:
    """A download's name as a file name (no control, bidi or path characters), else `default`."""
    kept = "".join(
        "_" if char in "/\\" else char
        for char in given
        if unicodedata.category(char)[0] != "C" and unicodedata.category(char) not in {"Zl", "Zp"}
    )
    name = " ".join(kept.split())[:200].strip(" .")
    return name or default


def bar_chart(title: str, counts: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """Bars scaled to the largest, (label, count, width) each: chart.html draws them as SVG."""
    top = max((n for _, n in counts), default=0) or 1
    bars = [
        (label[:27] + "…" if len(label) > 28 else label, n, max(min(n, 1), round(190 * n / top)))
        for label, n in counts
    ]
    return {"title": title, "bars": bars}


def _pages(app: Flask, console: Console) -> None:
    # The page, its live part alone (the page's script swaps it in) and its JSON: one function.
    @app.get("/")
    @app.get("/fragments/overview", endpoint="overview_fragment")
    @app.get("/api/overview", endpoint="overview_json")
    def overview() -> Any:
        view = console.overview()
        if request.endpoint == "overview_json":
            rows = [{**asdict(row), "backlog": row.backlog} for row in view.rows]
            return jsonify({**asdict(view), "rows": rows})
        part = request.endpoint == "overview_fragment"
        return render_template("_overview_table.html" if part else "overview.html", view=view)

    @app.get("/q/<name>")
    def queue(name: str) -> tuple[str, int]:
        info = console.queue(name)
        snapshot, now = console.snapshot(info), time.time()
        view: dict[str, Any] = {"info": info, "snapshot": snapshot, "count": 0, "rows": []}
        page, status = min(max(0, request.args.get("page", 0, type=int)), MAX_PAGE), 200
        try:
            view["filter"] = selected = checked_filter(request.args)
        except BadRequest as error:
            view.update(filter=Filter.from_form(request.args), problem=error.description)
            status = 400
        if snapshot.ready and status == 200:
            count = snapshot.count(selected, now)
            page = min(page, max(0, count - 1) // PAGE_SIZE)
            view.update(
                count=count,
                rows=snapshot.rows(selected, now, page),
                reasons=bar_chart("park reasons", snapshot.groups("reason", selected, now)),
                kinds=bar_chart("kinds", snapshot.groups("kind", selected, now)),
                ages=bar_chart("ages", snapshot.ages(selected, now)),
            )
        if snapshot.ready:
            view.update(
                all_reasons=[r for r, _ in snapshot.groups("reason", Filter(), now)],
                all_kinds=[k for k, _ in snapshot.groups("kind", Filter(), now)],
            )
        recovery, recovery_problem = console.recovery(info)
        html = render_template(
            "queue.html",
            view=view,
            page=page,
            now=now,
            destinations=console.destinations(info),
            reread_refusal=console.reread_refusal(info),
            recovery=None if recovery is None else bar_chart(*recovery),
            recovery_problem=recovery_problem,
        )
        return html, status

    @app.get("/api/q/<name>/snapshot")
    def snapshot_json(name: str) -> Response:
        snapshot = console.snapshot(console.queue(name))
        return jsonify({"state": snapshot.state, "examined": snapshot.examined})

    @app.get("/jobs/<job_id>")
    @app.get("/jobs/<job_id>/fragment", endpoint="job_fragment")
    @app.get("/api/jobs/<job_id>", endpoint="job_json")
    def job(job_id: str) -> Any:
        found = console.job(job_id)
        if request.endpoint == "job_json":
            return jsonify(found.to_json())
        part = request.endpoint == "job_fragment"
        return render_template("_job.html" if part else "job.html", job=found)

    @app.get("/jobs/<job_id>/download")
    def download(job_id: str) -> Response:
        found = console.job(job_id)
        if found.download is None:
            raise NotFound("this action has no download (yet)")
        return send_file(
            found.download,
            mimetype="application/x-ndjson",
            as_attachment=True,
            download_name=found.download_name,
        )

    @app.get("/audit")
    def audit_page() -> str:
        actions, where, problem = console.audit_actions()
        return render_template("audit.html", actions=actions, where=where, problem=problem)


def _actions(app: Flask, console: Console) -> None:
    def go(job_id: str) -> BaseResponse:
        return redirect(url_for("job", job_id=job_id), code=303)

    def order(name: str) -> RedriveOrder:
        checked_filter(request.form)
        checked_rate(request.form)
        return console.order(console.queue(name), request.form)

    @app.post("/q/<name>/reread")
    def reread(name: str) -> BaseResponse:
        console.snapshot(console.queue(name), fresh=True)  # 409 if a read could move one
        return redirect(url_for("queue", name=name), code=303)

    @app.post("/q/<name>/plan")
    def plan(name: str) -> str:
        chosen = order(name)
        plan = console.plan(chosen)
        return render_template("plan.html", order=chosen, plan=plan, form=request.form)

    @app.post("/q/<name>/redrive")
    def redrive(name: str) -> BaseResponse:
        return go(console.start_redrive(order(name)).id)

    @app.post("/q/<name>/export")
    def export(name: str) -> BaseResponse:
        chosen = order(name)
        filename = safe_filename(request.form.get("filename", ""), f"{name}-export.jsonl")
        return go(console.start_export(chosen, filename).id)

    @app.post("/q/<name>/delete")
    def delete(name: str) -> BaseResponse:
        return go(console.start_delete(order(name), request.form.get("confirm", "")).id)

    @app.post("/q/<name>/purge")
    def purge(name: str) -> BaseResponse:
        return go(console.start_purge(console.queue(name), request.form.get("confirm", "")).id)

    @app.post("/pause")
    def pause() -> BaseResponse:
        return go(console.start_pause(enable=request.form.get("enable") == "1").id)

    @app.post("/jobs/<job_id>/stop")
    def stop(job_id: str) -> Response:
        console.job(job_id).halt()
        return jsonify({"stopping": True})
