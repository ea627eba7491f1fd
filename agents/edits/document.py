"""A file's text in a normalised, byte-preserving form.

Matching happens on an "LF view": the text without its BOM and with every line separator
written as ``\\n``. The document remembers the separators (uniform CRLF, uniform LF, or a
per-line list for files that mix them) and the BOM, so that ``render()`` gives back the
original bytes exactly and a splice only changes the separators inside the replaced region.
New separators introduced by an edit use the style of the replaced lines (or the file's
dominant style). Tabs are never expanded and nothing outside a replaced region is touched.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cached_property

BOM = "\ufeff"
_SEP_RE = re.compile(r"(\r\n|\n)")


def to_lf(snippet: str) -> str:
    """Normalise a snippet coming from the model: drop a BOM, turn CRLF into LF."""
    if snippet.startswith(BOM):
        snippet = snippet[1:]
    return snippet.replace("\r\n", "\n")


class Document:
    """Immutable view of a file's text; see the module docstring."""

    def __init__(self, text: str, *, bom: bool, sep: str, seps: list[str] | None) -> None:
        self.text = text
        self.bom = bom
        self.sep = sep
        self._seps = seps

    @classmethod
    def parse(cls, raw: str) -> Document:
        """Build the LF view of ``raw``; lone ``\\r`` characters are kept as content."""
        bom = raw.startswith(BOM)
        body = raw[1:] if bom else raw
        crlf = body.count("\r\n")
        if crlf == 0:
            return cls(body, bom=bom, sep="\n", seps=None)
        if crlf == body.count("\n"):
            return cls(body.replace("\r\n", "\n"), bom=bom, sep="\r\n", seps=None)
        parts = _SEP_RE.split(body)
        seps = parts[1::2]
        sep = Counter(seps).most_common(1)[0][0]
        return cls("\n".join(parts[0::2]), bom=bom, sep=sep, seps=seps)

    def render(self) -> str:
        """Return the file's text with its own BOM and line separators."""
        if self._seps is None:
            body = self.text if self.sep == "\n" else self.text.replace("\n", self.sep)
        else:
            contents = self.text.split("\n")
            out: list[str] = []
            for content, sep in zip(contents, self._seps, strict=False):
                out.append(content)
                out.append(sep)
            out.append(contents[-1])
            body = "".join(out)
        return (BOM if self.bom else "") + body

    # ---- line geometry (0-based line indices into the LF view) ----

    @cached_property
    def contents(self) -> list[str]:
        """``text.split("\\n")``: includes a final ``""`` when the file ends with a newline."""
        return self.text.split("\n")

    @cached_property
    def lines(self) -> list[str]:
        """The real lines (without the empty pseudo-line after a final newline)."""
        contents = self.contents
        if len(contents) > 1 and contents[-1] == "":
            return contents[:-1]
        if contents == [""]:
            return []
        return contents

    def line_start(self, index: int) -> int:
        """Offset in ``text`` where entry ``index`` of ``contents`` starts."""
        return sum(map(len, self.contents[:index])) + index

    def line_of(self, offset: int) -> int:
        """0-based line index containing ``offset``."""
        return self.text.count("\n", 0, offset)

    def block_span(self, start: int, end: int) -> tuple[int, int]:
        """Character span of whole lines ``start..end-1`` (without the last line's newline)."""
        s = self.line_start(start)
        last = s + sum(map(len, self.contents[start : end - 1])) + (end - 1 - start)
        return s, last + len(self.contents[end - 1])

    def block_splice(self, start: int, end: int, new_lines: list[str]) -> tuple[int, int, str]:
        """Splice that replaces whole lines ``start..end-1`` by ``new_lines``.

        An empty ``new_lines`` removes the lines together with one newline, so a deletion never
        leaves a blank line behind; ``start == end`` inserts before line ``start``.
        """
        n_contents = len(self.contents)
        if start == end:
            if not new_lines:
                return 0, 0, ""
            joined = "\n".join(new_lines)
            if start < len(self.lines):
                pos = self.line_start(start)
                return pos, pos, joined + "\n"
            end_pos = len(self.text)
            if not self.text or self.text.endswith("\n"):
                return end_pos, end_pos, joined + "\n"
            return end_pos, end_pos, "\n" + joined  # the file had no final newline: keep it so
        s, e = self.block_span(start, end)
        if new_lines:
            return s, e, "\n".join(new_lines)
        if end < n_contents:  # there is a newline after the block: take it with the lines
            return s, e + 1, ""
        if start > 0:  # last line without a final newline: take the newline before it
            return s - 1, e, ""
        return s, e, ""

    # ---- editing ----

    def splice(self, edits: list[tuple[int, int, str]]) -> Document:
        """Apply non-overlapping ``(start, end, replacement)`` edits given in LF-view offsets."""
        if not edits:
            return self
        ordered = sorted(edits, key=lambda ed: (ed[0], ed[1]))
        pieces: list[str] = []
        pos = 0
        for s, e, new in ordered:
            if s < pos:
                raise ValueError("overlapping edits")
            pieces.append(self.text[pos:s])
            pieces.append(new)
            pos = e
        pieces.append(self.text[pos:])
        new_text = "".join(pieces)
        if self._seps is None:
            return Document(new_text, bom=self.bom, sep=self.sep, seps=None)
        seps_out: list[str] = []
        prev = 0
        for s, e, new in ordered:
            a, b = self.line_of(s), self.line_of(e)
            replaced = self._seps[a:b]
            style = Counter(replaced).most_common(1)[0][0] if replaced else self.sep
            seps_out.extend(self._seps[prev:a])
            seps_out.extend([style] * new.count("\n"))
            prev = b
        seps_out.extend(self._seps[prev:])
        return Document(new_text, bom=self.bom, sep=self.sep, seps=seps_out)
