"""Baseline appliers behave as their names say (they are only used for comparisons)."""

from __future__ import annotations

import pytest

from agents.edits import EditRefused, apply_str_replace
from bench.editcases.baselines import BASELINES, exact_count, first_match, replace_all

TEXT = "def f():\n    x = 1\n\ndef g():\n    x = 1\n"


def test_first_match_takes_first_without_uniqueness():
    out = first_match(TEXT, "x = 1", "x = 2")
    assert out.text == TEXT.replace("x = 1", "x = 2", 1)
    out = first_match("a   \nb\n", "a\nb", "c")
    assert out.text == "c\n"


def test_replace_all_replaces_everything():
    assert replace_all(TEXT, "x = 1", "x = 2").text == TEXT.replace("x = 1", "x = 2")


def test_exact_count_requires_uniqueness():
    with pytest.raises(EditRefused) as info:
        exact_count(TEXT, "x = 1", "x = 2")
    assert info.value.reason == "ambiguous"
    with pytest.raises(EditRefused):
        exact_count(TEXT, "x = 3", "x = 2")
    assert exact_count(TEXT, "def g", "def h").text == TEXT.replace("def g", "def h")


def test_engine_refuses_where_first_match_guesses():
    with pytest.raises(EditRefused):
        apply_str_replace(TEXT, "x = 1", "x = 2")
    assert set(BASELINES) == {"first_match", "replace_all", "exact_count"}
