"""Token estimates without a tokenizer.

The heuristic is one token per 4 characters (``CHARS_PER_TOKEN``), the usual rule of thumb for English and
code with BPE tokenizers (OpenAI's cl100k/o200k, Anthropic's), rounded up, plus ``MESSAGE_OVERHEAD`` tokens per
message for role and framing. No tokenizer is available offline here (tiktoken downloads its vocabularies at
first use), and a compaction decision needs a stable estimate more than an exact count: the threshold leaves
the slack. Providers report the real counts in ``Usage`` after each call.
"""

from __future__ import annotations

import json

from agents.messages import Message

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
"""Tokens per message for the role and the provider's framing."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of a text: ceil(len / 4)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def message_tokens(message: Message) -> int:
    """Estimated tokens of one message: content, tool calls (name and JSON arguments) and framing."""
    total = estimate_tokens(message.content) + MESSAGE_OVERHEAD
    for call in message.tool_calls:
        total += estimate_tokens(call.name) + estimate_tokens(json.dumps(call.arguments, ensure_ascii=False)) + 4
    return total


def transcript_tokens(messages: list[Message]) -> int:
    """Estimated tokens of a whole transcript."""
    return sum(message_tokens(m) for m in messages)
