"""Local HTTP fixture servers that follow GitHub's REST API and Linear's GraphQL API as documented (paths, methods,
JSON shapes, headers), with in-memory state, so the status-back code is tested over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.conftest import free_port


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app on a free loopback port for the duration of the block; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


# ---------------------------------------------------------------- GitHub

@dataclass
class FakeGitHub:
    token: str = "ghs_test"
    per_page_cap: int = 100
    comments: dict[tuple[str, int], list[dict]] = field(default_factory=dict)
    labels: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    pulls: dict[str, list[dict]] = field(default_factory=dict)
    reactions: dict[int, set[str]] = field(default_factory=dict)
    review_comments: dict[tuple[str, int], list[dict]] = field(default_factory=dict)
    checks: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    """(repo, ref) -> check runs (name, status, conclusion)."""
    logs: dict[int, bytes] = field(default_factory=dict)
    blob_url: str = ""
    blob_auth: list[str | None] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1000))

    def app(self) -> Starlette:
        r = "/repos/{owner}/{repo}"
        return Starlette(routes=[
            Route(r, self.get_repo, methods=["GET"]),
            Route(r + "/issues/{number:int}/comments", self.list_comments, methods=["GET"]),
            Route(r + "/issues/{number:int}/comments", self.create_comment, methods=["POST"]),
            Route(r + "/issues/comments/{cid:int}", self.update_comment, methods=["PATCH"]),
            Route(r + "/issues/comments/{cid:int}/reactions", self.react, methods=["POST"]),
            Route(r + "/issues/{number:int}/labels", self.list_labels, methods=["GET"]),
            Route(r + "/issues/{number:int}/labels", self.add_labels, methods=["POST"]),
            Route(r + "/issues/{number:int}/labels/{name}", self.remove_label, methods=["DELETE"]),
            Route(r + "/pulls", self.list_pulls, methods=["GET"]),
            Route(r + "/pulls", self.create_pull, methods=["POST"]),
            Route(r + "/pulls/{number:int}", self.get_pull, methods=["GET"]),
            Route(r + "/commits/{ref:path}/check-runs", self.check_runs, methods=["GET"]),
            Route(r + "/actions/jobs/{job:int}/logs", self.job_logs, methods=["GET"]),
            Route(r + "/pulls/{number:int}/comments", self.list_review_comments, methods=["GET"]),
            Route(r + "/pulls/{number:int}/comments/{cid:int}/replies", self.reply, methods=["POST"]),
        ])

    def _check(self, request: Request) -> Response | None:
        self.requests.append((request.method, request.url.path))
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse({"message": "Bad credentials"}, 401)
        if request.headers.get("accept") != "application/vnd.github+json":
            return JSONResponse({"message": "expected Accept: application/vnd.github+json"}, 415)
        if not request.headers.get("x-github-api-version") or not request.headers.get("user-agent"):
            return JSONResponse({"message": "missing X-GitHub-Api-Version or User-Agent"}, 400)
        return None

    async def _json(self, request: Request, *required: str) -> dict | Response:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"message": "Problems parsing JSON"}, 400)
        missing = [k for k in required if k not in body]
        if missing:
            return JSONResponse({"message": "Validation Failed", "errors": [{"field": k, "code": "missing_field"}
                                                                             for k in missing]}, 422)
        return body

    @staticmethod
    def _key(request: Request) -> tuple[str, int]:
        p = request.path_params
        return f"{p['owner']}/{p['repo']}", p["number"]

    async def get_repo(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        p = request.path_params
        return JSONResponse({"full_name": f"{p['owner']}/{p['repo']}", "default_branch": "main"})

    async def list_comments(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        items = self.comments.get(self._key(request), [])
        per_page = min(int(request.query_params.get("per_page", 30)), self.per_page_cap)
        page = int(request.query_params.get("page", 1))
        chunk = items[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(items):
            nxt = request.url.include_query_params(page=page + 1, per_page=per_page)
            headers["Link"] = f'<{nxt}>; rel="next"'
        return JSONResponse(chunk, headers=headers)

    async def create_comment(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        body = await self._json(request, "body")
        if isinstance(body, Response):
            return body
        cid = next(self._ids)
        repo, number = self._key(request)
        c = {"id": cid, "body": body["body"], "html_url": f"https://github.com/{repo}/issues/{number}#issuecomment-{cid}",
             "user": {"login": "bosun[bot]", "type": "Bot"}}
        self.comments.setdefault((repo, number), []).append(c)
        return JSONResponse(c, 201)

    async def update_comment(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        body = await self._json(request, "body")
        if isinstance(body, Response):
            return body
        for items in self.comments.values():
            for c in items:
                if c["id"] == request.path_params["cid"]:
                    c["body"] = body["body"]
                    return JSONResponse(c)
        return JSONResponse({"message": "Not Found"}, 404)

    async def react(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        body = await self._json(request, "content")
        if isinstance(body, Response):
            return body
        have = self.reactions.setdefault(request.path_params["cid"], set())
        status = 200 if body["content"] in have else 201
        have.add(body["content"])
        return JSONResponse({"id": 1, "content": body["content"]}, status)

    async def list_labels(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        return JSONResponse([{"name": n} for n in self.labels.get(self._key(request), [])])

    async def add_labels(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        body = await self._json(request, "labels")
        if isinstance(body, Response):
            return body
        current = self.labels.setdefault(self._key(request), [])
        for n in body["labels"]:
            if n not in current:
                current.append(n)
        return JSONResponse([{"name": n} for n in current])

    async def remove_label(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        current = self.labels.setdefault(self._key(request), [])
        name = request.path_params["name"]
        if name not in current:
            return JSONResponse({"message": "Label does not exist"}, 404)
        current.remove(name)
        return JSONResponse([{"name": n} for n in current])

    async def list_pulls(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        p = request.path_params
        items = self.pulls.get(f"{p['owner']}/{p['repo']}", [])
        head = request.query_params.get("head")
        if head:
            owner, _, branch = head.partition(":")
            items = [pr for pr in items if pr["head"]["ref"] == branch and owner == p["owner"]]
        return JSONResponse(items)

    async def get_pull(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        repo, number = self._key(request)
        for pr in self.pulls.get(repo, []):
            if pr["number"] == number:
                return JSONResponse(pr)
        return JSONResponse({"message": "Not Found",
                             "documentation_url": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
                             "status": "404"}, 404)

    async def check_runs(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        p = request.path_params
        name = request.query_params.get("check_name")
        runs = [c for c in self.checks.get((f"{p['owner']}/{p['repo']}", p["ref"]), [])
                if not name or c["name"] == name]
        return JSONResponse({"total_count": len(runs), "check_runs": runs})

    async def job_logs(self, request: Request) -> Response:
        """302 to where the log can be downloaded (another host: GitHub's blob storage), as GitHub answers."""
        if err := self._check(request):
            return err
        job = request.path_params["job"]
        if job not in self.logs or not self.blob_url:
            return JSONResponse({"message": "Not Found"}, 404)
        return Response(status_code=302, headers={"Location": f"{self.blob_url}/logs/{job}.txt?sig=abc"})

    def blob_app(self) -> Starlette:
        """The other host the log is downloaded from; it records whether a token came along."""
        async def blob(request: Request) -> Response:
            self.blob_auth.append(request.headers.get("authorization"))
            job = int(request.path_params["name"].split(".")[0])
            return Response(self.logs[job], media_type="text/plain")
        return Starlette(routes=[Route("/logs/{name}", blob, methods=["GET"])])

    async def list_review_comments(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        items = self.review_comments.get(self._key(request), [])
        per_page = min(int(request.query_params.get("per_page", 30)), self.per_page_cap)
        page = int(request.query_params.get("page", 1))
        headers = {}
        if page * per_page < len(items):
            headers["Link"] = f'<{request.url.include_query_params(page=page + 1, per_page=per_page)}>; rel="next"'
        return JSONResponse(items[(page - 1) * per_page: page * per_page], headers=headers)

    async def reply(self, request: Request) -> Response:
        """POST .../pulls/{n}/comments/{comment_id}/replies: only to a top-level review comment (GitHub: 404)."""
        if err := self._check(request):
            return err
        body = await self._json(request, "body")
        if isinstance(body, Response):
            return body
        items = self.review_comments.setdefault(self._key(request), [])
        top = next((c for c in items if c["id"] == request.path_params["cid"] and not c.get("in_reply_to_id")), None)
        if top is None:
            return JSONResponse({"message": "Not Found"}, 404)
        c = {"id": next(self._ids), "body": body["body"], "in_reply_to_id": top["id"], "path": top.get("path"),
             "user": {"login": "bosun[bot]", "type": "Bot"}}
        items.append(c)
        return JSONResponse(c, 201)

    async def create_pull(self, request: Request) -> Response:
        if err := self._check(request):
            return err
        body = await self._json(request, "title", "head", "base")
        if isinstance(body, Response):
            return body
        p = request.path_params
        repo = f"{p['owner']}/{p['repo']}"
        items = self.pulls.setdefault(repo, [])
        if any(pr["head"]["ref"] == body["head"] for pr in items):
            return JSONResponse({"message": "Validation Failed", "errors": [
                {"message": f"A pull request already exists for {p['owner']}:{body['head']}."}]}, 422)
        number = len(items) + 1
        pr = {"number": number, "html_url": f"https://github.com/{repo}/pull/{number}", "title": body["title"],
              "body": body.get("body"), "head": {"ref": body["head"]}, "base": {"ref": body["base"]}}
        items.append(pr)
        return JSONResponse(pr, 201)


# ---------------------------------------------------------------- Linear

ACTIVITY_TYPES = {"thought", "action", "elicitation", "response", "error", "prompt"}


@dataclass
class FakeLinear:
    api_key: str = "lin_api_test"
    activities: dict[str, dict] = field(default_factory=dict)
    sessions: dict[str, dict] = field(default_factory=dict)
    lose_next_responses: int = 0
    """Process the next N activity creations but answer 502 (the response got lost)."""
    issues: dict[str, dict] = field(default_factory=dict)
    """issue id -> {"team": team id, "labels": [label ids]}."""
    labels: dict[str, dict] = field(default_factory=dict)
    """label id -> {"name", "team": team id or None (a workspace label)}."""
    requests: list[str] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/graphql", self.graphql, methods=["POST"])])

    def for_session(self, session_id: str) -> list[dict]:
        return sorted((a for a in self.activities.values() if a["agentSessionId"] == session_id),
                      key=lambda a: a["createdAt"])

    async def graphql(self, request: Request) -> Response:
        if request.headers.get("authorization") != self.api_key:
            return JSONResponse({"errors": [{"message": "Authentication required",
                                             "extensions": {"code": "AUTHENTICATION_ERROR"}}]}, 400)
        if not request.headers.get("content-type", "").startswith("application/json"):
            return JSONResponse({"errors": [{"message": "expected application/json"}]}, 400)
        body = json.loads(await request.body())
        query, variables = body.get("query", ""), body.get("variables") or {}
        self.requests.append(query)
        if "agentActivityCreate(" in query:
            return self._create(variables.get("input") or {})
        if "agentActivity(" in query:
            a = self.activities.get(variables.get("id", ""))
            return JSONResponse({"data": {"agentActivity": {"id": a["id"]} if a else None}})
        if "agentSessionUpdate(" in query:
            self.sessions.setdefault(variables["id"], {}).update(variables["input"])
            return JSONResponse({"data": {"agentSessionUpdate": {"success": True}}})
        if "issueLabels(" in query:
            name = ((variables.get("name")) or "")
            return JSONResponse({"data": {"issueLabels": {"nodes": [
                {"id": lid, "name": lb["name"], "team": {"id": lb["team"]} if lb["team"] else None}
                for lid, lb in self.labels.items() if lb["name"] == name]}}})
        if "issueLabelCreate(" in query:
            inp = variables.get("input") or {}
            if not inp.get("name"):
                return JSONResponse({"data": None, "errors": [{"message": "name is required"}]}, 400)
            lid = f"label-{len(self.labels) + 1}"
            self.labels[lid] = {"name": inp["name"], "team": inp.get("teamId")}
            return JSONResponse({"data": {"issueLabelCreate": {"success": True, "issueLabel": {"id": lid}}}})
        if "issueUpdate(" in query:
            issue = self.issues.get(variables.get("id", ""))
            if issue is None:
                return JSONResponse({"data": None, "errors": [{"message": "Entity not found: Issue"}]}, 400)
            ids = (variables.get("input") or {}).get("labelIds") or []
            if any(i not in self.labels for i in ids):
                return JSONResponse({"data": None, "errors": [{"message": "labelIds: not found"}]}, 400)
            issue["labels"] = list(ids)
            return JSONResponse({"data": {"issueUpdate": {"success": True, "issue": {"labels": {"nodes": [
                {"name": self.labels[i]["name"]} for i in ids]}}}}})
        if "issue(" in query:
            issue = self.issues.get(variables.get("id", ""))
            if issue is None:
                return JSONResponse({"data": None, "errors": [{"message": "Entity not found: Issue",
                                                               "extensions": {"type": "invalid input"}}]}, 200)
            return JSONResponse({"data": {"issue": {
                "id": variables["id"], "team": {"id": issue["team"]},
                "labels": {"nodes": [{"id": i, "name": self.labels[i]["name"]} for i in issue["labels"]]}}}})
        return JSONResponse({"errors": [{"message": "unknown operation"}]}, 400)

    def _create(self, inp: dict) -> Response:
        def invalid(msg: str) -> Response:
            return JSONResponse({"data": None, "errors": [{"message": msg, "extensions": {"code": "INVALID_INPUT"}}]},
                                400)

        content = inp.get("content") or {}
        if not inp.get("agentSessionId"):
            return invalid("agentSessionId is required")
        if content.get("type") not in ACTIVITY_TYPES:
            return invalid(f"content.type must be one of {sorted(ACTIVITY_TYPES)}")
        if content["type"] == "action" and not (content.get("action") and "parameter" in content):
            return invalid("action content needs action and parameter")
        if content["type"] != "action" and not content.get("body"):
            return invalid("content.body is required")
        aid = inp.get("id") or f"gen-{len(self.activities)}"
        if aid in self.activities:
            return invalid("Entity with this id already exists")
        self.activities[aid] = {"id": aid, "agentSessionId": inp["agentSessionId"], "content": content,
                                "ephemeral": bool(inp.get("ephemeral")), "createdAt": time.time()}
        if self.lose_next_responses > 0:
            self.lose_next_responses -= 1
            return Response("bad gateway", 502)
        return JSONResponse({"data": {"agentActivityCreate": {"success": True, "agentActivity": {"id": aid}}}})


# ---------------------------------------------------------------- GitLab

class _Answer(Exception):
    """A refusal, answered as GitLab answers it (JSON, a status)."""

    def __init__(self, body: dict, status: int) -> None:
        self.body, self.status = body, status


@dataclass
class FakeGitLab:
    """GitLab REST v4 as documented: PRIVATE-TOKEN, projects by id or URL-encoded path, notes with Link paging,
    discussions, labels by add_labels/remove_labels, award emoji, members/all, merge requests (409 on a second open
    one for a source branch). Error bodies are ``{"message": ...}``."""

    token: str = "glpat-test"
    per_page_cap: int = 100
    projects: dict[int, str] = field(default_factory=lambda: {5: "gitlab-org/gitlab-test"})
    notes: dict[tuple[int, str, int], list[dict]] = field(default_factory=dict)
    """(project id, "issues" or "merge_requests", iid) -> notes."""
    discussions: dict[str, list[dict]] = field(default_factory=dict)
    labels: dict[tuple[int, str, int], list[str]] = field(default_factory=dict)
    awards: dict[int, set[str]] = field(default_factory=dict)
    members: dict[tuple[int, int], int] = field(default_factory=dict)
    """(project id, user id) -> access level."""
    merge_requests: dict[int, list[dict]] = field(default_factory=dict)
    pipelines: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    """(project id, ref) -> statuses of its pipelines, newest first."""
    traces: dict[int, bytes] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(5000))

    def app(self) -> Starlette:
        p = "/api/v4/projects/{project:path}"  # (an id, or a path whose %2F the server has decoded)
        t = p + "/{kind}/{iid:int}"
        return Starlette(routes=[
            Route(t + "/notes", self.list_notes, methods=["GET"]),
            Route(t + "/notes", self.create_note, methods=["POST"]),
            Route(t + "/notes/{nid:int}", self.update_note, methods=["PUT"]),
            Route(t + "/notes/{nid:int}/award_emoji", self.award, methods=["POST"]),
            Route(t + "/discussions/{did}", self.get_discussion, methods=["GET"]),
            Route(t + "/discussions/{did}/notes", self.reply, methods=["POST"]),
            Route(t, self.update_target, methods=["PUT"]),
            Route(p + "/members/all/{uid:int}", self.member, methods=["GET"]),
            Route(p + "/merge_requests", self.list_mrs, methods=["GET"]),
            Route(p + "/merge_requests", self.create_mr, methods=["POST"]),
            Route(p + "/pipelines", self.list_pipelines, methods=["GET"]),
            Route(p + "/jobs/{job:int}/trace", self.trace, methods=["GET"]),
            Route(p, self.get_project, methods=["GET"]),
        ], exception_handlers={_Answer: lambda _request, e: JSONResponse(e.body, e.status)})

    def _check(self, request: Request) -> int:
        """The project id the request names; raises _Answer with GitLab's refusal."""
        self.requests.append((request.method, request.url.path))
        if request.headers.get("private-token") != self.token:
            raise _Answer({"message": "401 Unauthorized"}, 401)
        raw = request.path_params["project"]
        pid = int(raw) if raw.isdigit() else next((i for i, path in self.projects.items() if path == raw), 0)
        if pid not in self.projects:
            raise _Answer({"message": "404 Project Not Found"}, 404)
        if request.path_params.get("kind") not in (None, "issues", "merge_requests"):
            raise _Answer({"error": "404 Not Found"}, 404)
        return pid

    @staticmethod
    async def _body(request: Request, *required: str) -> dict:
        try:
            body = await request.json()
        except ValueError:
            raise _Answer({"message": "400 Bad request - invalid JSON"}, 400) from None
        missing = [k for k in required if not body.get(k)]
        if missing:
            raise _Answer({"error": f"{missing[0]} is missing"}, 400)
        return body

    def _note(self, body: str) -> dict:
        return {"id": next(self._ids), "body": body, "author": {"id": 99, "username": "project_5_bot_0f3a"},
                "system": False, "type": None}

    async def get_project(self, request: Request) -> Response:
        pid = self._check(request)
        return JSONResponse({"id": pid, "path_with_namespace": self.projects[pid], "default_branch": "main"})

    async def list_notes(self, request: Request) -> Response:
        pid = self._check(request)
        p = request.path_params
        items = self.notes.get((pid, p["kind"], p["iid"]), [])
        per_page = min(int(request.query_params.get("per_page", 20)), self.per_page_cap)
        page = int(request.query_params.get("page", 1))
        headers = {"X-Page": str(page), "X-Total": str(len(items))}
        if page * per_page < len(items):
            nxt = request.url.include_query_params(page=page + 1, per_page=per_page)
            headers["Link"] = f'<{nxt}>; rel="next"'
            headers["X-Next-Page"] = str(page + 1)
        return JSONResponse(items[(page - 1) * per_page: page * per_page], headers=headers)

    async def create_note(self, request: Request) -> Response:
        pid = self._check(request)
        body = await self._body(request, "body")
        p = request.path_params
        note = self._note(body["body"])
        self.notes.setdefault((pid, p["kind"], p["iid"]), []).append(note)
        return JSONResponse(note, 201)

    async def update_note(self, request: Request) -> Response:
        pid = self._check(request)
        body = await self._body(request, "body")
        p = request.path_params
        for note in self.notes.get((pid, p["kind"], p["iid"]), []):
            if note["id"] == p["nid"]:
                note["body"] = body["body"]
                return JSONResponse(note)
        return JSONResponse({"message": "404 Not found"}, 404)

    async def award(self, request: Request) -> Response:
        self._check(request)
        body = await self._body(request, "name")
        have = self.awards.setdefault(request.path_params["nid"], set())
        if body["name"] in have:
            return JSONResponse({"message": "404 Award Emoji Name has already been taken"}, 404)
        have.add(body["name"])
        return JSONResponse({"id": next(self._ids), "name": body["name"]}, 201)

    async def get_discussion(self, request: Request) -> Response:
        self._check(request)
        did = request.path_params["did"]
        if did not in self.discussions:
            return JSONResponse({"message": "404 Not found"}, 404)
        return JSONResponse({"id": did, "individual_note": False, "notes": self.discussions[did]})

    async def reply(self, request: Request) -> Response:
        self._check(request)
        body = await self._body(request, "body")
        did = request.path_params["did"]
        if did not in self.discussions:
            return JSONResponse({"message": "404 Not found"}, 404)
        note = self._note(body["body"])
        self.discussions[did].append(note)
        return JSONResponse(note, 201)

    async def update_target(self, request: Request) -> Response:
        pid = self._check(request)
        body = await self._body(request)
        p = request.path_params
        current = self.labels.setdefault((pid, p["kind"], p["iid"]), [])
        for name in str(body.get("remove_labels") or "").split(","):
            if name in current:
                current.remove(name)
        for name in str(body.get("add_labels") or "").split(","):
            if name and name not in current:
                current.append(name)
        return JSONResponse({"iid": p["iid"], "project_id": pid, "labels": current})

    async def member(self, request: Request) -> Response:
        pid = self._check(request)
        level = self.members.get((pid, request.path_params["uid"]))
        if level is None:
            return JSONResponse({"message": "404 Not found"}, 404)
        return JSONResponse({"id": request.path_params["uid"], "username": "someone", "state": "active",
                             "access_level": level})

    async def list_pipelines(self, request: Request) -> Response:
        pid = self._check(request)
        statuses = self.pipelines.get((pid, request.query_params.get("ref", "")), [])
        per_page = int(request.query_params.get("per_page", 20))
        return JSONResponse([{"id": 100 + i, "status": st} for i, st in enumerate(statuses)][:per_page])

    async def trace(self, request: Request) -> Response:
        self._check(request)
        job = request.path_params["job"]
        if job not in self.traces:
            raise _Answer({"message": "404 Not found"}, 404)
        return Response(self.traces[job], media_type="text/plain")

    async def list_mrs(self, request: Request) -> Response:
        pid = self._check(request)
        items = self.merge_requests.get(pid, [])
        branch, state = request.query_params.get("source_branch"), request.query_params.get("state")
        return JSONResponse([m for m in items if (not branch or m["source_branch"] == branch)
                             and (not state or m["state"] == state)])

    async def create_mr(self, request: Request) -> Response:
        pid = self._check(request)
        body = await self._body(request, "source_branch", "target_branch", "title")
        items = self.merge_requests.setdefault(pid, [])
        clash = next((m for m in items if m["source_branch"] == body["source_branch"] and m["state"] == "opened"),
                     None)
        if clash:
            return JSONResponse({"message": [f"Another open merge request already exists for this source branch: "
                                             f"!{clash['iid']}"]}, 409)
        iid = len(items) + 1
        mr = {"id": next(self._ids), "iid": iid, "project_id": pid, "title": body["title"],
              "description": body.get("description"), "state": "opened", "source_branch": body["source_branch"],
              "target_branch": body["target_branch"],
              "web_url": f"https://gitlab.example.com/{self.projects[pid]}/-/merge_requests/{iid}"}
        items.append(mr)
        return JSONResponse(mr, 201)
