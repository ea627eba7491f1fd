"""The provider-neutral conversation types every provider translates to and from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    """One tool call requested by the model in an assistant turn."""

    id: str
    """Provider-assigned id, echoed back in the matching tool result."""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Parsed JSON arguments. Unparseable arguments from a provider arrive as ``{"__raw__": text}``."""


class Message(BaseModel):
    """One message of a transcript."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Assistant turns only: the tool calls of this turn (several = parallel tool calls)."""
    tool_call_id: str | None = None
    """Tool results only: the id of the call this answers."""
    name: str | None = None
    """Tool results only: the tool's name."""
    is_error: bool = False
    """Tool results only: the call failed (the content says why)."""


class Usage(BaseModel):
    """Token usage of one model call."""

    input_tokens: int = 0
    """Prompt tokens, including cached ones."""
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """Prompt tokens served from the provider's cache (OpenAI cached_tokens, Anthropic cache_read_input_tokens)."""
    cache_creation_input_tokens: int = 0
    """Anthropic only: prompt tokens written to the cache."""


class ToolSpec(BaseModel):
    """A tool as offered to the model: name, description and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class ModelResponse(BaseModel):
    """What one model call returns."""

    message: Message
    """The assistant message (role ``assistant``), with its tool calls."""
    usage: Usage = Field(default_factory=Usage)
    stop_reason: str | None = None
    """Provider's finish/stop reason, normalised: ``end_turn``, ``tool_use``, ``max_tokens`` or the raw value."""
    model: str = ""
    """The model that answered, as the provider reports it."""
