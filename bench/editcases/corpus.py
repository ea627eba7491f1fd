"""Edit-corpus generator for ``bosun eval edits``: real changes between two released versions of Python packages.

For each file that differs between two versions, ``difflib`` gives the changed regions (hunks with three lines of
context, grown until the old text is unique in the file). Each change is rendered in all four edit formats
(``str_replace``, ``search_replace``, ``udiff``, ``apply_patch``), plus model-style variants:

* must still apply: indentation shifted, trailing whitespace (in the snippet or in the file), a tab-indented file
  edited with spaces, CRLF file with an LF edit (and the reverse), curly quotes, extra or missing edge blank lines,
  wrong hunk line numbers, blank context lines without their space, ``@@`` anchors, ``...`` elision, code fences,
  read_file line-number prefixes, a missing final newline, a partial-line ``str_replace``, ``replace_all``,
  several hunks at once, and the edit sent again (already applied);
* must be refused: an ambiguous snippet (exactly, or only after re-indentation), a hallucinated identifier, a stale
  view of the file (the edit was written against the previous version), text from another file, one-sided elision;
* the model mistakes of :mod:`bench.editcases.mistakes` (issues 14 and 38).

Expected results never come from the engine: they are the real new version of the file, or the old version with one
hunk spliced in (a list operation), transformed the same way as the file (tabs, CRLF) when the variant changes the
file. Every variant checks its own premise with simple independent line comparisons (e.g. "the re-indented snippet
has no exact match and exactly one match ignoring indentation"); cases whose premise does not hold are dropped.

Run ``python -m bench.editcases.corpus --out CASES.jsonl.gz`` (sdists are downloaded with pip into the cache directory,
``~/.cache/bosun-bench/edits`` by default), or call :func:`generate` on two source trees.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.editcases.mistakes import (
    ELISION_MARKER_STYLES,
    already_applied_fuzzy_cases,
    anchor_fuzzy_cases,
    blank_line_cases,
    blank_line_omitted_cases,
    elision_new_only_cases,
    indent_mismatch_cases,
    multi_hunk_window_cases,
    reindent_cases,
    repeated_block_cases,
    trailing_ws_two_places_cases,
)
from bench.editcases.render import (
    FORMATS,
    IDENT,
    KEYWORDS,
    MARKER_LIKE,
    PLACEHOLDER,
    Builder,
    Change,
    FileChange,
    Script,
    absent_at_every_level,
    block_starts,
    cascade_spans,
    cascade_target,
    changes,
    count_substring,
    crlf,
    curl_quotes,
    first_content_line,
    grow_unique,
    has_marker_lines,
    new_of,
    old_of,
    render,
    renderable,
    rng_of,
    tabify,
    text_of,
    trim_blank_edges,
    uniform_shift_matches,
)

#: (package, old version, new version): popular packages with real changes between two releases.
DEFAULT_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("requests", "2.31.0", "2.32.3"),
    ("flask", "2.3.3", "3.0.3"),
    ("click", "8.1.3", "8.1.7"),
    ("attrs", "23.1.0", "23.2.0"),
    ("rich", "13.6.0", "13.7.1"),
)
#: (project, old version, new version): consecutive releases of nine large projects, mostly bug-fix releases (the
#: kind of change the hidden corpus of issue 14 draws from upstream bug-fix commits).
PROJECT_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("requests", "2.27.1", "2.28.0"),
    ("requests", "2.32.3", "2.32.4"),
    ("flask", "2.2.5", "2.3.0"),
    ("flask", "3.0.3", "3.1.0"),
    ("seaborn", "0.12.2", "0.13.0"),
    ("xarray", "2023.12.0", "2024.1.0"),
    ("xarray", "2024.1.0", "2024.1.1"),
    ("pylint", "3.0.3", "3.0.4"),
    ("pylint", "3.1.0", "3.1.1"),
    ("pytest", "7.4.3", "7.4.4"),
    ("pytest", "8.0.0", "8.0.1"),
    ("astropy", "6.0.0", "6.0.1"),
    ("sphinx", "7.2.5", "7.2.6"),
    ("sphinx", "7.2.6", "7.3.0"),
    ("sphinx", "7.3.6", "7.3.7"),
    ("sympy", "1.12", "1.12.1"),
    ("sympy", "1.12.1", "1.13.0"),
    ("sympy", "1.13.0", "1.13.1"),
)
#: (project, old version, new version): releases of other projects, kept out of tuning: the engine is measured on
#: them (issue 38) without their failures being looked at while the engine is changed. The first ten were measured
#: once the issue's classes were fixed (two failure kinds found there, both older than the issue, were then fixed);
#: the last eight were measured only after that.
HELDOUT_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("jinja2", "3.1.2", "3.1.3"),
    ("werkzeug", "3.0.1", "3.0.3"),
    ("httpx", "0.26.0", "0.27.0"),
    ("black", "23.12.1", "24.1.0"),
    ("urllib3", "2.1.0", "2.2.0"),
    ("packaging", "23.2", "24.0"),
    ("marshmallow", "3.20.1", "3.20.2"),
    ("tornado", "6.3.3", "6.4"),
    ("pluggy", "1.3.0", "1.4.0"),
    ("isort", "5.12.0", "5.13.0"),
    ("pygments", "2.17.1", "2.17.2"),
    ("aiohttp", "3.9.1", "3.9.3"),
    ("starlette", "0.35.0", "0.36.0"),
    ("more-itertools", "10.1.0", "10.2.0"),
    ("networkx", "3.2", "3.2.1"),
    ("coverage", "7.4.0", "7.4.1"),
    ("scrapy", "2.11.0", "2.11.1"),
    ("fastapi", "0.109.0", "0.109.2"),
)
DEFAULT_CACHE = Path(os.environ.get("BOSUN_BENCH_CACHE", Path.home() / ".cache" / "bosun-bench")) / "edits"
MAX_FILE_LINES = 3000
MAX_HUNK_LINES = 40
MAX_HUNKS_PER_FILE = 12


@dataclass(frozen=True)
class Source:
    """A set of release pairs and how much of each to use."""

    packages: tuple[tuple[str, str, str], ...]
    max_lines: int = MAX_FILE_LINES
    """Longer files are skipped."""
    max_files: int | None = None
    """Changed files used per release pair (evenly spread over the sorted paths); None: all."""
    max_hunks: int = MAX_HUNKS_PER_FILE
    """Hunks used per file (single-hunk variants)."""
    max_hunks_long: int = MAX_HUNKS_PER_FILE
    """The same for files longer than ``MAX_FILE_LINES`` (each case carries the whole file)."""


#: The corpora: small packages' releases (the first corpus), nine large projects' bug-fix releases, and eighteen
#: other projects' releases held out of tuning.
SOURCES: dict[str, Source] = {
    "releases": Source(DEFAULT_PACKAGES),
    "projects": Source(PROJECT_PACKAGES, max_lines=12000, max_files=14, max_hunks=6, max_hunks_long=3),
    "heldout": Source(HELDOUT_PACKAGES, max_lines=12000, max_files=14, max_hunks=6, max_hunks_long=3),
}


def add_file_cases(builder: Builder, fc: FileChange, other_blocks: list[list[str]],
                   max_hunks: int = MAX_HUNKS_PER_FILE) -> None:
    """Every case for one changed file (single-hunk variants on at most ``max_hunks`` hunks)."""
    a, b = fc.a, fc.b
    a_text, b_text = text_of(a), text_of(b)
    raw = changes(a, b)
    base = f"{fc.pkg}:{fc.path}"
    grown = [grow_unique(a, ch) for ch in raw]
    usable = [(k, ch) for k, ch in enumerate(grown) if ch is not None
              and len(old_of(ch.script)) <= MAX_HUNK_LINES and len(new_of(ch.script)) <= MAX_HUNK_LINES]
    if len(usable) > max_hunks:
        step = len(usable) / max_hunks
        usable = [usable[int(i * step)] for i in range(max_hunks)]
    for k, ch in usable:
        hid = f"{base}:h{k}"
        _single_hunk_cases(builder, fc, hid, ch, a_text, b_text)
        _refusal_cases(builder, fc, hid, ch, raw[k], a_text, b_text, other_blocks)
        _mistake_cases(builder, fc, hid, ch, a_text)
    _multi_hunk_cases(builder, fc, base, raw, a_text, b_text)
    repeated_block_cases(builder, fc, base, raw, a_text)
    _ambiguous_cases(builder, fc, base, a_text)
    _replace_all_cases(builder, fc, base, a_text)


def _mistake_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str) -> None:
    """The model mistakes of :mod:`bench.editcases.mistakes` on one hunk."""
    expected = text_of(ch.expected(fc.a))
    elision_new_only_cases(bl, fc, hid, ch, a_text)
    elision_new_only_cases(bl, fc, hid, ch, a_text, ELISION_MARKER_STYLES, "elision_marker_styles")
    trailing_ws_two_places_cases(bl, fc, hid, ch, a_text)
    indent_mismatch_cases(bl, fc, hid, ch, a_text)
    blank_line_cases(bl, fc, hid, ch, a_text, expected)
    anchor_fuzzy_cases(bl, fc, hid, ch, a_text, expected)
    reindent_cases(bl, fc, hid, ch, a_text, expected)
    blank_line_omitted_cases(bl, fc, hid, ch, a_text, expected)
    already_applied_fuzzy_cases(bl, fc, hid, ch)


def _single_hunk_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str, b_text: str) -> None:
    a, path = fc.a, fc.path
    old, new = old_of(ch.script), new_of(ch.script)
    expected_lines = ch.expected(a)
    expected = text_of(expected_lines)

    def emit(category: str, fmts: list[str], original: str, exp: str | None, hunks: list[Change], **opts: Any):
        for fmt in fmts:
            if renderable(fmt, hunks):
                bl.add(f"{hid}:{category}:{fmt}", fmt, path, original, render(fmt, path, hunks, **opts), exp,
                       category)

    emit("exact", list(FORMATS), a_text, expected, [ch])
    added = [t for k, t in ch.script if k == "+"]
    removed = [t for k, t in ch.script if k == "-"]
    clean_added_blanks = all(t == "" or t.strip() for t in added)

    # indentation shifted (both sides, all lines)
    indents = [len(t) - len(t.lstrip(" ")) for t in old + new if t.strip()]
    if clean_added_blanks and indents and len([t for t in old if t.strip()]) >= 2 and "\t" not in "".join(old + new):
        d = min(indents)
        shifted: Script | None = None
        if d >= 4:
            shifted = [(kind, t[d:] if t.strip() else t) for kind, t in ch.script]
        else:
            shifted = [(kind, "    " + t if t.strip() else t) for kind, t in ch.script]
        s_old = old_of(shifted)
        if (count_substring(a_text, text_of(s_old)) == 0 and not block_starts(a, s_old, "rstrip")
                and len(block_starts(a, s_old, "strip")) == 1):
            emit("indent_shift", bl.formats(hid + "indent"), a_text, expected, [Change(ch.start, shifted)])

    # trailing whitespace in the snippet (context on both sides, removed lines)
    ws = [(kind, t + "  " if kind != "+" and t.strip() else t) for kind, t in ch.script]
    if old_of(ws) != old and len(block_starts(a, old_of(ws), "rstrip")) == 1:
        emit("trailing_ws", bl.formats(hid + "tws"), a_text, expected, [Change(ch.start, ws)])

    # trailing whitespace in the file, on the removed lines
    # (a removed line equal to a line of the new text could be read as kept: the premise excludes it)
    removed_keys = {t.rstrip() for t in removed if t.strip()}
    if removed_keys and not removed_keys & {t.rstrip() for t in new}:
        a_ws = list(a)
        j = ch.start
        for kind, t in ch.script:
            if kind == "+":
                continue
            if kind == "-" and t.strip():
                a_ws[j] = t + " \t "
            j += 1
        a_ws_text = text_of(a_ws)
        if count_substring(a_ws_text, text_of(old)) == 0 and len(block_starts(a_ws, old, "rstrip")) == 1:
            exp = text_of(a_ws[: ch.start] + new + a_ws[ch.end :])
            emit("file_trailing_ws", bl.formats(hid + "ftws"), a_ws_text, exp, [ch])

    # the file indented with tabs, the edit with spaces
    if clean_added_blanks and "\t" not in a_text and any(t.startswith("    ") for t in old):
        a_tab = [tabify(t) for t in a]
        if count_substring(text_of(a_tab), text_of(old)) == 0 and len(block_starts(a_tab, old, "strip")) == 1:
            emit("tabs_file_spaces_edit", bl.formats(hid + "tabs"), text_of(a_tab),
                 text_of([tabify(t) for t in expected_lines]), [ch])

    # line endings
    emit("crlf_file", bl.formats(hid + "crlf"), crlf(a_text), crlf(expected), [ch])
    for fmt in bl.formats(hid + "crlfedit"):
        if renderable(fmt, [ch]):
            payload = render(fmt, path, [ch])
            payload = ({k: crlf(v) if isinstance(v, str) else v for k, v in payload.items()}
                       if isinstance(payload, dict) else crlf(payload))
            bl.add(f"{hid}:crlf_edit:{fmt}", fmt, path, a_text, payload, expected, "crlf_edit")

    # curly quotes on context (both sides) and removed lines
    if any(q in "".join(old) for q in "'\""):
        sq = [(kind, curl_quotes(t) if kind != "+" else t) for kind, t in ch.script]
        s_old = old_of(sq)
        if (s_old != old and not block_starts(a, s_old, "strip") and len(block_starts(a, s_old, "fold")) == 1):
            emit("smart_quotes", bl.formats(hid + "quotes"), a_text, expected, [Change(ch.start, sq)])

    # an extra blank line at both edges (context on both sides)
    padded = [(" ", ""), *ch.script, (" ", "")]
    emit("edge_blank_extra", bl.formats(hid + "pad"), a_text, expected, [Change(ch.start, padded)])

    # blank context lines at the edges left out
    lo, hi = 0, len(ch.script)
    while lo < hi and ch.script[lo] == (" ", ""):
        lo += 1
    while hi > lo and ch.script[hi - 1] == (" ", ""):
        hi -= 1
    if (lo or hi < len(ch.script)) and any(k != " " for k, _ in ch.script[lo:hi]):
        trimmed = Change(ch.start + lo, ch.script[lo:hi])
        if old_of(trimmed.script) and count_substring(a_text, text_of(old_of(trimmed.script))) == 1:
            emit("edge_blank_missing", bl.formats(hid + "nopad"), a_text, expected, [trimmed])

    # diff specifics
    emit("wrong_line_numbers", ["udiff"], a_text, expected, [ch], shift=17 + rng_of(hid) % 40,
         bad_counts=bool(rng_of(hid, "counts") % 2))
    for fmt in ["udiff"] if renderable("udiff", [ch]) else []:
        bl.add(f"{hid}:no_file_header:udiff", fmt, path, a_text, render(fmt, path, [ch], no_header=True), expected,
               "no_file_header")
    if ch.end == len(a):
        emit("end_of_file", ["apply_patch"], a_text, expected, [ch], eof=True)
    emit("bom_file", bl.formats(hid + "bom", k=1), "\ufeff" + a_text, "\ufeff" + expected, [ch])
    if any(t == "" for k, t in ch.script if k == " "):
        emit("stripped_blank_context", bl.formats(hid + "sb", ("udiff", "apply_patch")), a_text, expected, [ch],
             strip_blank=True)
    anchor = next((a[j] for j in range(ch.start - 1, -1, -1)
                   if a[j].lstrip().startswith(("def ", "class ", "async def "))), None)
    if anchor:
        emit("patch_anchor", ["apply_patch"], a_text, expected, [ch], anchors=[anchor])

    # a file without a final newline, edited at its end
    if ch.end == len(a) and expected.strip():
        emit("no_final_newline_file", bl.formats(hid + "noeol"), a_text[:-1], expected[:-1], [ch])

    # code fences, line numbers, final newline
    emit("code_fence", bl.formats(hid + "fence", ("str_replace", "udiff", "apply_patch")), a_text, expected, [ch],
         fence=True)
    style = "arrow" if rng_of(hid, "style") % 2 else "tab"
    emit("line_numbers", bl.formats(hid + "num", ("str_replace", "search_replace")), a_text, expected, [ch],
         numbers=ch.start + 1, number_style=style)
    o_text = text_of(old)[:-1]
    if count_substring(a_text, o_text) == 1:
        emit("no_final_newline", ["str_replace"], a_text, expected, [ch], no_final_newline=True)

    # the edit indented with tabs, the file with spaces
    if clean_added_blanks and "\t" not in a_text and any(t.startswith("    ") for t in old):
        tabbed = [(kind, tabify(t)) for kind, t in ch.script]
        t_old = old_of(tabbed)
        if count_substring(a_text, text_of(t_old)) == 0 and cascade_target(a, t_old) == first_content_line(ch):
            emit("tabs_edit_spaces_file", bl.formats(hid + "tabedit"), a_text, expected, [Change(ch.start, tabbed)])

    # the same, when the old text has no indented line to learn the file's indentation from (the file has some: a
    # file without an indented line does not say how it indents)
    indented_new = any(t[:1] == " " for t in added if t.strip())
    indented_file = any(t.startswith("    ") and t.strip() for t in a)
    if (clean_added_blanks and "\t" not in a_text and indented_new and indented_file
            and not any(t[:1] in (" ", "\t") for t in old if t.strip())):
        a_tab = [tabify(t) for t in a]
        tab_text = text_of(a_tab)
        if count_substring(tab_text, text_of(old)) == 1 and cascade_target(a_tab, old) == first_content_line(ch):
            emit("tabs_file_unindented_old", bl.formats(hid + "tabs0", k=2), tab_text,
                 text_of([tabify(t) for t in expected_lines]), [ch])
        tabbed = [(kind, tabify(t)) for kind, t in ch.script]
        emit("tabs_edit_unindented_old", bl.formats(hid + "tabs1", k=2), a_text, expected,
             [Change(ch.start, tabbed)])

    # several of the above at once
    _combined_cases(bl, fc, hid, ch, a_text, expected_lines, clean_added_blanks)

    # '...' elision of unchanged leading context (both sides)
    _elision_case(bl, fc, hid, ch, a_text, expected)

    # a partial-line str_replace
    _substring_case(bl, fc, hid, ch, a_text)

    # the same edit sent again after it was applied
    # (only when the new text is real evidence: not a part of the old text, no '...' lines that read as elision)
    new_text = text_of(new)
    if (new_text.strip() and new_text.strip() not in text_of(old) and not has_marker_lines(old + new)
            and absent_at_every_level(expected_lines, old) and count_substring(expected, new_text) == 1
            and len(block_starts(expected_lines, new)) == 1):
        emit("already_applied", bl.formats(hid + "again"), expected, expected, [ch])
    # ... an edit that only deletes lines around the ones it keeps (its new text is part of its old text)
    if (new_text.strip() and new_text.strip() in text_of(old) and not has_marker_lines(old + new)
            and absent_at_every_level(expected_lines, old) and len(block_starts(expected_lines, new)) == 1
            and len(cascade_spans(expected_lines, new)) == 1):
        emit("already_applied_deletion", bl.formats(hid + "again-deletion"), expected, expected, [ch])


_SNIPPET_TRANSFORMS = ("shift", "quotes", "tws", "pad")
_ALL_TRANSFORMS = (*_SNIPPET_TRANSFORMS, "fence", "numbers", "crlf_edit", "crlf_file", "tabs", "bom")


def _shift(script: Script) -> Script:
    indents = [len(t) - len(t.lstrip(" ")) for _, t in script if t.strip()]
    d = min(indents) if indents else 0
    if d >= 4:
        return [(kind, t[d:] if t.strip() else t) for kind, t in script]
    return [(kind, "    " + t if t.strip() else t) for kind, t in script]


def _combined_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str, expected_lines: list[str],
                    clean_added_blanks: bool, n: int = 2) -> None:
    """Cases combining three variants (snippet, edit and file transforms), with the composed expected result."""
    import random

    rng = random.Random(rng_of(hid, "combined"))
    a = fc.a
    for attempt in range(n):
        fmt = rng.choice(FORMATS)
        picks = set(rng.sample(_ALL_TRANSFORMS, 3))
        if fmt == "search_replace":
            picks.discard("fence")
        if fmt not in ("str_replace", "search_replace"):
            picks.discard("numbers")
        if not clean_added_blanks or "\t" in a_text or "\t" in "".join(t for _, t in ch.script):
            picks -= {"shift", "tabs"}
        if len([t for t in old_of(ch.script) if t.strip()]) < 2:
            picks.discard("shift")
        if not any(t[:1] in (" ", "\t") for t in old_of(ch.script) if t.strip()):
            picks.discard("tabs")  # see the tabs_*_unindented_old categories
        if not any(q in "".join(t for k, t in ch.script if k != "+") for q in "'\""):
            picks.discard("quotes")
        if len(picks) < 2:
            continue
        script = list(ch.script)
        if "shift" in picks:
            script = _shift(script)
        if "quotes" in picks:
            script = [(kind, curl_quotes(t) if kind != "+" else t) for kind, t in script]
        if "tws" in picks:
            script = [(kind, t + "  " if kind != "+" and t.strip() else t) for kind, t in script]
        if "pad" in picks:
            script = [(" ", ""), *script, (" ", "")]
        lines = [tabify(t) for t in a] if "tabs" in picks else a
        s_old = old_of(script)
        text = text_of(lines)
        raw_blocks = block_starts(lines, s_old)
        if count_substring(text, text_of(s_old)) != len(raw_blocks):
            continue  # a match inside lines: not what the variant means
        if cascade_target(lines, s_old) != first_content_line(ch):
            continue
        exp = text_of([tabify(t) for t in expected_lines] if "tabs" in picks else expected_lines)
        original = text
        if "crlf_file" in picks:
            original, exp = crlf(original), crlf(exp)
        if "bom" in picks:
            original, exp = "\ufeff" + original, "\ufeff" + exp
        hunk = Change(ch.start, script)
        if not renderable(fmt, [hunk]):
            continue
        opts: dict[str, Any] = {"fence": "fence" in picks}
        if "numbers" in picks:
            opts.update(numbers=ch.start + (0 if "pad" in picks else 1), number_style=rng.choice(["tab", "arrow"]))
        payload = render(fmt, fc.path, [hunk], **opts)
        if "crlf_edit" in picks:
            payload = ({k: crlf(v) if isinstance(v, str) else v for k, v in payload.items()}
                       if isinstance(payload, dict) else crlf(payload))
        label = "+".join(sorted(picks))
        bl.add(f"{hid}:combined{attempt}[{label}]:{fmt}", fmt, fc.path, original, payload, exp, "combined")


def _elision_case(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str, expected: str) -> None:
    a = fc.a
    if has_marker_lines(a) or has_marker_lines(old_of(ch.script)):
        return  # a literal '...' line (Python's Ellipsis) would read as a second marker
    literal_in_new = has_marker_lines(new_of(ch.script))
    # leading context of at least 6 lines: keep 2, elide the middle, keep 2 before the first change
    first_change = next(i for i, (k, _) in enumerate(ch.script) if k != " ")
    need = 6 - first_change
    start, script = ch.start, list(ch.script)
    while need > 0 and start > 0:
        start -= 1
        script.insert(0, (" ", a[start]))
        need -= 1
    first_change = next(i for i, (k, _) in enumerate(script) if k != " ")
    if first_change < 6:
        return
    head, middle, tail = script[:2], script[2 : first_change - 2], script[first_change - 2 :]
    p1, p2 = old_of(head), old_of(tail)
    if not trim_blank_edges(p1) or len(block_starts(a, p1)) != 1 or len(block_starts(a, p2)) != 1:
        return
    if block_starts(a, p1)[0] + len(p1) > block_starts(a, p2)[0] or not middle:
        return
    indent = middle[0][1][: len(middle[0][1]) - len(middle[0][1].lstrip())]
    marker = indent + ("..." if rng_of(hid, "marker") % 2 else PLACEHOLDER)
    elided = Change(start, [*head, (" ", marker), *tail])
    for fmt in [] if literal_in_new else bl.formats(hid + "elide", ("str_replace", "search_replace"), k=2):
        if renderable(fmt, [elided]):
            bl.add(f"{hid}:elision:{fmt}", fmt, fc.path, a_text, render(fmt, fc.path, [elided]), expected,
                   "elision")
    # the same edit sent again: its changed piece is gone, its new pieces are there once each, in order
    b = expected.split("\n")[:-1]
    new_tail = new_of(tail)
    if (not literal_in_new and new_tail != old_of(tail) and absent_at_every_level(b, old_of(tail))
            and len(block_starts(b, new_tail)) == 1 and len(cascade_spans(b, old_of(head))) == 1
            and cascade_spans(b, old_of(head))[0][1] <= block_starts(b, new_tail)[0]):
        for fmt in bl.formats(hid + "elide-again", ("str_replace", "search_replace"), k=1):
            if renderable(fmt, [elided]):
                bl.add(f"{hid}:already_applied_elision:{fmt}", fmt, fc.path, expected,
                       render(fmt, fc.path, [elided]), expected, "already_applied_elision")
    # one-sided: the old text elides, the new text spells everything out -> must be refused
    one_sided = Change(start, [*head, ("-", marker), *[("+", t) for _, t in middle], *tail])
    for fmt in bl.formats(hid + "elide1", ("str_replace", "search_replace"), k=1):
        if renderable(fmt, [one_sided]):
            bl.add(f"{hid}:one_sided_elision:{fmt}", fmt, fc.path, a_text, render(fmt, fc.path, [one_sided]), None,
                   "one_sided_elision")


def _substring_case(bl: Builder, fc: FileChange, hid: str, ch: Change, a_text: str) -> None:
    """A one-line change edited as the smallest unique substring around the difference."""
    removed = [(i, t) for i, (k, t) in enumerate(ch.script) if k == "-"]
    added = [t for k, t in ch.script if k == "+"]
    if len(removed) != 1 or len(added) != 1:
        return
    old_line, new_line = removed[0][1], added[0]
    p = 0
    while p < min(len(old_line), len(new_line)) and old_line[p] == new_line[p]:
        p += 1
    s = 0
    while s < min(len(old_line), len(new_line)) - p and old_line[-1 - s] == new_line[-1 - s]:
        s += 1
    lo, hi = p, len(old_line) - s
    nlo, nhi = p, len(new_line) - s
    while True:
        needle = old_line[lo:hi]
        if needle.strip() and count_substring(a_text, needle) == 1:
            break
        if lo == 0 and hi == len(old_line):
            return
        lo, nlo = max(0, lo - 4), max(0, nlo - 4)
        hi, nhi = min(len(old_line), hi + 4), min(len(new_line), nhi + 4)
        if lo == 0:
            nlo = 0
        if hi == len(old_line):
            nhi = len(new_line)
    replacement = new_line[nlo:nhi] if (lo, hi) != (0, len(old_line)) else new_line
    if old_line[:lo] + replacement + old_line[hi:] != new_line or replacement == needle:
        return
    pos = a_text.find(needle)
    expected = a_text[:pos] + replacement + a_text[pos + len(needle) :]
    edit = {"old_str": needle, "new_str": replacement, "replace_all": False}
    bl.add(f"{hid}:substring:str_replace", "str_replace", fc.path, a_text, edit, expected, "substring")


def _refusal_cases(bl: Builder, fc: FileChange, hid: str, ch: Change, raw: Change, a_text: str, b_text: str,
                   other_blocks: list[list[str]]) -> None:
    a, b, path = fc.a, fc.b, fc.path
    old = old_of(ch.script)
    if has_marker_lines(old):
        return

    def emit(category: str, fmts: list[str], original: str, hunks: list[Change], **opts: Any) -> None:
        for fmt in fmts:
            if renderable(fmt, hunks):
                bl.add(f"{hid}:{category}:{fmt}", fmt, path, original, render(fmt, path, hunks, **opts), None,
                       category)

    # a hallucinated identifier (renamed consistently in the old and new text)
    idents = [m.group(0) for m in IDENT.finditer("\n".join(t for k, t in ch.script if k == "-") or "\n".join(old))]
    idents = [i for i in dict.fromkeys(idents) if i not in KEYWORDS]
    if idents:
        ident = idents[rng_of(hid, "ident") % len(idents)]
        fake = ident + ("s" if rng_of(hid, "fake") % 2 else "_obj")
        pat = re.compile(rf"\b{re.escape(ident)}\b")
        hall = [(kind, pat.sub(fake, t)) for kind, t in ch.script]
        if absent_at_every_level(a, old_of(hall)) and absent_at_every_level(a, new_of(hall)):
            emit("hallucinated_identifier", bl.formats(hid + "hall"), a_text, [Change(ch.start, hall)])

    # stale view: the edit was written against the old version; the file is already the new version
    kept = [(k, t) for k, t in ch.script if k != "+"]
    target = next((i for i, (k, t) in enumerate(kept) if k == "-" and t.strip()), None)
    if target is not None:
        stale: Script = []
        for i, (_k, t) in enumerate(kept):
            stale += [("-", t), ("+", t + "  # TODO: revisit")] if i == target else [(" ", t)]
        if absent_at_every_level(b, old_of(stale)) and absent_at_every_level(b, new_of(stale)):
            emit("stale_file", bl.formats(hid + "stale"), b_text, [Change(ch.start, stale)])

    # text from another file
    if other_blocks:
        block = other_blocks[rng_of(hid, "other") % len(other_blocks)]
        foreign = [(" ", t) for t in block]
        foreign[1] = ("-", block[1])
        foreign.insert(2, ("+", block[1] + "  # TODO: revisit"))
        if absent_at_every_level(a, block) and absent_at_every_level(a, new_of(foreign)):
            emit("other_file", bl.formats(hid + "other"), a_text, [Change(ch.start, foreign)])

    # a line of the old text left out, or written twice (a misremembered file)
    ctx_rows = [i for i, (k, t) in enumerate(ch.script) if k == " " and t.strip() and 0 < i < len(ch.script) - 1]
    if len(old) >= 5 and ctx_rows:
        i = ctx_rows[rng_of(hid, "drop") % len(ctx_rows)]
        for category, script in (("missing_middle_line", ch.script[:i] + ch.script[i + 1 :]),
                                 ("duplicated_line", ch.script[: i + 1] + ch.script[i:])):
            if absent_at_every_level(a, old_of(script)) and absent_at_every_level(a, new_of(script)):
                emit(category, bl.formats(hid + category, k=1), a_text, [Change(ch.start, script)])

    # a placeholder in the new text instead of the real lines
    runs = _added_runs(ch.script)
    if runs and not any("existing code" in t for t in a):
        lo, hi = runs[0]
        indent = ch.script[lo][1][: len(ch.script[lo][1]) - len(ch.script[lo][1].lstrip())]
        lazy = [*ch.script[:lo], ("+", indent + PLACEHOLDER), *ch.script[hi:]]
        emit("one_sided_elision", bl.formats(hid + "lazy"), a_text, [Change(ch.start, lazy)])

    # too little context: only the removed lines, which occur several times
    removed = [t for k, t in raw.script if k == "-"]
    if removed and trim_blank_edges(removed) == removed and len(block_starts(a, removed)) >= 2:
        bare = Change(raw.start, [(k, t) for k, t in raw.script if k != " "])
        emit("ambiguous", bl.formats(hid + "amb"), a_text, [bare], no_numbers=True)


def _added_runs(script: Script) -> list[tuple[int, int]]:
    """Runs of at least three consecutive non-blank added lines, as (start, end) indices into the script."""
    runs, i = [], 0
    while i < len(script):
        if script[i][0] == "+" and script[i][1].strip():
            j = i
            while j < len(script) and script[j][0] == "+":
                j += 1
            if j - i >= 3:
                runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def _multi_hunk_cases(bl: Builder, fc: FileChange, base: str, raw: list[Change], a_text: str, b_text: str) -> None:
    """Every hunk of the file at once (see :func:`multi_hunk_window_cases`), and with wrong line numbers."""
    if not 2 <= len(raw) <= 8:
        return
    if any(len(old_of(h.script)) > MAX_HUNK_LINES or len(new_of(h.script)) > MAX_HUNK_LINES for h in raw):
        return
    multi_hunk_window_cases(bl, fc, base, raw, a_text, b_text)
    if any(count_substring(a_text, text_of(old_of(h.script))) != 1 for h in raw):
        return
    spliced = list(fc.a)
    for h in reversed(raw):
        spliced = spliced[: h.start] + new_of(h.script) + spliced[h.end :]
    if text_of(spliced) == b_text and renderable("udiff", raw):
        bl.add(f"{base}:all:multi_hunk_wrong_numbers:udiff", "udiff", fc.path, a_text,
               render("udiff", fc.path, raw, shift=-(5 + rng_of(base) % 20)), b_text, "multi_hunk_wrong_numbers",
               len(raw))


def _ambiguous_cases(bl: Builder, fc: FileChange, base: str, a_text: str) -> None:
    """A repeated two-line block edited without context (exactly), and re-indented (only after re-indentation)."""
    a = fc.a
    seen: dict[tuple[str, str], list[int]] = {}
    for i in range(len(a) - 1):
        pair = (a[i], a[i + 1])
        if len(a[i].strip()) >= 8 and len(a[i + 1].strip()) >= 8 and not MARKER_LIKE.match(a[i]):
            seen.setdefault(pair, []).append(i)
    repeated = [(p, ix) for p, ix in seen.items() if len(ix) >= 2]
    if repeated:
        (l1, l2), ix = repeated[rng_of(base, "amb") % len(repeated)]
        ch = Change(ix[0], [("-", l1), ("+", l1 + "  # changed"), (" ", l2)])
        wrong = next(n for n in range(1, len(a) + 2) if n - 1 not in ix)  # a line number pointing at neither
        for fmt in bl.formats(base + "ambx", k=3):
            if renderable(fmt, [ch]):
                opts = {"no_numbers": True} if rng_of(base, "ambn") % 2 else {"shift": wrong - 1 - ix[0]}
                bl.add(f"{base}:rep:ambiguous:{fmt}", fmt, fc.path, a_text, render(fmt, fc.path, [ch], **opts),
                       None, "ambiguous")
        # ... resolved by the right @@ line number (udiff) or by an @@ anchor line between the places (apply_patch)
        j = rng_of(base, "ambj") % len(ix)
        at = Change(ix[j], ch.script)
        exp = text_of(at.expected(a))
        if renderable("udiff", [at]):
            bl.add(f"{base}:rep:ambiguous_resolved_by_line_number:udiff", "udiff", fc.path, a_text,
                   render("udiff", fc.path, [at]), exp, "ambiguous_resolved")
        last = Change(ix[-1], ch.script)
        for n in range(ix[-1] - 1, ix[-2] + 1, -1):
            line = a[n]
            if len(line.strip()) >= 8 and a.index(line) == n and renderable("apply_patch", [last]):
                bl.add(f"{base}:rep:ambiguous_resolved_by_anchor:apply_patch", "apply_patch", fc.path, a_text,
                       render("apply_patch", fc.path, [last], anchors=[line]), text_of(last.expected(a)),
                       "ambiguous_resolved")
                break
    # the same block (ignoring indentation) at two places, the snippet shifted by one odd column
    by_strip: dict[tuple[str, str], list[int]] = {}
    for i in range(len(a) - 1):
        if len(a[i].strip()) >= 8 and len(a[i + 1].strip()) >= 8:
            by_strip.setdefault((a[i].strip(), a[i + 1].strip()), []).append(i)
    for (_s1, _s2), ix in sorted(by_strip.items(), key=lambda kv: rng_of(base, kv[0])):
        if len(ix) < 2 or len({a[i] for i in ix}) < 2:
            continue  # want different indentations
        block = [" " + a[ix[0]], " " + a[ix[0] + 1]]
        if count_substring(a_text, text_of(block)) or block_starts(a, block, "rstrip"):
            continue
        if len(uniform_shift_matches(a, block)) < 2:
            continue
        ch = Change(ix[0], [("-", block[0]), ("+", block[0] + "  # changed"), (" ", block[1])])
        for fmt in bl.formats(base + "ambf", k=2):
            if renderable(fmt, [ch]):
                bl.add(f"{base}:rep:ambiguous_fuzzy:{fmt}", fmt, fc.path, a_text,
                       render(fmt, fc.path, [ch], no_numbers=True), None, "ambiguous_fuzzy")
        break


def _replace_all_cases(bl: Builder, fc: FileChange, base: str, a_text: str) -> None:
    """``replace_all`` renaming an identifier used several times."""
    counts: dict[str, int] = {}
    for m in IDENT.finditer(a_text):
        counts[m.group(0)] = counts.get(m.group(0), 0) + 1
    names = sorted(n for n, c in counts.items() if 3 <= c <= 30 and n not in KEYWORDS and len(n) >= 6)
    if not names:
        return
    name = names[rng_of(base, "ra") % len(names)]
    new_name = name + "_renamed"
    if new_name in a_text:
        return
    expected = a_text.replace(name, new_name)
    edit = {"old_str": name, "new_str": new_name, "replace_all": True}
    bl.add(f"{base}:all:replace_all:str_replace", "str_replace", fc.path, a_text, edit, expected, "replace_all")


# ---- sources ----------------------------------------------------------------------------------------------------


def read_tree(root: Path, max_lines: int = MAX_FILE_LINES) -> dict[str, str]:
    """``relative path -> text`` of the LF, UTF-8 Python files under ``root`` (top directory stripped)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*.py")):
        if p.is_symlink() or not p.is_file():
            continue
        try:
            text = p.read_bytes().decode("utf-8")  # bytes: read_text would turn CRLF into LF
        except (UnicodeDecodeError, OSError):
            continue
        if "\r" in text or not text.endswith("\n") or text.count("\n") > max_lines:
            continue
        rel = p.relative_to(root).as_posix()
        out[rel.split("/", 1)[1] if "/" in rel else rel] = text
    return out


def file_changes(pkg: str, old: dict[str, str], new: dict[str, str], max_files: int | None = None
                 ) -> list[FileChange]:
    """The files that differ between two trees (at most ``max_files``, evenly spread over the sorted paths)."""
    changed = [rel for rel in sorted(set(old) & set(new)) if old[rel] != new[rel]]
    if max_files is not None and len(changed) > max_files:
        step = len(changed) / max_files
        changed = [changed[int(i * step)] for i in range(max_files)]
    return [FileChange(pkg, rel, old[rel].split("\n")[:-1], new[rel].split("\n")[:-1]) for rel in changed]


def _file_blocks(text: str) -> list[list[str]]:
    lines = text.split("\n")[:-1]
    blocks = []
    for i in range(0, max(0, len(lines) - 5), 37):
        block = lines[i : i + 5]
        if all(t.strip() for t in block[:2]) and not has_marker_lines(block):
            blocks.append(block)
    return blocks


def other_file_blocks(tree: dict[str, str], n: int = 200, *, exclude: str | None = None,
                      per_file: dict[str, list[list[str]]] | None = None) -> list[list[str]]:
    """Some 5-line blocks of code (first line not blank) from the files of a tree other than ``exclude``.

    ``per_file`` caches the blocks of each file (the same tree is sampled once per changed file).
    """
    blocks: list[list[str]] = []
    for rel in sorted(tree):
        if rel == exclude:
            continue
        if per_file is None:
            blocks += _file_blocks(tree[rel])
            continue
        if rel not in per_file:
            per_file[rel] = _file_blocks(tree[rel])
        blocks += per_file[rel]
    step = max(1, len(blocks) // n)
    return blocks[::step][:n]


def generate(pairs: list[tuple[str, dict[str, str], dict[str, str]]], formats_per_variant: int = 2,
             source: Source | None = None) -> list[dict[str, Any]]:
    """Cases for ``(package label, old tree, new tree)`` pairs (trees as from :func:`read_tree`).

    ``source`` limits how many files and hunks are used (default: all files, ``MAX_HUNKS_PER_FILE`` hunks).
    """
    limits = source or Source(())
    bl = Builder(formats_per_variant)
    for pkg, old, new in pairs:
        cache: dict[str, list[list[str]]] = {}
        for fc in file_changes(pkg, old, new, limits.max_files):
            long = len(fc.a) > MAX_FILE_LINES
            add_file_cases(bl, fc, other_file_blocks(old, exclude=fc.path, per_file=cache),
                           limits.max_hunks_long if long else limits.max_hunks)
    return bl.cases


def _sdist(sdists: Path, pkg: str, version: str) -> Path | None:
    """The downloaded sdist of ``pkg==version`` (names compared the way pip normalises them)."""
    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    want = {f"{norm(pkg)}-{version}.tar.gz", f"{norm(pkg)}-{version}.zip"}
    for p in sorted(sdists.iterdir()):
        stem, _, rest = p.name.rpartition("-")
        if f"{norm(stem)}-{rest}".lower() in want:
            return p
    return None


def fetch(pkg: str, version: str, cache: Path) -> Path:
    """The unpacked sdist of ``pkg==version`` (downloaded with pip on first use).

    Only the package itself is taken from source (``--no-binary pkg``): its build requirements, needed by pip to
    read the sdist's metadata, may come as wheels.
    """
    dest = cache / "src" / f"{pkg}-{version}"
    if dest.is_dir():
        return dest
    sdists = cache / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    found = _sdist(sdists, pkg, version)
    if found is None:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", pkg, f"{pkg}=={version}",
               "-d", str(sdists), "-q"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        found = _sdist(sdists, pkg, version)
        if found is None:
            raise RuntimeError(f"could not download {pkg}=={version}: {proc.stderr.strip()[-500:]}")
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    if found.name.endswith(".zip"):
        with zipfile.ZipFile(found) as zf:
            zf.extractall(tmp)
    else:
        with tarfile.open(found) as tar:
            tar.extractall(tmp, filter="data")
    tmp.rename(dest)
    return dest


def build(cache: Path = DEFAULT_CACHE, packages: tuple[tuple[str, str, str], ...] = DEFAULT_PACKAGES,
          formats_per_variant: int = 2, source: str | None = None) -> list[dict[str, Any]]:
    """Download (once), diff and render ``packages`` into cases; ``source`` names one of ``SOURCES`` instead."""
    limits = SOURCES[source] if source is not None else Source(packages)
    pairs = []
    for pkg, v_old, v_new in limits.packages:
        pairs.append((f"{pkg}-{v_old}..{v_new}", read_tree(fetch(pkg, v_old, cache), limits.max_lines),
                      read_tree(fetch(pkg, v_new, cache), limits.max_lines)))
    return generate(pairs, formats_per_variant, limits)


def write_jsonl(cases: list[dict[str, Any]], out: Path) -> None:
    """Write cases one per line; gzip-compressed when the name ends in ``.gz``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    opener = gzip.open if out.name.endswith(".gz") else open
    with opener(tmp, "wt", encoding="utf-8") as f:  # type: ignore[operator]
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate the edit corpus from real package releases.")
    ap.add_argument("--out", type=Path, default=DEFAULT_CACHE / "corpus.jsonl.gz", help="JSONL (.gz: compressed)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--formats-per-variant", type=int, default=2)
    ap.add_argument("--source", choices=sorted(SOURCES), default="releases",
                    help="releases: small packages (the first corpus); projects: nine large projects; heldout: "
                         "eighteen other projects, kept out of tuning")
    args = ap.parse_args(argv)
    cases = build(args.cache, formats_per_variant=args.formats_per_variant, source=args.source)
    write_jsonl(cases, args.out)
    print(f"wrote {len(cases)} cases to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
