"""The provider interface: one model call, provider-neutral messages in, a ModelResponse out."""

from __future__ import annotations

import abc

from agents.messages import Message, ModelResponse, ToolSpec

MAX_TOKENS = 4096
"""The most tokens a response is asked for (a model's profile may ask for fewer: a small local window)."""


class Provider(abc.ABC):
    """A model endpoint. Implementations: openai-compatible, anthropic (over httpx), scripted (the test double)."""

    name: str
    """Spec-style name for history, e.g. ``anthropic:claude-sonnet-4-5`` or ``scripted:demo.jsonl``."""

    @abc.abstractmethod
    async def complete(self, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int = MAX_TOKENS
                       ) -> ModelResponse:
        """Send the conversation (system message first, if any) and return the assistant's answer.

        Raises ProviderError (retryable or not, with retry_after) for API failures.
        """

    async def aclose(self) -> None:
        """Release connections."""
