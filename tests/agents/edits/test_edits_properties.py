"""Property-style tests with a fixed random seed (no hypothesis): the engine applies what is
unique, refuses what is ambiguous, and never touches bytes outside the replaced region."""

from __future__ import annotations

import difflib
import random

import pytest

from agents.edits import EditRefused, apply_patch_to_files, apply_str_replace, apply_udiff
from agents.edits.document import Document

WORDS = "alpha beta gamma delta omega count total value item node left right".split()


def random_line(rng: random.Random, n: int) -> str:
    a, b = rng.sample(WORDS, 2)
    return f"{a}_{n} = {b}({rng.randrange(1000)})"


def random_file(rng: random.Random, n_lines: int) -> list[str]:
    """Unique lines (a counter in each) with some blank lines and indentation."""
    lines = []
    for n in range(n_lines):
        if rng.random() < 0.1:
            lines.append("")
        else:
            lines.append("    " * rng.randrange(3) + random_line(rng, n))
    return lines


def pick_block(rng: random.Random, lines: list[str]) -> tuple[int, int]:
    while True:
        start = rng.randrange(len(lines) - 4)
        end = start + rng.randrange(1, 5)
        if lines[start].strip() and lines[end - 1].strip():
            return start, end


def new_block(rng: random.Random, old: list[str]) -> list[str]:
    out = [line + "  # changed" if rng.random() < 0.5 else line for line in old]
    if rng.random() < 0.5:
        out.insert(rng.randrange(len(out) + 1), "    " + random_line(rng, 10_000 + rng.randrange(1000)))
    if out == old:
        out[0] += "  # changed"
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_edits_apply_exactly_where_expected(seed):
    rng = random.Random(seed)
    lines = random_file(rng, 60)
    start, end = pick_block(rng, lines)
    old, new = lines[start:end], new_block(rng, lines[start:end])
    expected = lines[:start] + new + lines[end:]
    nl = rng.choice(["\n", "\r\n"])
    bom = rng.choice(["", "\ufeff"])
    original = bom + nl.join(lines) + nl
    want = bom + nl.join(expected) + nl

    variant = rng.choice(["exact", "trailing_ws", "indent", "crlf_snippet"])
    old_s, new_s = "\n".join(old) + "\n", "\n".join(new) + "\n"
    if variant == "trailing_ws":
        old_s = "\n".join(line + " \t" for line in old) + "\n"
    elif variant == "indent":
        old_s = "\n".join("  " + line if line.strip() else line for line in old) + "\n"
        new_s = "\n".join("  " + line if line.strip() else line for line in new) + "\n"
    elif variant == "crlf_snippet":
        old_s, new_s = old_s.replace("\n", "\r\n"), new_s.replace("\n", "\r\n")
    out = apply_str_replace(original, old_s, new_s)
    assert out.status == "applied"
    assert out.text == want, (variant, out.message)
    # Bytes before and after the region are untouched.
    prefix = bom + nl.join(lines[:start])
    suffix = nl.join(lines[end:]) + nl
    assert out.text.startswith(prefix) and out.text.endswith(suffix)


@pytest.mark.parametrize("seed", range(30))
def test_duplicated_blocks_are_always_refused(seed):
    rng = random.Random(1000 + seed)
    lines = random_file(rng, 40)
    start, end = pick_block(rng, lines)
    block = lines[start:end]
    level = rng.choice(["exact", "trailing_ws", "indent_offset"])
    if level == "exact":
        copy = list(block)
    elif level == "trailing_ws":
        copy = [line + "   " for line in block]
    else:
        copy = ["        " + line if line.strip() else line for line in block]
    at = rng.randrange(len(lines) + 1)
    while start < at < end:
        at = rng.randrange(len(lines) + 1)
    doubled = lines[:at] + copy + lines[at:]
    original = "\n".join(doubled) + "\n"
    snippet = "\n".join(block) + "\n"
    if level == "trailing_ws":  # the snippet matches neither copy exactly, both ignoring trailing spaces
        snippet = "\n".join(line + "\t" for line in block) + "\n"
    if level == "indent_offset":  # the snippet matches neither copy exactly, both up to indentation
        snippet = "\n".join("\t" + line if line.strip() else line for line in block) + "\n"
    with pytest.raises(EditRefused) as info:
        apply_str_replace(original, snippet, "REPLACED\n")
    assert info.value.reason == "ambiguous"
    assert len(info.value.lines) >= 2


@pytest.mark.parametrize("seed", range(40))
def test_document_round_trip(seed):
    rng = random.Random(seed)
    alphabet = ["a", "b", " ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u201c"]
    raw = ("\ufeff" if rng.random() < 0.3 else "") + "".join(rng.choice(alphabet) for _ in range(rng.randrange(60)))
    doc = Document.parse(raw)
    assert doc.render() == raw
    # An edit inside one line leaves every other byte as it was.
    if "a" in doc.text:
        pos = doc.text.index("a")
        edited = doc.splice([(pos, pos + 1, "Z")]).render()
        assert edited == raw.replace("a", "Z", 1)


def _unified(a: list[str], b: list[str], shift: int) -> str:
    diff = difflib.unified_diff([x + "\n" for x in a], [x + "\n" for x in b], "a/f.py", "b/f.py", n=2)
    out = []
    for line in diff:
        if line.startswith("@@") and shift:
            head, rest = line[3:].split(" ", 1)
            start, _, count = head[1:].partition(",")
            line = f"@@ -{max(1, int(start) + shift)}{',' + count if count else ''} {rest}"
        out.append(line)
    return "".join(out)


@pytest.mark.parametrize("seed", range(30))
def test_generated_udiffs_and_patches_apply(seed):
    rng = random.Random(2000 + seed)
    lines = random_file(rng, 80)
    expected = list(lines)
    for _ in range(rng.randrange(1, 4)):
        start, end = pick_block(rng, expected)
        expected[start:end] = new_block(rng, expected[start:end])
    original = "\n".join(lines) + "\n"
    want = "\n".join(expected) + "\n"
    shift = rng.choice([0, 0, 3, -7, 40])  # wrong line numbers must not matter for unique hunks
    out = apply_udiff(original, _unified(lines, expected, shift))
    assert out.text == want

    # The same change as a Codex patch (context/removed/added lines, '@@' separators).
    body = []
    for line in difflib.unified_diff(lines, expected, n=2, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        body.append("@@" if line.startswith("@@") else line)
    patch = "*** Begin Patch\n*** Update File: f.py\n" + "\n".join(body) + "\n*** End Patch\n"
    files = apply_patch_to_files(patch, lambda p: original if p == "f.py" else None)
    assert files == {"f.py": want}
