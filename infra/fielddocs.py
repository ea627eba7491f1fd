"""The docstrings written under a model's fields (``name: int = 1`` then ``\"\"\"What it is.\"\"\"``), read from the
class's source when asked: the settings' documentation for `bosun settings --describe` and docs/settings.md.

pydantic's ``use_attribute_docstrings`` reads them too, but when the class is made: for ``Settings`` that parsed
the module at every start of every process (0.12 s of each CLI call, measured), for text only two commands show."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its docstring, for ``cls`` and the classes it derives from (the nearest wins); a field
    without one is absent."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.split(".")[0] in ("builtins", "pydantic", "pydantic_settings", "typing"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in zip(body, body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs
