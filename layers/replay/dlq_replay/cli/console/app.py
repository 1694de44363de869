"""The console's web application (Flask, Jinja2 with autoescape): pages over `Console`'s state.

Safety (docs/console.md): every request needs the token (from the URL once, then an HttpOnly
SameSite=Strict cookie) and a Host header naming this server (DNS rebinding); every POST a CSRF
token; every answer a strict Content-Security-Policy (no inline script or style), nosniff and
no referrer. Bodies and attributes are data, rendered as text by the templates' autoescape.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, abort, jsonify, redirect, render_template, request, send_file
from werkzeug.wrappers import Response as BaseResponse

from dlq_replay.cli.console import charts
from dlq_replay.cli.console.snapshot import PAGE_SIZE, Filter
from dlq_replay.cli.output import duration

if TYPE_CHECKING:
    from dlq_replay.cli.console.state import Console

COOKIE = "dlq_console"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def create_app(console: Console) -> Flask:
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.config.update(MAX_CONTENT_LENGTH=2_000_000, JSON_SORT_KEYS=False)
    app.jinja_env.autoescape = True  # every template, whatever its name
    app.jinja_env.globals.update(duration=_age, csrf=console.csrf, read_only=console.read_only)

    @app.before_request
    def guard() -> BaseResponse | None:
        if request.host not in console.hosts:
            abort(400, "unknown Host")
        given = request.args.get("token")
        if given is not None and secrets.compare_digest(given, console.token):
            response = redirect(request.path)
            response.set_cookie(COOKIE, console.token, httponly=True, samesite="Strict", path="/")
            return response
        if not secrets.compare_digest(request.cookies.get(COOKIE, ""), console.token):
            abort(403, "no token: open the URL the console printed")
        if request.method == "POST":
            if console.read_only:
                abort(403, "read-only console")
            sent = request.form.get("csrf") or request.headers.get("X-CSRF-Token", "")
            if not secrets.compare_digest(sent, console.csrf):
                abort(403, "no CSRF token")
        return None

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cache-Control"] = "no-store"
        return response

    _pages(app, console)
    _actions(app, console)
    return app


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else duration(int(seconds))


def _pages(app: Flask, console: Console) -> None:
    @app.get("/")
    def overview() -> str:
        return render_template("overview.html", view=console.overview(), now=time.time())

    @app.get("/api/overview")
    def overview_json() -> Response:
        return jsonify(console.overview_json())

    @app.get("/q/<name>")
    def queue(name: str) -> str:
        info = console.queue(name)
        snapshot = console.snapshot(info)
        selected = Filter.from_form(request.args)
        page = max(0, request.args.get("page", 0, type=int))
        now = time.time()
        view: dict[str, Any] = {"info": info, "snapshot": snapshot, "filter": selected}
        if snapshot.ready:
            try:
                view.update(
                    count=snapshot.count(selected, now),
                    rows=snapshot.rows(selected, now, page),
                    reasons=charts.bar_chart(
                        "park reasons", snapshot.groups("reason", selected, now)
                    ),
                    kinds=charts.bar_chart("kinds", snapshot.groups("kind", selected, now)),
                    ages=charts.bar_chart("ages", snapshot.ages(selected, now)),
                    all_reasons=[r for r, _ in snapshot.groups("reason", Filter(), now)],
                    all_kinds=[k for k, _ in snapshot.groups("kind", Filter(), now)],
                )
            except ValueError as error:
                view.update(count=0, rows=[], problem=str(error))
        return render_template(
            "queue.html",
            view=view,
            page=page,
            page_size=PAGE_SIZE,
            now=now,
            destinations=console.destinations(info),
        )

    @app.get("/api/q/<name>/snapshot")
    def snapshot_json(name: str) -> Response:
        snapshot = console.snapshot(console.queue(name))
        return jsonify({"state": snapshot.state, "examined": snapshot.examined})

    @app.get("/jobs/<job_id>")
    def job(job_id: str) -> str:
        return render_template("job.html", job=console.job(job_id))

    @app.get("/api/jobs/<job_id>")
    def job_json(job_id: str) -> Response:
        found = console.job(job_id)
        found.polled = time.monotonic()
        return jsonify(found.to_json())

    @app.get("/jobs/<job_id>/download")
    def download(job_id: str) -> Response:
        found = console.job(job_id)
        if found.download is None:
            abort(404)
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
        return redirect(f"/jobs/{job_id}", code=303)

    @app.post("/q/<name>/reread")
    def reread(name: str) -> BaseResponse:
        console.snapshot(console.queue(name), fresh=True)
        return redirect(f"/q/{name}", code=303)

    @app.post("/q/<name>/plan")
    def plan(name: str) -> str:
        info = console.queue(name)
        order = console.order(info, request.form)
        return render_template(
            "plan.html",
            info=info,
            order=order,
            plan=console.plan(order),
            form=request.form,
        )

    @app.post("/q/<name>/redrive")
    def redrive(name: str) -> BaseResponse:
        order = console.order(console.queue(name), request.form)
        return go(console.start_redrive(order).id)

    @app.post("/q/<name>/export")
    def export(name: str) -> BaseResponse:
        order = console.order(console.queue(name), request.form)
        filename = request.form.get("filename", "").strip() or f"{name}-export.jsonl"
        return go(console.start_export(order, filename[:200]).id)

    @app.post("/q/<name>/delete")
    def delete(name: str) -> BaseResponse:
        info = console.queue(name)
        order = console.order(info, request.form)
        return go(console.start_delete(order, request.form.get("confirm", "")).id)

    @app.post("/q/<name>/purge")
    def purge(name: str) -> BaseResponse:
        info = console.queue(name)
        return go(console.start_purge(info, request.form.get("confirm", "")).id)

    @app.post("/pause")
    def pause() -> BaseResponse:
        return go(console.start_pause(enable=request.form.get("enable") == "1").id)

    @app.post("/jobs/<job_id>/stop")
    def stop(job_id: str) -> Response:
        console.job(job_id).stop.set()
        return jsonify({"stopping": True})


def not_found(_: Any) -> tuple[str, int]:
    return "not found", 404


Handler = Callable[..., Any]
