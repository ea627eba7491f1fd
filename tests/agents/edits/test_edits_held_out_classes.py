"""Failure classes a held-out corpus of real changes still found (issue 38), on excerpts of the real files.

The fixtures are trimmed excerpts of flask 2.3.3 ``config.py``, ``views.py`` and 3.0.3 ``globals.py``, and requests
2.31.0 ``tests/test_requests.py``; the edits are the changes those files got in the next releases.
"""

from __future__ import annotations

import textwrap

import pytest

from agents.edits import EditRefused, apply_search_replace, apply_str_replace, apply_udiff


def refused(fn, *args) -> EditRefused:
    with pytest.raises(EditRefused) as info:
        fn(*args)
    return info.value


def blocks(*pairs: tuple[str, str]) -> str:
    return "".join(f"src/flask/config.py\n```python\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n```\n"
                   for old, new in pairs)


# ---------------------------------------------------------------- (1) a repeated SEARCH block

CONFIG = '''\
class ConfigAttribute:
    """Makes an attribute forward to the config"""

    def __get__(self, obj: t.Any, owner: t.Any = None) -> t.Any:
        if obj is None:
            return self
        rv = obj.config[self.__name__]
        if self.get_converter is not None:
            rv = self.get_converter(rv)
        return rv


class Config(dict):
    def from_prefixed_env(self, prefix: str = "FLASK", *, loads=json.loads) -> bool:
        for key in sorted(os.environ):
            current[tail] = value

        return True

    def from_pyfile(self, filename: str | os.PathLike, silent: bool = False) -> bool:
        """Updates the values in the config from a Python file."""
        filename = os.path.join(self.root_path, filename)

    def get_namespace(self, namespace: str, lowercase: bool = True) -> dict[str, t.Any]:
        rv = {}
        for k, v in self.items():
            if lowercase:
                key = key.lower()
            rv[key] = v
        return rv
'''
FROM_PYFILE = (
    "    def from_pyfile(self, filename: str | os.PathLike, silent: bool = False) -> bool:\n",
    "    def from_pyfile(\n        self, filename: str | os.PathLike[str], silent: bool = False\n    ) -> bool:\n",
)
RETURN_RV = ("        return rv\n", "        return dict(rv)\n")


def test_repeated_block_that_no_block_pins_down_is_refused_naming_both_places():
    # flask config.py: "return rv" is in ConfigAttribute.__get__ (line 10) and in get_namespace (line 30); the
    # block before it is between them, so "the next one after it" would be a guess
    err = refused(apply_search_replace, CONFIG, blocks(FROM_PYFILE, RETURN_RV))
    assert err.reason == "ambiguous" and err.lines == [10, 30]
    assert "lines 10, 30" in err.message and "order of the blocks alone does not decide" in err.message
    assert "Include more surrounding lines" in err.message


def test_repeated_block_right_below_the_previous_block_is_placed_there():
    # both places come after the first block: only "right below it" tells them apart
    converter = ("            rv = self.get_converter(rv)\n", "            rv = self.get_converter(rv, obj)\n")
    out = apply_search_replace(CONFIG, blocks(converter, RETURN_RV))
    assert out.text.count("return dict(rv)") == 1
    assert "get_converter(rv, obj)\n        return dict(rv)\n" in out.text
    assert "right below block 1" in out.message
    # the same two blocks sent again: the first is there, and the second's new text right below it
    again = apply_search_replace(out.text, blocks(converter, RETURN_RV))
    assert again.status == "already_applied" and again.text == out.text


# ---------------------------------------------------------------- (2) re-indentation at the indent_offset level

ENV_TEST = '''\
class TestRequests:
    @pytest.mark.parametrize(
        "env, expected",
        (
            ({}, True),
            ({"REQUESTS_CA_BUNDLE": "", "CURL_CA_BUNDLE": "/curl/path"}, "/curl/path"),
        ),
    )
    def test_env_cert_bundles(self, httpbin, mocker, env, expected):
        s = requests.Session()
        mocker.patch("os.environ", env)
        settings = s.merge_environment_settings(
            url=httpbin("get"), proxies={}, stream=False, verify=True, cert=None
        )
        assert settings["verify"] == expected

    def test_http_with_certificate(self, httpbin):
        r = requests.get(httpbin(), cert=".")
        assert r.status_code == 200
'''
OLD_BODY = '''\
    def test_env_cert_bundles(self, httpbin, mocker, env, expected):
        s = requests.Session()
        mocker.patch("os.environ", env)
        settings = s.merge_environment_settings(
            url=httpbin("get"), proxies={}, stream=False, verify=True, cert=None
        )
'''
NEW_BODY = '''\
    def test_env_cert_bundles(self, httpbin, env, expected):
        s = requests.Session()
        with mock.patch("os.environ", env):
            settings = s.merge_environment_settings(
                url=httpbin("get"), proxies={}, stream=False, verify=True, cert=None
            )
'''
ENV_AFTER = ENV_TEST.replace(OLD_BODY, NEW_BODY)


