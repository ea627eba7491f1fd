"""File names as bosun carries them: one reversible text form for any name's bytes.

A file name on Linux is bytes and need not be UTF-8 (``touch "$(printf '\\377\\376bin')"``, or the test fixtures of
real repositories). Inside one process bosun holds a name as ``os.fsdecode`` gives it: a str in which the bytes that
are not UTF-8 are lone surrogates (``surrogateescape``, the *process form*). Such a str cannot be encoded as UTF-8,
so it cannot cross an activity (JSON), go into the artifact store, a model's context or a page. Wherever a name
leaves the process that read it, it is in its *shown form*; wherever one comes back (a tool's argument), it is
turned back into the bytes it stands for:

- a name whose bytes are UTF-8 and that does not start with ``"`` is shown as itself: nothing changes for the
  names of almost every file;
- any other name is C-quoted the way git quotes paths (``git status``, ``git diff``, fast-import): in double
  quotes, ``\\"``, ``\\\\``, ``\\a \\b \\t \\n \\v \\f \\r`` for those control bytes, ``\\ooo`` (octal) for the
  other control bytes and for every byte that is not part of a UTF-8 character; UTF-8 characters stay as they are:
  ``"\\377\\376bin"``, ``"d\\351j\\340 vu.py"``.

A name shown as itself never starts with ``"``, so the two cases cannot be confused: :func:`name_bytes` gives back
exactly the bytes :func:`shown` was given, and it also reads the paths git quotes (``"d\\303\\251j\\303\\240"``).

Free text that holds a name in the process form (an error message, a note) goes through :func:`show_text`: each
byte that is not UTF-8 shown as ``\\ooo``, the notation inside the quotes (for reading; text is not reversed).

The tool server (sandbox/toolserver/, standard library only) sends the names it reads as JSON ``\\udcXX`` escapes of
the process form, which the host reads back exactly; ``sandbox.base.Sandbox`` turns them into the shown form and
the shown names a model passes back into the process form.
"""

from __future__ import annotations

import re

_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r", 0x22: '"', 0x5C: "\\"}
_UNESCAPES = {letter: byte for byte, letter in _ESCAPES.items()}
_LONE = re.compile("[\ud800-\udfff]")
_QUOTED_PART = re.compile(r'\\([0-3][0-7]{2}|[abtnvfr"\\])|([^"\\]+)')


def process_form(raw: bytes) -> str:
    """The name ``raw`` as a process holds it (what ``os.fsdecode`` gives on a UTF-8 system)."""
    return raw.decode("utf-8", "surrogateescape")


def os_bytes(name: str) -> bytes:
    """The bytes of a name in the process form (lone surrogates that no file system gave are kept as CESU-8)."""
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def c_quoted(raw: bytes) -> str:
    """``raw`` C-quoted in double quotes, as git quotes a path: UTF-8 characters kept, escapes for the rest."""
    out = ['"']
    for ch in raw.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not part of a UTF-8 character
            out.append(f"\\{code - 0xDC00:03o}")
        elif code in _ESCAPES:
            out.append("\\" + _ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def shown(name: str | bytes) -> str:
    """The shown form of a name given as bytes or in the process form: itself when its bytes are UTF-8 and it does
    not start with ``"``, else C-quoted. Always encodable as UTF-8."""
    if isinstance(name, str):
        if not name.startswith('"') and (name.isascii() or not _LONE.search(name)):
            return name
        raw = os_bytes(name)
    else:
        raw = name
        if not raw.startswith(b'"'):
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                pass
    return c_quoted(raw)


def name_bytes(text: str) -> bytes:
    """The bytes a shown name stands for (also a path git quoted). ValueError for a quoted form that is not valid;
    unquoted text is taken as it is (lone surrogates as the bytes they escape)."""
    if not text.startswith('"'):
        return os_bytes(text)
    if len(text) < 2 or not text.endswith('"'):
        raise ValueError(f"{show_text(text)[:200]} starts with a double quote but is not a quoted name "
                         '(a quoted name ends with " and escapes \\ and " inside)')
    out = bytearray()
    body, pos = text[1:-1], 0
    while pos < len(body):
        m = _QUOTED_PART.match(body, pos)
        if m is None:
            raise ValueError(f"{show_text(text)[:200]} is not a valid quoted name: at {pos + 1}, "
                             f"{show_text(body[pos:pos + 4])!r} (inside quotes a \\ starts \\ooo, \\\\, \\\" or one "
                             "of \\a \\b \\t \\n \\v \\f \\r, and a \" must be escaped)")
        esc, plain = m.groups()
        if plain is not None:
            out += os_bytes(plain)
        elif esc in _UNESCAPES:
            out.append(_UNESCAPES[esc])
        else:
            out.append(int(esc, 8))
        pos = m.end()
    return bytes(out)


def os_name(text: str) -> str:
    """A shown name (or a path git quoted) in the process form, for ``os`` functions and tool-server requests.
    ValueError as :func:`name_bytes`."""
    return process_form(name_bytes(text))


def show_text(text: str) -> str:
    """Free text with every lone surrogate shown: a byte that is not UTF-8 (the process form) as ``\\ooo``, any
    other as ``\\udXXX``. Text without them comes back as it is; the result is always encodable as UTF-8."""
    if text.isascii() or not _LONE.search(text):
        return text
    return _LONE.sub(lambda m: f"\\{ord(m.group()) - 0xDC00:03o}" if 0xDC80 <= ord(m.group()) <= 0xDCFF
                     else f"\\u{ord(m.group()):04x}", text)


def show_data(value: object) -> object:
    """``value`` (JSON-like: dicts, lists, strings...) with :func:`show_text` applied to every string in it."""
    if isinstance(value, str):
        return show_text(value)
    if isinstance(value, dict):
        return {show_text(k) if isinstance(k, str) else k: show_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [show_data(v) for v in value]
    return value
