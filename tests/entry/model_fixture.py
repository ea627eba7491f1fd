"""A fake model server that replays a bosun trajectory over the real wire formats, for end-to-end runs.

It speaks OpenAI Chat Completions streaming (``POST /v1/chat/completions``: ``chat.completion.chunk`` events, tool-call
arguments cut into fragments, a usage chunk, ``data: [DONE]``) and Anthropic Messages streaming (``POST
/v1/messages``: ``message_start``, ``content_block_*`` with ``input_json_delta`` fragments, ``message_delta``,
``message_stop``). It is not the ``scripted:`` test double: bosun talks to it through its real providers over
HTTP, exactly as to a real model server. Which agent is asking is read from the request (the role's system prompt,
the subtask in the first user message); which turn from the number of assistant messages so far.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ROLE_MARKERS = {"You are bosun's planner": "planner", "You are bosun's debugger": "debugger",
                "You are a bosun engineer agent": "fast_edit", "You are a bosun explorer agent": "explorer",
                "You are bosun, a careful": "solo"}


def _text(content: Any) -> str:
    """Text of a message's content: a string, or a list of blocks (Anthropic, OpenAI parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _fragments(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class FakeModel:
    """Replays ``turns`` (a trajectory: one JSON object per assistant turn, with ``agent``) per agent and turn."""

    turns: list[dict[str, Any]]
    fail: dict[str, tuple[int, dict]] = field(default_factory=dict)
    """Agent key -> (HTTP status, error body) answered instead of a turn (e.g. a 401 for one agent)."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request: wire format, agent, turn, headers."""
    hold: set[str] = field(default_factory=set)
    """Agent keys whose requests are held open: the status line and headers go out, then nothing until the client
    closes the connection (a model that takes its time)."""
    held: list[dict[str, Any]] = field(default_factory=list)
    """Each request held: its agent, when it came and when the client closed it (``closed``: None while open)."""
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def from_file(cls, path: Path, **kw: Any) -> FakeModel:
        return cls([json.loads(line) for line in path.read_text().splitlines() if line.strip()], **kw)

    def agent_of(self, system: str, first_user: str) -> str:
        role = next((r for marker, r in ROLE_MARKERS.items() if marker in system), "solo")
        if role == "fast_edit" and "Your subtask (" in first_user:
            return f"fast_edit:{first_user.split('Your subtask (', 1)[1].split(')', 1)[0]}"
        return role

    def turn_for(self, agent: str, n: int) -> dict[str, Any]:
        mine = [t for t in self.turns if t.get("agent", "solo") == agent]
        if not mine:
            return {"content": f"(no recorded turns for {agent})"}
        return mine[min(n, len(mine) - 1)]

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._openai, methods=["POST"]),
                                 Route("/v1/messages", self._anthropic, methods=["POST"])])

    def _record(self, wire: str, request: Request, agent: str, n: int) -> None:
        self.requests.append({"wire": wire, "agent": agent, "turn": n + 1, "headers": dict(request.headers)})

    # -- OpenAI Chat Completions ------------------------------------------------------------------------------

    async def _openai(self, request: Request) -> Response:
        body = await request.json()
        msgs = body["messages"]
        system = _text(next((m["content"] for m in msgs if m["role"] == "system"), ""))
        first_user = _text(next((m["content"] for m in msgs if m["role"] == "user"), ""))
        n = sum(1 for m in msgs if m["role"] == "assistant")
        agent = self.agent_of(system, first_user)
        self._record("openai", request, agent, n)
        if agent in self.fail:
            status, error = self.fail[agent]
            return JSONResponse(error, status_code=status)
        if agent in self.hold:
            return self._held_open(agent)
        turn = self.turn_for(agent, n)
        assert body.get("stream") is True, "bosun streams"
        return StreamingResponse(self._openai_chunks(body["model"], turn), media_type="text/event-stream")

    def _held_open(self, agent: str) -> Response:
        record: dict[str, Any] = {"agent": agent, "opened": time.monotonic(), "closed": None}
        self.held.append(record)

        async def nothing():
            try:
                await asyncio.Event().wait()  # starlette cancels this when the client disconnects
                yield b""
            finally:
                record["closed"] = time.monotonic()
        return StreamingResponse(nothing(), media_type="text/event-stream")

    async def _openai_chunks(self, model: str, turn: dict[str, Any]):
        cid = f"chatcmpl-{next(self._ids)}"

        def chunk(delta: dict, finish: str | None = None) -> str:
            return "data: " + json.dumps({"id": cid, "object": "chat.completion.chunk", "created": 1_700_000_000,
                                          "model": model, "choices": [{"index": 0, "delta": delta,
                                                                       "finish_reason": finish}]}) + "\n\n"
        yield chunk({"role": "assistant", "content": ""})
        for piece in _fragments(turn.get("content", ""), 11):
            yield chunk({"content": piece})
        calls = turn.get("tool_calls", [])
        for i, call in enumerate(calls):
            call_id = f"call_{next(self._ids)}"
            yield chunk({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                         "function": {"name": call["name"], "arguments": ""}}]})
            for piece in _fragments(json.dumps(call.get("arguments", {}))):
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls" if calls else "stop")
        yield "data: " + json.dumps({"id": cid, "object": "chat.completion.chunk", "model": model, "choices": [],
                                     "usage": {"prompt_tokens": 1200, "completion_tokens": 80,
                                               "total_tokens": 1280}}) + "\n\n"
        yield "data: [DONE]\n\n"

    # -- Anthropic Messages -----------------------------------------------------------------------------------

    async def _anthropic(self, request: Request) -> Response:
        body = await request.json()
        system = _text(body.get("system", ""))
        msgs = body["messages"]
        first_user = _text(next((m["content"] for m in msgs if m["role"] == "user"), ""))
        n = sum(1 for m in msgs if m["role"] == "assistant")
        agent = self.agent_of(system, first_user)
        self._record("anthropic", request, agent, n)
        if agent in self.fail:
            status, error = self.fail[agent]
            return JSONResponse(error, status_code=status)
        if agent in self.hold:
            return self._held_open(agent)
        assert body.get("stream") is True, "bosun streams"
        return StreamingResponse(self._anthropic_events(body["model"], self.turn_for(agent, n)),
                                 media_type="text/event-stream")

    async def _anthropic_events(self, model: str, turn: dict[str, Any]):
        def event(name: str, data: dict) -> str:
            return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"
        yield event("message_start", {"message": {
            "id": f"msg_{next(self._ids)}", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1200, "output_tokens": 1}}})
        index = 0
        if turn.get("content"):
            yield event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
            yield event("ping", {})
            for piece in _fragments(turn["content"], 11):
                yield event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}})
            yield event("content_block_stop", {"index": 0})
            index = 1
        calls = turn.get("tool_calls", [])
        for call in calls:
            yield event("content_block_start", {"index": index, "content_block": {
                "type": "tool_use", "id": f"toolu_{next(self._ids)}", "name": call["name"], "input": {}}})
            for piece in _fragments(json.dumps(call.get("arguments", {}))):
                yield event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta",
                                                                               "partial_json": piece}})
            yield event("content_block_stop", {"index": index})
            index += 1
        yield event("message_delta", {"delta": {"stop_reason": "tool_use" if calls else "end_turn",
                                                "stop_sequence": None}, "usage": {"output_tokens": 80}})
        yield event("message_stop", {})
