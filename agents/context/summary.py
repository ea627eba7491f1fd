"""What a summary of a tool's output is: its text and the facts kept from it (failing tests, error lines, frames,
paths), and the helpers every summarizer shares."""

from __future__ import annotations

from pydantic import BaseModel, Field

LINE_CAP = 240
"""Longest line kept in a summary (longer ones are cut, with an ellipsis)."""


class Facts(BaseModel):
    """Information a summary kept, in machine-readable form."""

    failing_tests: list[str] = Field(default_factory=list)
    error_lines: list[str] = Field(default_factory=list)
    frames: list[str] = Field(default_factory=list)
    """Key stack frames as ``file:line in function``."""
    files_read: list[str] = Field(default_factory=list)
    """``path:start-end`` of files read."""
    files_changed: list[str] = Field(default_factory=list)
    tests_summary: str = ""
    """A test runner's summary line (``3 failed, 297 passed in 1.2s``)."""

    def merge(self, other: Facts) -> Facts:
        def union(a: list[str], b: list[str]) -> list[str]:
            return list(dict.fromkeys(a + b))
        return Facts(failing_tests=union(self.failing_tests, other.failing_tests),
                     error_lines=union(self.error_lines, other.error_lines),
                     frames=union(self.frames, other.frames),
                     files_read=union(self.files_read, other.files_read),
                     files_changed=union(self.files_changed, other.files_changed),
                     tests_summary=other.tests_summary or self.tests_summary)


class Summary(BaseModel):
    """A tool output's summary: which summarizer made it, the text the model sees, and the kept facts."""

    kind: str
    text: str
    facts: Facts = Field(default_factory=Facts)


def cut(line: str, cap: int = LINE_CAP) -> str:
    line = line.rstrip()
    return line if len(line) <= cap else line[:cap - 1] + "…"


# --------------------------------------------------------------------------------------------------- frames
def fold_frames(frames: list[str], head: int = 1, tail: int = 2) -> list[str]:
    """Consecutive repeats folded to ``frame (xN)``; then the first ``head`` and last ``tail`` entries kept."""
    folded: list[str] = []
    counts: list[int] = []
    for f in frames:
        if folded and folded[-1] == f:
            counts[-1] += 1
        else:
            folded.append(f)
            counts.append(1)
    shown = [f if n == 1 else f"{f} (x{n})" for f, n in zip(folded, counts, strict=True)]
    if len(shown) > head + tail + 1:
        hidden = sum(counts[head:len(counts) - tail])
        shown = shown[:head] + [f"... {hidden} more frames ..."] + shown[len(shown) - tail:]
    return shown