def test_old_text_4_columns_short_with_the_new_text_at_the_file_indentation_is_refused():
    # the changed lines only (no unchanged line around them), the old text dedented by 4, the new text as in the file
    err = refused(apply_str_replace, ENV_TEST, textwrap.dedent(OLD_BODY), NEW_BODY)
    assert err.reason == "indent_conflict" and err.level == "indent_offset" and err.lines == [9]
    assert "copy the old text with the file's exact indentation" in err.message


def test_shifted_snippet_that_re_indents_applies_when_its_unchanged_edges_show_the_indentation():
    # the same change with the unchanged line above and below, the whole snippet dedented by 4
    old = "    )\n" + OLD_BODY + '        assert settings["verify"] == expected\n'
    new = "    )\n" + NEW_BODY + '        assert settings["verify"] == expected\n'
    out = apply_str_replace(ENV_TEST, textwrap.dedent(old), textwrap.dedent(new))
    assert out.text == ENV_AFTER and out.level == "indent_offset"


def test_re_indented_result_that_does_not_fit_the_block_structure_is_refused():
    # undoing the change: the old text dedented by 4, the new text (without the 'with') at the file's indentation;
    # its last line keeps the old text's indentation, but re-indented its first line would sit under a line that
    # opens no block
    old = ('        with mock.patch("os.environ", env):\n            settings = s.merge_environment_settings(\n'
           '                url=httpbin("get"), proxies={}, stream=False, verify=True, cert=None\n            )\n')
    new = ('        settings = s.merge_environment_settings(\n'
           '            url=httpbin("get"), proxies={}, stream=False, verify=True, cert=None\n        )\n')
    err = refused(apply_str_replace, ENV_AFTER, textwrap.indent(textwrap.dedent(old), "    "), new)
    assert err.reason == "indent_conflict" and "opens no block" in err.message


# ---------------------------------------------------------------- (3) trailing whitespace, one-sided elision

def test_one_line_old_text_also_inside_a_deeper_line_is_ambiguous_at_the_trailing_ws_level():
    # "    return self" is a whole line of the second method (with trailing whitespace in the file) and part of
    # "        return self" in __get__: applying at the whole line only would be a guess
    text = CONFIG.replace("class Config(dict):\n", "class Config(dict):\n    def copy(self):\n    return self  \n\n")
    err = refused(apply_str_replace, text, "    return self\n", "    return self.copy()\n    # copied\n")
    assert err.reason == "ambiguous" and err.lines == [6, 15]
    err = refused(apply_str_replace, CONFIG.replace("class Config(dict):\n",
                                                    "class Config(dict):\n    def copy(self):\n    return self\n\n"),
                  "    return self  \n", "    return self.copy()\n")
    assert err.reason == "ambiguous" and err.lines == [6, 15]


@pytest.mark.parametrize("marker", ["# ... other fields ...", "# ... rest of __get__ ...", "# unchanged",
                                    "pass  # ... existing code ...", "# (omitted)", "# [snip]"])
def test_new_text_eliding_code_with_other_marker_styles_is_refused(marker):
    old = ("        rv = obj.config[self.__name__]\n        if self.get_converter is not None:\n"
           "            rv = self.get_converter(rv)\n        return rv\n")
    new = f"        rv = obj.config.get(self.__name__)\n        {marker}\n        return rv\n"
    err = refused(apply_str_replace, CONFIG, old, new)
    assert err.reason == "elision_mismatch"


# ---------------------------------------------------------------- (4) blank lines left out of both texts

VIEWS = '''\
from __future__ import annotations

import typing as t

from . import typing as ft
from .globals import current_app
from .globals import request


http_method_funcs = frozenset(
    ["get", "post", "head", "options", "delete", "put", "trace", "patch"]
)
'''


def test_missing_blank_line_next_to_inserted_lines_is_refused():
    # flask views.py: F is inserted between the imports and http_method_funcs; the file has two blank lines there,
    # the old and new texts one: whether the other one goes before or after the new line is open
    old = "from .globals import request\n\nhttp_method_funcs = frozenset(\n"
    new = ('from .globals import request\n\nF = t.TypeVar("F", bound=t.Callable[..., t.Any])\n'
           "http_method_funcs = frozenset(\n")
    err = refused(apply_str_replace, VIEWS, old, new)
    assert err.reason == "ambiguous" and err.level == "blank_lines" and "which side" in err.message


