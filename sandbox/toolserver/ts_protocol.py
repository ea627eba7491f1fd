"""The tool server's protocol: one request type and one result type per operation.

Part of the tool server (``__main__.py`` says what it is), and imported by the host too
(``sandbox.toolserver.ts_protocol``): standard library only, no import at all, so that the oldest interpreter a
sandbox runs reads it and its start costs nothing (``dataclasses`` alone would cost 20 ms).

On the wire (newline-delimited JSON)::

    request   {"id": 7, "op": "read", "args": {"path": "src/app.py"}}       Read(path="src/app.py").wire()
    response  {"id": 7, "ok": true, "result": {"text": ..., "size": ..., "mtime_ns": ...}}     ReadResult
              {"id": 7, "ok": false, "error": {"kind": "ToolFailed" | "InvalidArguments", "message": "..."}}

A request's arguments are checked against its fields by :meth:`Message.parse`: an unknown field, a missing one or
one of the wrong type is refused (``ProtocolError``, answered as InvalidArguments) before the operation runs.
"""

REQUIRED = ...
"""The default of a field that has none."""


class ProtocolError(ValueError):
    """Arguments that do not fit the request's fields (the server answers InvalidArguments)."""


class Message:
    """A request or a result: the fields it has, each ``(name, types, default)``, set by keyword."""

    FIELDS: tuple = ()
    __slots__ = ()

    def __init__(self, **values) -> None:
        for name, _types, default in self.FIELDS:
            if name in values:
                setattr(self, name, values.pop(name))
            elif default is REQUIRED:
                raise ProtocolError(f"missing required argument '{name}'")
            else:
                setattr(self, name, default() if callable(default) else default)
        if values:
            raise ProtocolError(f"unknown argument(s) {', '.join(sorted(map(repr, values)))} for "
                                f"{type(self).__name__}; known: {', '.join(n for n, _, _ in self.FIELDS)}")

    @classmethod
    def parse(cls, args: dict):
        """The message of decoded JSON arguments, each of its field's type (None: the field's default)."""
        if not isinstance(args, dict):
            raise ProtocolError("request field 'args' must be an object")
        values = {}
        for name, value in args.items():
            spec = next((f for f in cls.FIELDS if f[0] == name), None)
            if spec is not None and value is None and spec[2] is not REQUIRED:
                continue  # None: the field's default
            if spec is not None:
                types = spec[1]
                if isinstance(value, bool) and bool not in types or not isinstance(value, types):
                    got = "a boolean" if isinstance(value, bool) else type(value).__name__
                    raise ProtocolError(f"argument '{name}' must be {_names(types)}, got {got}")
            values[name] = value  # (an unknown name: refused by the constructor)
        return cls(**values)

    def wire(self) -> dict:
        """The fields as JSON-ready values."""
        return {name: getattr(self, name) for name, _, _ in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.wire() == self.wire()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.wire().items())})"


def _names(types: tuple) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
             dict: "an object", type(None): "null"}
    return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in types if not (t is int and float in types)))


STR, INT, BOOL, NUMBER, OPTIONAL_STR = (str,), (int,), (bool,), (float, int), (str, type(None))


class Request(Message):
    """A request: ``OP`` names its operation, ``RESULT`` the type of its answer."""

    OP = ""
    RESULT: type = Message
    __slots__ = ()


# -- results ----------------------------------------------------------------------------------------------------


class PingResult(Message):
    FIELDS = (("pong", BOOL, True), ("protocol", INT, 1), ("pid", INT, 0), ("workspace", STR, ""),
              ("workspace_dev", INT, 0), ("workspace_ino", INT, 0), ("python", STR, ""), ("rg", BOOL, False),
              ("objects_dev", (int, type(None)), None), ("objects_ino", (int, type(None)), None))
    __slots__ = tuple(f[0] for f in FIELDS)


class ReadResult(Message):
    """A UTF-8 text file, bytes kept exactly (CRLF, BOM)."""

    FIELDS = (("text", STR, REQUIRED), ("size", INT, REQUIRED), ("mtime_ns", INT, 0))
    __slots__ = tuple(f[0] for f in FIELDS)


