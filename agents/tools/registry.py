"""The tool registry: each tool declares pydantic argument and result models, whether it only reads, and how it runs.

Invalid arguments never crash anything: they come back to the model as an ``InvalidArguments`` result with the
validation message. Expected failures (file not found, edit refused, path outside the workspace) come back as
``ToolFailed`` results. Anything else is a bug and propagates (the activity layer counts it as Unknown).

The registry renders its tools for the model APIs: ``openai_tools`` (``{"type": "function", "function": {...}}``,
strict mode by default) and ``anthropic_tools`` (``{name, description, input_schema}``); ``specs`` gives the
provider-neutral ``ToolSpec`` list the providers translate themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from agents.messages import ToolSpec
from agents.tools.schema import clean_schema, drop_nulls_for_defaults, strict_schema
from infra.errors import BosunError, InvalidArguments, Timeout, ToolFailed, describe_validation
from infra.names import show_data, show_text

ANY_FILE = "*"
"""Write key of a call that may write anything (it runs alone)."""


class Args(BaseModel):
    """Base of tool argument models: unknown arguments are an error (a misspelt option is never ignored)."""

    model_config = ConfigDict(extra="forbid")


class ToolOutput(BaseModel):
    """What a tool returns: the text the model sees, and a short summary for history."""

    text: str
    is_error: bool = False
    error_kind: str | None = None
    """When is_error: the ``kind`` of the error class (InvalidArguments, ToolFailed or Timeout)."""
    summary: str = ""
    data: dict[str, Any] = {}
    """The tool's result model, dumped (e.g. run_tests: passed/failed ids) for the workflow and history."""

    @classmethod
    def of(cls, text: str, result: BaseModel | None = None, summary: str = "") -> ToolOutput:
        """A successful output carrying ``result`` (the tool's declared result model) as ``data``."""
        return cls(text=text, summary=summary, data=result.model_dump(mode="json") if result is not None else {})

    @classmethod
    def failure(cls, e: BosunError) -> ToolOutput:
        """The output of a tool call that ended in ``e``: the model reads ``<kind>: <message>``."""
        message = show_text(str(e))
        return cls(text=f"{e.kind}: {message}", is_error=True, error_kind=e.kind,
                   summary=f"{e.kind}: {message[:120]}")


@dataclass
class ToolContext:
    """What a tool may use: the sandbox of this agent run, limits, and the agent's own checklist."""

    sandbox: Any
    """A sandbox.base.Sandbox; every file and command operation goes through it."""
    command_timeout_s: float = 300.0
    output_cap: int = 200_000
    todo: list[dict[str, Any]] = field(default_factory=list)
    """The agent's checklist (the ``todo`` tool): ``{"id", "text", "status"}`` items."""
    artifacts: Callable[[str], str] | None = None
    """Reads a ``sha256:`` ref from the artifact store (raw outputs that compaction replaced by summaries)."""
    workspace: Path | None = None
    """The workspace on the host (for code-search indexing only); default: the sandbox's."""

    def host_workspace(self) -> Path:
        """The workspace directory on the host; ToolFailed when the sandbox does not say."""
        ws = self.workspace if self.workspace is not None else getattr(self.sandbox, "workspace", None)
        if ws is None:
            raise ToolFailed("this tool needs the workspace directory, and the sandbox does not report one")
        return Path(ws)


def _path_key(arguments: dict[str, Any]) -> str:
    path = arguments.get("path")
    return path if isinstance(path, str) else ANY_FILE


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[ToolContext, Any], Awaitable[ToolOutput]]
    read_only: bool = True
    """Read-only tools may run in parallel; writing tools are serialized per file."""
    result: type[BaseModel] | None = None
    """The model of ``ToolOutput.data`` on success (documented for the workflow and tests)."""
    key: Callable[[dict[str, Any]], str] | None = None
    """Writing tools: the file a call writes, from its raw arguments; default: the ``path`` argument."""

    def schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments (refs inlined, no titles)."""
        return clean_schema(self.args)

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.schema())

    def openai(self, *, strict: bool = True) -> dict[str, Any]:
        """The tool as an OpenAI function tool (Chat Completions shape)."""
        params = strict_schema(self.schema()) if strict else self.schema()
        fn: dict[str, Any] = {"name": self.name, "description": self.description, "parameters": params}
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}

    def anthropic(self) -> dict[str, Any]:
        """The tool as an Anthropic tool definition."""
        return {"name": self.name, "description": self.description, "input_schema": self.schema()}


class Registry:
    def __init__(self, tools: Iterable[Tool]) -> None:
        self.tools = {t.name: t for t in tools}

    def names(self) -> list[str]:
        return list(self.tools)

    def _chosen(self, names: list[str] | None) -> list[Tool]:
        chosen = names if names is not None else list(self.tools)
        return [self.tools[n] for n in chosen if n in self.tools]

    def specs(self, names: list[str] | None = None) -> list[ToolSpec]:
        return [t.spec() for t in self._chosen(names)]

    def openai_tools(self, names: list[str] | None = None, *, strict: bool = True) -> list[dict[str, Any]]:
        """OpenAI-style function tools (strict mode unless ``strict=False``)."""
        return [t.openai(strict=strict) for t in self._chosen(names)]

    def anthropic_tools(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """Anthropic tool definitions."""
        return [t.anthropic() for t in self._chosen(names)]

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def write_key(self, name: str, arguments: dict[str, Any]) -> str | None:
        """The file a writing call touches (for per-file serialization), '*' if unknown, None if read-only."""
        tool = self.tools.get(name)
        if tool is None or tool.read_only:
            return None
        if not isinstance(arguments, dict):
            return ANY_FILE
        try:
            return show_text((tool.key or _path_key)(arguments))  # it crosses an activity (a model's lone surrogate)
        except Exception:  # noqa: BLE001 - malformed arguments: run it alone, execute() reports the error
            return ANY_FILE

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        tool = self.tools.get(name)
        if tool is None:
            return ToolOutput.failure(InvalidArguments(f"unknown tool {name!r}; available tools: "
                                                       f"{', '.join(self.tools)}"))
        if not isinstance(arguments, dict):
            return ToolOutput.failure(InvalidArguments(f"the arguments of {name} must be a JSON object, "
                                                       f"got {type(arguments).__name__}"))
        if "__raw__" in arguments:
            return ToolOutput.failure(InvalidArguments(f"the arguments of {name} are not valid JSON: "
                                                       f"{str(arguments['__raw__'])[:200]!r}"))
        try:
            args = tool.args.model_validate(drop_nulls_for_defaults(tool.args, arguments))
        except ValidationError as e:
            problems = describe_validation(e, where="(arguments)")
            return ToolOutput.failure(InvalidArguments(f"invalid arguments for {name}: {problems}"))
        try:
            return _encodable(await tool.run(ctx, args))
        except (InvalidArguments, ToolFailed, Timeout) as e:  # (the model's to act on; any other class is the run's)
            return ToolOutput.failure(e)


def _encodable(out: ToolOutput) -> ToolOutput:
    """``out`` with any file name that is not UTF-8 still in the process form shown (``infra.names.show_text``): a
    tool's result crosses an activity and goes into the artifact store, where such a name would fail the call. The
    tools show names in their shown form already; this holds for the ones a message or a library let through."""
    return out.model_copy(update={"text": show_text(out.text), "summary": show_text(out.summary),
                                  "data": show_data(out.data)})
