"""The provider interface: one model call, provider-neutral messages in, a ModelResponse out."""

from __future__ import annotations

import abc

from agents.messages import Message, ModelResponse, ToolSpec


class Provider(abc.ABC):
    """A model endpoint. Implementations: openai-compatible, anthropic (over httpx), scripted (the test double)."""

    name: str
    """Spec-style name for history, e.g. ``anthropic:claude-sonnet-4-5`` or ``scripted:demo.jsonl``."""

    @abc.abstractmethod
    async def complete(self, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int = 4096
                       ) -> ModelResponse:
        """Send the conversation (system message first, if any) and return the assistant's answer.

        Raises ProviderError (retryable or not, with retry_after) for API failures.
        """

    async def aclose(self) -> None:
        """Release connections."""