class WriteResult(Message):
    FIELDS = (("size", INT, REQUIRED),)
    __slots__ = tuple(f[0] for f in FIELDS)


class DeleteResult(Message):
    FIELDS = (("deleted", STR, REQUIRED), ("type", STR, REQUIRED))
    __slots__ = tuple(f[0] for f in FIELDS)


class ListResult(Message):
    """``entries``: ``{"name", "type" (file, dir, symlink or other), "size"}`` each, sorted by name."""

    FIELDS = (("path", STR, REQUIRED), ("entries", (list,), REQUIRED))
    __slots__ = tuple(f[0] for f in FIELDS)


class GlobResult(Message):
    FIELDS = (("paths", (list,), REQUIRED), ("truncated", BOOL, False))
    __slots__ = tuple(f[0] for f in FIELDS)


class GrepResult(Message):
    """``matches``: ``{"path", "line", "text"}`` each, sorted by path and line."""

    FIELDS = (("matches", (list,), REQUIRED), ("truncated", BOOL, False))
    __slots__ = tuple(f[0] for f in FIELDS)


class ExecResult(Message):
    """``exit_code`` None: killed by the timeout."""

    FIELDS = (("exit_code", (int, type(None)), REQUIRED), ("stdout", STR, ""), ("stderr", STR, ""),
              ("timed_out", BOOL, False), ("truncated", BOOL, False), ("duration_s", NUMBER, 0.0))
    __slots__ = tuple(f[0] for f in FIELDS)


# -- requests ---------------------------------------------------------------------------------------------------


class Ping(Request):
    """Liveness, and what the server runs on."""

    OP, RESULT, FIELDS = "ping", PingResult, ()
    __slots__ = ()


class Read(Request):
    OP, RESULT, FIELDS = "read", ReadResult, (("path", STR, REQUIRED),)
    __slots__ = ("path",)


class Write(Request):
    """Atomic (a temporary file, fsync, rename), the file's mode kept."""

    OP, RESULT = "write", WriteResult
    FIELDS = (("path", STR, REQUIRED), ("text", STR, REQUIRED), ("create_dirs", BOOL, False))
    __slots__ = ("path", "text", "create_dirs")


class Delete(Request):
    """A file or symlink (never its target); a directory only if empty unless ``recursive``."""

    OP, RESULT = "delete", DeleteResult
    FIELDS = (("path", STR, REQUIRED), ("recursive", BOOL, False))
    __slots__ = ("path", "recursive")


class List(Request):
    OP, RESULT, FIELDS = "list", ListResult, (("path", STR, "."),)
    __slots__ = ("path",)


class Glob(Request):
    """``**`` spans directories; .git is skipped."""

    OP, RESULT = "glob", GlobResult
    FIELDS = (("pattern", STR, REQUIRED), ("path", STR, "."), ("max_results", INT, 1000))
    __slots__ = ("pattern", "path", "max_results")


class Grep(Request):
    """A regular expression, or a literal with ``fixed``; ripgrep when the sandbox has it."""

    OP, RESULT = "grep", GrepResult
    FIELDS = (("pattern", STR, REQUIRED), ("path", STR, "."), ("glob", OPTIONAL_STR, None),
              ("ignore_case", BOOL, False), ("fixed", BOOL, False), ("max_results", INT, 200))
    __slots__ = ("pattern", "path", "glob", "ignore_case", "fixed", "max_results")


class Exec(Request):
    """An argv list, or a shell string run by ``/bin/sh -c`` (``/bin/bash -c`` with ``shell="bash"``)."""

    OP, RESULT = "exec", ExecResult
    FIELDS = (("cmd", (list, str), REQUIRED), ("cwd", OPTIONAL_STR, None), ("env", (dict,), dict),
              ("timeout_s", NUMBER, 60.0), ("output_cap", INT, 1_000_000), ("shell", STR, "sh"))
    __slots__ = ("cmd", "cwd", "env", "timeout_s", "output_cap", "shell")


REQUESTS = {cls.OP: cls for cls in (Ping, Read, Write, Delete, List, Glob, Grep, Exec)}
"""Every operation's request type, by its name on the wire."""
