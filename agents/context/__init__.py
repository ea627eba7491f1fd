"""Context management for agents: static context, token estimates, tool-output summaries and compaction."""

from agents.context.compaction import (
    COMPACTED_MARK,
    NOTE_MARK,
    CompactionEvent,
    CompactionResult,
    StoredOutput,
    compact,
    compaction_summary,
    needs_compaction,
    transcript_activity,
)
from agents.context.static import StaticContext, build_static_context, pinned_instructions
from agents.context.summarize import detect_kind, summarize_output
from agents.context.summary import Facts, Summary
from agents.context.tokens import estimate_tokens, message_tokens, transcript_tokens

__all__ = [
    "COMPACTED_MARK",
    "NOTE_MARK",
    "CompactionEvent",
    "CompactionResult",
    "Facts",
    "StaticContext",
    "StoredOutput",
    "Summary",
    "build_static_context",
    "compact",
    "compaction_summary",
    "detect_kind",
    "estimate_tokens",
    "message_tokens",
    "needs_compaction",
    "pinned_instructions",
    "summarize_output",
    "transcript_activity",
    "transcript_tokens",
]