def test_missing_blank_lines_between_unchanged_lines_are_kept():
    old = 'from .globals import request\nhttp_method_funcs = frozenset(\n    ["get", "post", "head"'
    new = 'from .globals import request\nhttp_method_funcs = frozenset(\n    ["get", "post", "query", "head"'
    old += ', "options", "delete", "put", "trace", "patch"]\n'
    new += ', "options", "delete", "put", "trace", "patch"]\n'
    out = apply_str_replace(VIEWS, old, new)
    assert out.level == "blank_lines" and out.text == VIEWS.replace('"post", "head"', '"post", "query", "head"')


# ---------------------------------------------------------------- (5) edits already applied

GLOBALS = '''\
request: Request = LocalProxy(  # type: ignore[assignment]
    _cv_request, unbound_message=_no_req_msg
)
session: SessionMixin = LocalProxy(  # type: ignore[assignment]
    _cv_request, "session", unbound_message=_no_req_msg
)
'''
GETATTR = '''
def __getattr__(name: str) -> t.Any:
    if name == "_app_ctx_stack":
        return __app_ctx_stack

    raise AttributeError(name)
'''
SESSION = 'session: SessionMixin = LocalProxy(  # type: ignore[assignment]\n    _cv_request, "session", ' \
          'unbound_message=_no_req_msg\n)\n'


def test_deletion_sent_again_is_already_applied():
    # flask 3.0.3 globals.py: the deprecated __getattr__ after the session proxy was deleted; sent again
    out = apply_str_replace(GLOBALS, SESSION + "\n" + GETATTR, SESSION)
    assert out.status == "already_applied" and out.text == GLOBALS and "nothing changed" in out.message
    diff = "@@ -4,3 +4,0 @@\n" + "".join(" " + t for t in SESSION.splitlines(True)) + "".join(
        "-" + t for t in ("\n" + GETATTR).splitlines(True))
    assert apply_udiff(GLOBALS, diff).status == "already_applied"


def test_re_indentation_sent_again_is_already_applied():
    # the old text still matches the result with another indentation: applying it again would shift the lines once
    # more
    old = ('        settings = s.merge_environment_settings(\n'
           '            url=httpbin("get"), proxies={}, stream=False, verify=True, cert=None\n        )\n')
    new = textwrap.indent(textwrap.dedent(old), "    ")
    moved = apply_str_replace(ENV_TEST, old, new).text
    again = apply_str_replace(moved, old, new)
    assert again.status == "already_applied" and again.text == moved and again.level == "indent_offset"


def test_elided_edit_sent_again_is_already_applied():
    old = ("class ConfigAttribute:\n    ...\n        if self.get_converter is not None:\n"
           "            rv = self.get_converter(rv)\n")
    new = old.replace("get_converter(rv)", "get_converter(rv, obj)")
    first = apply_str_replace(CONFIG, old, new)
    assert "get_converter(rv, obj)" in first.text
    again = apply_str_replace(first.text, old, new)
    assert again.status == "already_applied" and again.text == first.text


BLACK_CASE = '''\
import random


def foo1():

    print("The newline above me should be kept!")


def foo2():



    print("All the newlines above me should be kept!")

# output

import random


def foo1():
    print("The newline above me should be deleted!")


def foo2():
    print("All the newlines above me should be deleted!")
'''


def test_old_text_only_at_a_tolerant_level_and_new_text_elsewhere_as_it_is_is_refused():
    # black 24.1.0 test data: the input half was edited; sent again, the old text (with its blank lines) only
    # matches the output half, which has none: already applied above, or meant for the output half?
    old = ('def foo1():\n\n    print("The newline above me should be deleted!")\n\n\ndef foo2():\n\n\n\n'
           '    print("All the newlines above me should be deleted!")\n')
    new = old.replace("deleted!", "kept!")
    err = refused(apply_str_replace, BLACK_CASE, old, new)
    assert err.reason == "ambiguous" and err.lines == [4, 20] and "already applied there" in err.message
    diff = "@@ @@\n" + "".join(" " + t for t in old.splitlines(True)[:2]) + "".join(
        ("-" + t + "+" + t.replace("deleted!", "kept!")) if "deleted!" in t else " " + t
        for t in old.splitlines(True)[2:])
    assert refused(apply_udiff, BLACK_CASE, diff).reason == "ambiguous"
