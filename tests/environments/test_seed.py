"""The seed's files git does not ignore: the list the build container writes is read as untrusted data
(models.parse_unignored), and the host's import leaves out what it names (snapshot.covered)."""

from __future__ import annotations

import pytest

from environments.models import SEED_UNIGNORED_MAX, parse_unignored
from sandbox.snapshot import covered


def test_a_valid_list_is_read_sorted_without_repeats():
    data = b"tinypkg/_x.so\0build/\0weird [x]*.txt \0build/\0"
    assert parse_unignored(data) == ["build/", "tinypkg/_x.so", "weird [x]*.txt "]
    assert parse_unignored(b"") == []


@pytest.mark.parametrize("entry", ["/etc/passwd", "../outside", "a/../../b", "a//b", "./a", "a/./b", "a\nb", "a\rb",
                                   "x" * 5000, "/", "//"])
def test_an_entry_outside_the_tree_or_unwritable_as_a_pattern_is_refused(entry):
    with pytest.raises(ValueError, match="not a relative path inside the source tree"):
        parse_unignored(f"ok.so\0{entry}\0".encode())


def test_a_list_too_large_or_not_utf8_is_refused():
    with pytest.raises(ValueError, match="larger than"):
        parse_unignored(b"a\0" * (SEED_UNIGNORED_MAX // 2 + 1))
    with pytest.raises(ValueError, match="not UTF-8"):
        parse_unignored(b"ok\0bad\xff\0")


def test_covered_matches_exact_paths_and_everything_below_a_directory_entry():
    entries = frozenset({"build/", "pkg/_x.so", "weird [x]*.txt "})
    assert covered("pkg/_x.so", entries) and covered("build/", entries) and covered("build/lib/a.py", entries)
    assert covered("build/lib/", entries) and covered("weird [x]*.txt ", entries)
    # exact: no pattern meaning, no prefix of a name, no file entry taken as a directory
    assert not covered("weird x.txt ", entries) and not covered("buildx/a", entries)
    assert not covered("pkg/_x.so/inner", entries) and not covered("pkg/", entries) and not covered("build", entries)
