"""The web view of runs (``bosun ui``; part of the stack ``bosun up`` starts, on ``BOSUN_UI_PORT``).

- ``GET /``: the runs, newest first, filtered by status, repository and trigger.
- ``GET /run?id=ID``: one run: phases on a timeline with agents in parallel lanes, every agent's turns (model text,
  tool calls with arguments and results, errors, compactions, model switches, steering), the diff per file,
  tests before and after; a running run refreshes itself (``GET /run/fragment?id=ID`` every 2 s) and has buttons
  to steer, cancel and decide escalations (``POST /run/steer|cancel|approve``, doing what the CLI does).
- ``GET /run/trace?id=ID`` (the span tree), ``GET /run/export?id=ID`` (``bosun export``), ``GET /healthz``.

Data comes from Temporal (histories, queries, visibility) and the artifact store; there is no database.
Everything shown is hostile text: templates escape every value (Jinja2 autoescape), links are only plain http(s)
URLs, the Content-Security-Policy allows no inline script, and diffs are highlighted by Pygments (which escapes).
Loopback by default; binding to another address needs ``BOSUN_UI_TOKEN`` (sent as ``Authorization: Bearer``, or
once as ``?token=`` which sets a cookie). Changes (POST) must come from the page itself (same origin).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import hmac
import ipaddress
import json
import logging
import socket
import sys
import time
from collections import OrderedDict
from importlib import resources
from typing import Any
from urllib.parse import quote, urlsplit

import uvicorn
from jinja2 import Environment, FunctionLoader, select_autoescape
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from infra.cliargs import CommandParser, Page
from infra.errors import ConfigError
from infra.export import export as export_run
from infra.history import ClosedRuns, collect
from infra.names import show_text
from infra.objectstore import open_store
from infra.runview import RunView, Trigger, build, trigger_of
from infra.settings import Settings, load_settings
from infra.spanstore import with_shared
from infra.telemetry import read_spans, telemetry_dir
from infra.temporal import connect
from infra.traceview import render as render_trace
from infra.traceview import task_spans
from workflows.models import TaskResult

log = logging.getLogger("bosun.ui")
COOKIE = "bosun_ui_token"
MAX_RUNS = 100
CLOSED_VIEWS = 64
STATUSES = ["running", "succeeded", "partial", "failed", "no_changes", "cancelled", "terminated", "timed_out"]
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


def _asset(name: str) -> str:
    return resources.files("entry").joinpath("ui_assets", name).read_text(encoding="utf-8")


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(settings: Settings) -> None:
    """Refuse to serve beyond loopback without a token (ConfigError saying what to set)."""
    if not is_loopback(settings.ui_host) and not (settings.ui_token and settings.ui_token.get_secret_value()):
        raise ConfigError(f"BOSUN_UI_HOST={settings.ui_host} is not a loopback address: set BOSUN_UI_TOKEN (a long "
                          "random string) so that only people with it can see runs and steer them")


class RunSummary:
    """One row of the runs table."""

    def __init__(self, workflow_id: str, status: str, trigger: Trigger, repo: str, start: float | None,
                 end: float | None, turns: int | None = None, cost: float | None = None, tests_before: str = "",
                 tests_after: str = "") -> None:
        self.workflow_id, self.status, self.trigger, self.repo = workflow_id, status, trigger, repo
        self.start, self.end, self.turns, self.cost = start, end, turns, cost
        self.tests_before, self.tests_after = tests_before, tests_after

    @property
    def started(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start)) if self.start else ""

    @property
    def duration(self) -> str:
        if not self.start:
            return ""
        return f"{(self.end or time.time()) - self.start:.1f} s"


class WebView:
    def __init__(self, settings: Settings, client: Client | None = None) -> None:
        self.settings = settings
        self._client = client
        self.store = open_store(settings)
        self.jinja = Environment(loader=FunctionLoader(lambda name: _asset(name)),
                                 autoescape=select_autoescape(default=True, default_for_string=True))
        self.jinja.filters["urlencode"] = lambda v: quote(str(v), safe="")
        self.formatter = HtmlFormatter(cssclass="highlight")
        self._summaries: dict[tuple[str, str], RunSummary] = {}
        """Closed runs' rows (they never change), by (workflow id, run id)."""
        self._closed = ClosedRuns()
        """Ended agents' steps: a running task's page, refreshed every 2 s, reads again only what still runs."""
        self._views: OrderedDict[tuple[str, str], RunView] = OrderedDict()
        """Ended tasks' pages (they never change), by (workflow id, run id); at most ``CLOSED_VIEWS``."""

    async def client(self) -> Client:
        if self._client is None:
            self._client = await connect(self.settings)
        return self._client

    def temporal_ui(self, workflow_id: str | None = None) -> str | None:
        if self.settings.temporal_address:
            return None
        base = f"http://{self.settings.host}:{self.settings.temporal_ui_port}/namespaces/" \
               f"{quote(self.settings.temporal_namespace, safe='')}/workflows"
        return f"{base}/{quote(workflow_id, safe='')}" if workflow_id else base

    # -- auth ---------------------------------------------------------------------------------------------------

    def _token_ok(self, request: Request) -> bool:
        token = self.settings.ui_token.get_secret_value() if self.settings.ui_token else ""
        if not token:
            return True
        given = request.cookies.get(COOKIE) or request.query_params.get("token") or ""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            given = auth[7:]
        return hmac.compare_digest(given.encode(), token.encode())

    def _same_origin(self, request: Request) -> bool:
        origin = request.headers.get("origin") or request.headers.get("referer") or ""
        host = request.headers.get("host", "")
        return bool(origin) and urlsplit(origin).netloc == host

    # -- pages ----------------------------------------------------------------------------------------------------

    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        # show_text: a model's lone surrogate (a JSON escape in its tool call) could not be encoded into the page
        html = show_text(self.jinja.get_template(name).render(temporal_ui=self.temporal_ui(), **values))
        return HTMLResponse(html, status, headers={"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                                           "Referrer-Policy": "same-origin", "Cache-Control": "no-store"})

    async def _summary(self, client: Client, wf) -> RunSummary:
        key = (wf.id, wf.run_id)
        if key in self._summaries:
            return self._summaries[key]
        memo = await wf.memo()
        handle = client.get_workflow_handle(wf.id, run_id=wf.run_id)
        inp: dict[str, Any] = {}
        async for ev in handle.fetch_history_events():
            attrs = ev.workflow_execution_started_event_attributes
            if attrs.input.payloads:
                try:
                    inp = json.loads(attrs.input.payloads[0].data)
                except ValueError:
                    inp = {}
            break
        status = wf.status.name.lower() if wf.status else "running"
        row = RunSummary(wf.id, status, trigger_of(memo), str(inp.get("repo", "")),
                         wf.start_time.timestamp() if wf.start_time else None,
                         wf.close_time.timestamp() if wf.close_time else None)
        if wf.status == WorkflowExecutionStatus.COMPLETED:
            try:
                result: TaskResult | None = TaskResult.model_validate(await handle.result())
            except Exception:  # noqa: BLE001 - shown without the details (not a task's result, or unreadable)
                result = None
            if result is not None:
                agents = result.all_agents()
                row.status = result.status
                row.turns = sum(a.turns for a in agents)
                row.cost = round(sum(a.cost_usd for a in agents), 6)
                row.tests_before, row.tests_after = result.tests_before.summary, result.tests_after.summary
            else:
                row.status = "completed"
        if wf.status not in (None, WorkflowExecutionStatus.RUNNING):
            self._summaries[key] = row
        return row

    async def runs(self, request: Request) -> Response:
        if not self._token_ok(request):
            return PlainTextResponse("unauthorized: open the page with ?token=... (BOSUN_UI_TOKEN)", 401)
        if request.query_params.get("token"):
            return self._remember_token(request, "/")
        client = await self.client()
        found = []
        async for wf in client.list_workflows("WorkflowType = 'TaskWorkflow'", limit=MAX_RUNS):
            found.append(wf)
        rows = await asyncio.gather(*[self._summary(client, wf) for wf in found])
        f = {k: request.query_params.get(k, "").strip() for k in ("status", "repo", "trigger")}
        rows = [r for r in rows if (not f["status"] or r.status == f["status"])
                and (not f["repo"] or f["repo"] in r.repo) and (not f["trigger"] or r.trigger.kind == f["trigger"])]
        rows.sort(key=lambda r: r.start or 0, reverse=True)
        return self.page("runs.html", runs=rows, statuses=STATUSES, filters={**f, "any": any(f.values())})

    def _remember_token(self, request: Request, where: str) -> Response:
        response = RedirectResponse(where, status_code=303)
        response.set_cookie(COOKIE, request.query_params["token"], httponly=True, samesite="strict")
        return response

    async def _view(self, workflow_id: str) -> tuple[RunView, dict[str, str]]:
        client = await self.client()
        handle = client.get_workflow_handle(workflow_id)
        try:
            desc = await handle.describe()
        except RPCError:
            raise KeyError(workflow_id) from None
        key = (workflow_id, desc.run_id)
        if key in self._views:
            self._views.move_to_end(key)
            return self._views[key], {}
        root = await collect(client, workflow_id, closed=self._closed)
        view = await asyncio.to_thread(build, root, self.store, memo=await desc.memo())
        if desc.status not in (None, WorkflowExecutionStatus.RUNNING) and not view.running:
            self._views[key] = view
            while len(self._views) > CLOSED_VIEWS:
                self._views.popitem(last=False)
        escalations: dict[str, str] = {}
        if view.running:
            for agent in view.agents:
                if agent.status != "running":
                    continue
                try:
                    progress = await client.get_workflow_handle(agent.agent_id).query("progress")
                except Exception:  # noqa: BLE001 - the agent ended meanwhile
                    continue
                for req, info in (progress.get("pending_escalations") or {}).items():
                    escalations[str(req)] = str((info or {}).get("call", ""))[:500]
        return view, escalations

    def _run_values(self, view: RunView, escalations: dict[str, str]) -> dict[str, Any]:
        span = max(view.duration_s, 1e-6)

        def pos(t: float) -> float:
            return round(max(0.0, min(100.0, (t - view.start) / span * 100)), 3)

        def width(a: float, b: float) -> float:
            return round(max(0.3, min(100.0 - pos(a), (b - a) / span * 100)), 3)
        diffs = [(path, Markup(highlight(text, DiffLexer(), self.formatter))) for path, text in view.diff_files]
        def red(summary: str) -> str:
            return "red" if any(w in summary for w in ("failed", "error", "no tests")) else "green" if summary else ""
        return {"run": view, "escalations": escalations, "pos": pos, "width": width, "diffs": diffs, "red": red,
                "run_temporal": self.temporal_ui(view.workflow_id)}

    async def run(self, request: Request) -> Response:
        if not self._token_ok(request):
            return PlainTextResponse("unauthorized (BOSUN_UI_TOKEN)", 401)
        workflow_id = request.query_params.get("id", "")
        if request.query_params.get("token"):
            return self._remember_token(request, f"/run?id={quote(workflow_id, safe='')}")
        try:
            view, escalations = await self._view(workflow_id)
        except KeyError:
            return self.page("trace.html", 404, workflow_id=workflow_id, text=f"no run {workflow_id!r}")
        name = "run_body.html" if request.url.path.endswith("/fragment") else "run.html"
        values = self._run_values(view, escalations)
        if name == "run_body.html":  # the part a running page refreshes, wrapped like the page's own body
            inner = self.jinja.get_template(name).render(**values)
            return HTMLResponse(f'<div id="run-body" data-running="{1 if view.running else 0}">{inner}</div>',
                                headers={"Content-Security-Policy": CSP, "Cache-Control": "no-store"})
        return self.page(name, **values)

    async def trace(self, request: Request) -> Response:
        if not self._token_ok(request):
            return PlainTextResponse("unauthorized (BOSUN_UI_TOKEN)", 401)
        workflow_id = request.query_params.get("id", "")
        spans = await asyncio.to_thread(lambda: with_shared(
            self.settings, workflow_id, task_spans(read_spans(telemetry_dir(self.settings)), workflow_id)))
        text = "\n".join(render_trace(spans)) or "no spans recorded for this run (BOSUN_TELEMETRY)"
        return self.page("trace.html", workflow_id=workflow_id, text=text)

    async def export(self, request: Request) -> Response:
        if not self._token_ok(request):
            return PlainTextResponse("unauthorized (BOSUN_UI_TOKEN)", 401)
        client = await self.client()
        try:
            root = await collect(client, request.query_params.get("id", ""))
        except RPCError as e:
            return JSONResponse({"error": e.message}, 404)
        doc = await asyncio.to_thread(export_run, root, self.store)
        return Response(json.dumps(doc, default=str), media_type="application/json",
                        headers={"Content-Disposition": "attachment; filename=trajectory.json"})

    # -- actions ------------------------------------------------------------------------------------------------

    async def _act(self, request: Request, action) -> Response:
        if not self._token_ok(request):
            return PlainTextResponse("unauthorized (BOSUN_UI_TOKEN)", 401)
        if not self._same_origin(request):
            return PlainTextResponse("refused: a change must come from this page (Origin/Referer differ)", 403)
        form = await request.form()
        workflow_id = str(form.get("id", ""))
        try:
            await action(await self.client(), workflow_id, form)
        except (RPCError, ValueError) as e:
            return PlainTextResponse(f"could not do it: {e}", 409)
        return RedirectResponse(f"/run?id={quote(workflow_id, safe='')}", status_code=303)

    async def steer(self, request: Request) -> Response:
        async def act(client: Client, workflow_id: str, form) -> None:
            text = str(form.get("message", "")).strip()
            if not text:
                raise ValueError("the message is empty")
            await client.get_workflow_handle(workflow_id).signal("steer", args=[text[:20_000], "web view"])
        return await self._act(request, act)

    async def cancel(self, request: Request) -> Response:
        async def act(client: Client, workflow_id: str, form) -> None:
            await client.get_workflow_handle(workflow_id).cancel()
        return await self._act(request, act)

    async def approve(self, request: Request) -> Response:
        async def act(client: Client, workflow_id: str, form) -> None:
            req = str(form.get("request", ""))
            agent_id, sep, _ = req.rpartition("#")
            if not sep or not agent_id.startswith(workflow_id + "/"):
                raise ValueError(f"{req!r} is not a request of this run")
            await client.get_workflow_handle(agent_id).signal(
                "approve", args=[req, form.get("decision") == "approve", "web view"])
        return await self._act(request, act)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ("ui.css", "ui.js"):
            return PlainTextResponse("not found", 404)
        text = _asset(name)
        if name == "ui.css":
            text += "\n" + self.formatter.get_style_defs(".highlight")
        return Response(text, media_type="text/css" if name.endswith(".css") else "text/javascript",
                        headers={"Cache-Control": "max-age=60", "X-Content-Type-Options": "nosniff"})

    async def healthz(self, _request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/", self.runs), Route("/run", self.run), Route("/run/fragment", self.run),
            Route("/run/trace", self.trace), Route("/run/export", self.export),
            Route("/run/steer", self.steer, methods=["POST"]), Route("/run/cancel", self.cancel, methods=["POST"]),
            Route("/run/approve", self.approve, methods=["POST"]), Route("/static/{name}", self.static),
            Route("/healthz", self.healthz)])


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> None:
    check_binding(settings)
    view = WebView(settings)
    server = uvicorn.Server(uvicorn.Config(view.app(), host=settings.ui_host, port=settings.ui_port,
                                           log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    log.info("web view on http://%s:%d/", settings.ui_host, settings.ui_port)
    if stop is None:
        await task
        return
    await stop.wait()
    server.should_exit = True
    await task


PAGE = Page(
    description="Serve the web view of runs in the foreground until Ctrl-C, on BOSUN_UI_HOST:BOSUN_UI_PORT "
                "(default 127.0.0.1:8790): the runs table (filtered by status, repository, trigger) and per run its "
                "phases on a timeline with agents in parallel lanes, every turn and tool call, the diff per file, "
                "the tests before and after; a running run refreshes itself and has steer, cancel and approve "
                "buttons. The stack (`bosun up`) runs one already: use this for another address or port. It reads "
                "Temporal and the artifact store, so it needs the stack (or a cluster's settings). Loopback by "
                "default; another address needs BOSUN_UI_TOKEN.",
    exit_codes={0: "stopped (Ctrl-C)",
                2: "its port is in use (the message says what to set), BOSUN_UI_HOST is not loopback and "
                   "BOSUN_UI_TOKEN is not set, or another setting is wrong"},
    examples=("bosun ui", "BOSUN_UI_PORT=8791 bosun ui",
              'BOSUN_UI_HOST=0.0.0.0 BOSUN_UI_TOKEN="$(openssl rand -hex 32)" bosun ui'))


def parser() -> argparse.ArgumentParser:
    return CommandParser(prog="bosun ui", page=PAGE)


def check_port(settings: Settings) -> None:
    """ConfigError when the web view cannot listen on BOSUN_UI_HOST:BOSUN_UI_PORT (checked as uvicorn binds: every
    address the host resolves to), saying what to change."""
    host, port = settings.ui_host, settings.ui_port
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise ConfigError(f"BOSUN_UI_HOST={host}: not an address of this host ({e}); set it to one, e.g. "
                          "127.0.0.1") from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    raise ConfigError(f"port {port} on {host} is in use (BOSUN_UI_PORT): stop what uses it (`bosun "
                                      "status` shows whether the stack's web view does) or set BOSUN_UI_PORT to a "
                                      "free port") from None
                raise ConfigError(f"cannot listen on {host} port {port} ({e.strerror}): set BOSUN_UI_HOST to an "
                                  "address of this host and BOSUN_UI_PORT to a free port") from None


def main(argv: list[str] | None = None) -> int:
    """``bosun ui`` / ``python -m entry.ui``: serve the web view in the foreground."""
    parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_settings()
        check_binding(settings)
        check_port(settings)
        asyncio.run(serve(settings))
    except ConfigError as e:
        print(f"bosun ui: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
