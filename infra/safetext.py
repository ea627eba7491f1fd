"""Text from models and repositories, made safe to print: no terminal control sequences, no bidi overrides.

Everything bosun shows on a terminal may come from a model or a repository (plan goals, tool previews, diffs, file
names, error chains): an ESC sequence could rewrite the operator's terminal, a bidi override could make code read
differently than it runs. :func:`printable` replaces C0/C1 control characters (but tab and newline) and the Unicode
bidi controls with ``\\uXXXX`` - a form that is also a valid escape inside a JSON string, so JSON output stays
valid. The CLI wraps its stdout and stderr in :class:`SafeStream`.
"""

from __future__ import annotations

import re
from typing import TextIO

from infra.names import show_text

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control and bidi characters shown as ``\\uXXXX``, and lone surrogates (a file name's byte
    that is not UTF-8, a model's stray JSON escape) as ``infra.names.show_text`` shows them: a terminal cannot take
    them."""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", show_text(text))


class SafeStream:
    """A text stream that writes :func:`printable` text to the stream it wraps."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
