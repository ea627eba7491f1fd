"""The agent's own checklist, kept in ``ToolContext.todo``.

``set`` replaces the whole list (the model sends every item each time, so the list survives even when a fresh
context is built per call); ``add``, ``update`` and ``list`` work on the list already in the context.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agents.tools.registry import Args, ToolContext, ToolOutput
from infra.errors import InvalidArguments

Status = Literal["pending", "in_progress", "done", "cancelled"]
_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "cancelled": "[-]"}


class TodoItem(BaseModel):
    id: int = Field(ge=1)
    text: str = Field("", description="The item's text (may be left empty in an update to keep it).")
    status: Status = "pending"


class TodoArgs(Args):
    action: Literal["set", "add", "update", "list"] = Field(description=(
        "set: replace the whole list with `items`; add: append items with these texts; update: change the status "
        "(and text) of the items with these ids; list: show the list."))
    items: list[TodoItem] | None = Field(None, description="For set: the complete list. For update: the changed items.")
    texts: list[str] | None = Field(None, description="For add: the new items' texts.")


class TodoResult(BaseModel):
    items: list[TodoItem]


def render(items: list[TodoItem]) -> str:
    if not items:
        return "(the checklist is empty)"
    done = sum(1 for i in items if i.status == "done")
    rows = [f"{_MARK[i.status]} {i.id}. {i.text}" for i in items]
    return "\n".join([f"checklist: {done}/{len(items)} done", *rows])


async def todo(ctx: ToolContext, a: TodoArgs) -> ToolOutput:
    items = [TodoItem.model_validate(i) for i in ctx.todo]
    if a.action == "set":
        if a.items is None:
            raise InvalidArguments("todo set needs `items` (the complete list)")
        if any(not i.text.strip() for i in a.items):
            raise InvalidArguments("todo set: every item needs a text")
        ids = [i.id for i in a.items]
        if len(set(ids)) != len(ids):
            raise InvalidArguments(f"todo set: item ids must be unique, got {ids}")
        items = list(a.items)
    elif a.action == "add":
        if not a.texts or any(not t.strip() for t in a.texts):
            raise InvalidArguments("todo add needs `texts` (one or more non-empty item texts)")
        next_id = max((i.id for i in items), default=0) + 1
        for n, text in enumerate(a.texts):
            items.append(TodoItem(id=next_id + n, text=text))
    elif a.action == "update":
        if not a.items:
            raise InvalidArguments("todo update needs `items` (id and new status of each changed item)")
        by_id = {i.id: i for i in items}
        unknown = [i.id for i in a.items if i.id not in by_id]
        if unknown:
            raise InvalidArguments(f"todo update: no item with id {unknown}; existing ids: {sorted(by_id)}")
        for change in a.items:
            current = by_id[change.id]
            current.status = change.status
            if change.text.strip():
                current.text = change.text
    ctx.todo[:] = [i.model_dump() for i in items]
    return ToolOutput.of(render(items), TodoResult(items=items), f"todo {a.action}: {len(items)} items")
