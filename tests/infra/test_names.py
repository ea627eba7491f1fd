"""The one form file names cross processes in (infra/names.py): reversible for any bytes, unchanged for UTF-8 names,
and read and written by git the same way."""

from __future__ import annotations

import json
import os
import random
import subprocess

import pytest

from infra.names import name_bytes, os_name, show_data, show_text, shown
from sandbox.hostgit import quote_path

G = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def test_utf8_names_are_themselves_and_others_are_quoted_as_git_quotes_them():
    assert shown("calc/stats.py") == "calc/stats.py" and shown("déjà vu/ünï.py") == "déjà vu/ünï.py"
    assert shown("back\\slash and \"quote\".py") == "back\\slash and \"quote\".py"  # UTF-8: itself
    assert shown(b"\xff\xfebin") == '"\\377\\376bin"' == shown(os.fsdecode(b"\xff\xfebin"))
    assert shown(b"d\xe9j\xe0 vu.py") == '"d\\351j\\340 vu.py"'
    assert shown("déjà\n".encode() + b"\xff") == '"déjà\\n\\377"'  # UTF-8 characters kept inside the quotes
    assert shown('"looks quoted"') == '"\\"looks quoted\\""'  # a leading quote is always quoted
    assert shown(b"\xed\xa0\x80") == '"\\355\\240\\200"'  # an encoded surrogate is not UTF-8


def test_every_name_comes_back_as_the_same_bytes():
    rng = random.Random(7)
    alphabet = [bytes([b]) for b in range(1, 256) if b != 0x2F] + ["é".encode(), "→".encode(), b'"', b"\\"]
    for _ in range(3000):
        raw = b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        for name in (raw, os.fsdecode(raw)):
            text = shown(name)
            text.encode("utf-8")  # crosses JSON and the artifact store
            json.dumps(text)
            assert name_bytes(text) == raw and os_name(text) == os.fsdecode(raw), (raw, text)


def test_malformed_quoted_names_are_refused_with_what_is_wrong():
    for bad, why in [('"unterminated', "is not a quoted name"), ('"a\\qb"', "at 2"), ('"a"b"', "must be escaped"),
                     ('"\\400"', "at 1")]:
        with pytest.raises(ValueError, match=why):
            name_bytes(bad)


def test_git_reads_the_quoted_form_and_writes_what_we_read(tmp_path):
    """fast-import takes the quoted form (sandbox/hostgit.quote_path); git status quotes as shown() does for bytes
    that are not UTF-8, and name_bytes reads git's quoting of UTF-8 ones too."""
    repo = tmp_path / "r"
    subprocess.run([*G, "init", "-q", str(repo)], check=True)
    names = [b"\xff\xfebin", b"d\xe9j\xe0.py", "déjà.py".encode(), b'"q"', b"a\\b", b"tab\tnl\n"]
    script = b"commit refs/heads/main\ncommitter t <t@t> 0 +0000\ndata 1\nm\n"
    for raw in names:
        script += b"M 100644 inline " + quote_path(os.fsdecode(raw)) + b"\ndata 2\nx\n"
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=script + b"done\n", check=True)
    listed = subprocess.run(["git", "-C", str(repo), "ls-tree", "-z", "--name-only", "main"], capture_output=True,
                            check=True).stdout.split(b"\0")
    assert sorted(n for n in listed if n) == sorted(names)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)
    for raw in names:
        (repo / os.fsdecode(raw)).write_text("changed\n")
    status = subprocess.run(["git", "-C", str(repo), "-c", "core.quotePath=true", "status", "--porcelain"],
                            capture_output=True, check=True, text=True).stdout
    from_git = {name_bytes(line[3:]) for line in status.splitlines()}
    assert from_git == set(names)
    assert ' "\\377\\376bin"' in status  # git's quoting of bytes that are not UTF-8 is the shown form


def test_free_text_shows_undecodable_bytes_and_stays_encodable():
    message = "cannot read '" + os.fsdecode(b"\xff\xfebin") + "': no such file"
    assert show_text(message) == "cannot read '\\377\\376bin': no such file"
    assert show_text("a model's lone \ud800 surrogate") == "a model's lone \\ud800 surrogate"
    assert show_text("plain text, déjà vu") == "plain text, déjà vu"
    data = show_data({"paths": [os.fsdecode(b"x\xff")], os.fsdecode(b"k\xfe"): 1, "n": 2})
    assert data == {"paths": ["x\\377"], "k\\376": 1, "n": 2}
    json.dumps(data).encode("utf-8")
