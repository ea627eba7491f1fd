"""The tool registry: each tool declares a pydantic argument model, whether it only reads, and how it runs.

Invalid arguments never crash anything: they come back to the model as an ``InvalidArguments`` result with the
validation message. Expected failures (file not found, edit refused, path outside the workspace) come back as
``ToolFailed`` results. Anything else is a bug and propagates (the activity layer counts it as Unknown).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.messages import ToolSpec
from infra.errors import InvalidArguments, ToolFailed, ToolTimeout


class ToolOutput(BaseModel):
    """What a tool returns: the text the model sees, and a short summary for history."""

    text: str
    is_error: bool = False
    error_kind: str | None = None
    """InvalidArguments, ToolFailed or Timeout when is_error."""
    summary: str = ""
    data: dict[str, Any] = {}
    """Structured extras (e.g. run_tests: passed/failed ids) for the workflow and history."""


@dataclass
class ToolContext:
    """What a tool may use: the sandbox of this agent run, and limits."""

    sandbox: Any
    """A sandbox.base.Sandbox; every file and command operation goes through it."""
    command_timeout_s: float = 300.0
    output_cap: int = 200_000
    todo: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[ToolContext, Any], Awaitable[ToolOutput]]
    read_only: bool = True
    """Read-only tools may run in parallel; writing tools are serialized per file."""

    def spec(self) -> ToolSpec:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(name=self.name, description=self.description, parameters=schema)


def _validation_message(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


class Registry:
    def __init__(self, tools: list[Tool]) -> None:
        self.tools = {t.name: t for t in tools}

    def specs(self, names: list[str] | None = None) -> list[ToolSpec]:
        chosen = names if names is not None else list(self.tools)
        return [self.tools[n].spec() for n in chosen if n in self.tools]

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def write_key(self, name: str, arguments: dict[str, Any]) -> str | None:
        """The file a writing call touches (for per-file serialization), '*' if unknown, None if read-only."""
        tool = self.tools.get(name)
        if tool is None or tool.read_only:
            return None
        path = arguments.get("path")
        return path if isinstance(path, str) else "*"

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        tool = self.tools.get(name)
        if tool is None:
            return _error("InvalidArguments", f"unknown tool {name!r}; available tools: {', '.join(self.tools)}")
        if "__raw__" in arguments:
            return _error("InvalidArguments", f"the arguments of {name} are not valid JSON: "
                                              f"{str(arguments['__raw__'])[:200]!r}")
        try:
            args = tool.args.model_validate(arguments)
        except ValidationError as e:
            return _error("InvalidArguments", f"invalid arguments for {name}: {_validation_message(e)}")
        try:
            return await tool.run(ctx, args)
        except InvalidArguments as e:
            return _error("InvalidArguments", str(e))
        except ToolFailed as e:
            return _error("ToolFailed", str(e))
        except ToolTimeout as e:
            return _error("Timeout", str(e))


def _error(kind: str, message: str) -> ToolOutput:
    return ToolOutput(text=f"{kind}: {message}", is_error=True, error_kind=kind, summary=f"{kind}: {message[:120]}")
