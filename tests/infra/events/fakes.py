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
