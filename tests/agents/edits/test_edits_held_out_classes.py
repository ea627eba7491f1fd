"""Failure classes a held-out corpus of real changes still found (issue 38), on excerpts of the real files.

The fixtures are trimmed excerpts of flask 2.3.3 ``config.py``, ``views.py`` and 3.0.3 ``globals.py``, and requests
2.31.0 ``tests/test_requests.py``; the edits are the changes those files got in the next releases.
"""

from __future__ import annotations

import pytest

from agents.edits import EditRefused, apply_search_replace


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
