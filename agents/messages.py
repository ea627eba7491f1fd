"""The provider-neutral conversation types every provider translates to and from."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

CALL_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def safe_call_id(value: str) -> str:
    """A provider's tool-call id if it is plain (letters, digits, ``_ . : -``, at most 128), else a stable stand-in
    derived from it. The transcript keeps the stand-in on both sides (the call and its result), so providers still
    pair them; nothing hostile in an id reaches a terminal, a signal name or a file name."""
    if isinstance(value, str) and CALL_ID.fullmatch(value):
        return value
    return "call_" + hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()[:24]


class ToolCall(BaseModel):
    """One tool call requested by the model in an assistant turn."""

    id: str
    """Provider-assigned id, echoed back in the matching tool result (see ``safe_call_id``)."""

    @field_validator("id", mode="before")
    @classmethod
    def _plain_id(cls, v: object) -> str:
        return safe_call_id(v)  # type: ignore[arg-type]

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

    @field_validator("tool_call_id", mode="before")
    @classmethod
    def _plain_call_id(cls, v: object) -> str | None:
        return None if v is None else safe_call_id(v)  # type: ignore[arg-type]


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
