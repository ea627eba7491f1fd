"""Generate docs/cli.md and docs/settings.md from the text the code already holds, so that nothing is kept twice.

    python -m entry.docgen            # write both pages
    python -m entry.docgen --check    # exit 1 (saying which) when a committed page differs from what the code says

docs/cli.md walks the argparse trees of `bosun` (entry/cli.py; a pass-through command's parser is its module's,
``entry.cli.PARSERS``): per command its description, usage, arguments, exit codes and examples, as its ``--help``
shows them (infra/cliargs.Page). docs/settings.md lists every field of :class:`infra.settings.Settings` and of the
events settings (:class:`infra.events.config.EventsConfig`, its trigger rules too) with its variable, type, default
and docstring (infra/fielddocs.py). Both are deterministic: a default that depends on the
machine is written as its rule (:data:`FACTORY_DEFAULTS`). tests/entry/test_docgen.py fails when they are stale.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import socket
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from entry import cli
from infra.cliargs import Page, page_of
from infra.events.config import CONFIG_FILE_ENV, EventsConfig, TriggerRules, env_name
from infra.fielddocs import field_docs
from infra.settings import Settings, _default_data_dir

ROOT = Path(__file__).resolve().parents[1]
CLI_MD = ROOT / "docs" / "cli.md"
SETTINGS_MD = ROOT / "docs" / "settings.md"
REGENERATE = ".venv/bin/python -m entry.docgen"
WIDTH = "100"
"""Terminal width the usage lines are formatted for (argparse reads COLUMNS)."""

FACTORY_DEFAULTS = {_default_data_dir: "`~/.local/share/bosun` (`$XDG_DATA_HOME/bosun` when `XDG_DATA_HOME` is set)",
                    socket.gethostname: "this host's name"}
"""The default of each field made by a factory, as its rule (its value differs per machine)."""


# ---------------------------------------------------------------------------------------------------- commands

@dataclass(frozen=True)
class Command:
    """One page: ``path`` (``("bosun", "env", "build")``), its parser, its line in the parent's list."""

    path: tuple[str, ...]
    parser: argparse.ArgumentParser
    summary: str

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def page(self) -> Page | None:
        return page_of(self.parser)


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, line in the list, parser) of each subcommand of ``parser``, in their order."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            lines = {choice.dest: choice.help or "" for choice in action._choices_actions}
            out += [(name, lines.get(name, ""), sub) for name, sub in action.choices.items()]
    return out


def commands() -> list[Command]:
    """Every page of `bosun`, the root first, each group before its subcommands (pass-through commands: their
    module's parser, as `bosun CMD --help` prints it)."""
    out: list[Command] = []

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser, summary: str) -> None:
        out.append(Command(path, parser, summary))
        for name, line, sub in subcommands(parser):
            target = cli.PARSERS.get((*path[1:], name))
            walk((*path, name), _load(target)() if target else sub, line)

    walk(("bosun",), cli._parser(), "")
    return out


@contextlib.contextmanager
def _columns() -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


_CODE = re.compile(r"(`[^`]*`)")


def md(text: str, table: bool = False) -> str:
    """``text`` (one line) for Markdown: ``<``, ``>``, ``*`` (and in a table ``|``) escaped outside code spans."""
    text = " ".join(text.replace("``", "`").split())
    parts = _CODE.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*")
    text = "".join(parts)
    return text.replace("|", r"\|") if table else text


def _anchor(name: str) -> str:
    return re.sub(r"[^a-z0-9 _-]", "", name.lower()).replace(" ", "-")


def _paragraphs(text: str) -> list[str]:
    out = []
    for block in text.split("\n\n"):
        if any(line[:1].isspace() for line in block.splitlines()):
            out.append("```text\n" + "\n".join(line.rstrip() for line in block.splitlines()) + "\n```")
        else:
            out.append(md(block))
    return out


def _arguments(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        invocation = formatter._format_action_invocation(action)
        rows.append((invocation, formatter._expand_help(action) if action.help else ""))
    return rows


def command_md(c: Command) -> str:
    page = c.page
    lines = [f"## {c.name}", ""]
    if page is not None:
        for para in _paragraphs(page.text):
            lines += [para, ""]
    elif c.parser.description:
        lines += [md(c.parser.description), ""]
    lines += ["```text", c.parser.format_usage().rstrip(), "```", ""]
    subs = subcommands(c.parser)
    if subs:
        lines += ["| Command | What it does |", "| --- | --- |"]
        lines += [f"| [`{c.name} {name}`](#{_anchor(f'{c.name} {name}')}) | {md(line, True)} |"
                  for name, line, _ in subs]
        lines.append("")
    args = _arguments(c.parser)
    if args:
        lines += ["| Argument | Meaning |", "| --- | --- |"]
        lines += [f"| `{md(flag, True) if '|' in flag else flag}` | {md(text, True)} |" for flag, text in args]
        lines.append("")
    if page is not None and page.exit_codes:
        lines += ["| Exit code | Meaning |", "| --- | --- |"]
        lines += [f"| {code} | {md(meaning, True)} |" for code, meaning in page.exit_codes.items()]
        lines.append("")
    if page is not None and page.examples:
        lines += ["Examples:", "", "```sh", *page.examples, "```", ""]
    if page is not None and page.notes:
        lines += [md(page.notes), ""]
    return "\n".join(lines)


def cli_md() -> str:
    """The text of docs/cli.md."""
    with _columns():
        pages = commands()
        head = ["# The `bosun` command line", "",
                f"Generated by `{REGENERATE}` from each command's `--help` (the parsers in `entry/` and "
                "`bench/editcases/eval.py`); do not edit it by hand: change the help text and regenerate.", "",
                "| Command | What it does |", "| --- | --- |"]
        head += [f"| [`{c.name}`](#{_anchor(c.name)}) | {md(c.summary or 'the command line itself', True)} |"
                 for c in pages]
        return "\n".join([*head, "", *(command_md(c) for c in pages)]).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------------- settings

_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path", SecretStr: "secret"}


def type_name(annotation: Any) -> str:
    """A field's type in words: ``integer``, ``path``, ``one of `a`, `b```, ``list of strings (JSON)``..."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(a) for a in args if a is not type(None))
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}s (JSON)" if args else "list (JSON)"
    if origin is dict:
        return "object (JSON)" if not args or args[1] is Any else f"object of {type_name(args[1])}s (JSON)"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object (JSON): the fields below"
    if annotation in _NAMES:
        return _NAMES[annotation]
    raise TypeError(f"entry/docgen.py: no name for the type {annotation!r}; add it to _NAMES")


def bounds(info: FieldInfo) -> str:
    """A field's constraints (``1 to 5``, ``> 0``, ``matching `...```), or ''."""
    found: dict[str, Any] = {}
    for m in info.metadata:  # (annotated_types.Ge, Le, Gt, Lt; pydantic's metadata holding a pattern)
        found.update({key: getattr(m, key) for key in ("ge", "gt", "le", "lt", "pattern")
                      if getattr(m, key, None) is not None})
    parts = []
    if "ge" in found and "le" in found:
        parts.append(f"{_number(found['ge'])} to {_number(found['le'])}")
    else:
        parts += [f"{op} {_number(found[key])}" for key, op in (("ge", ">="), ("le", "<=")) if key in found]
    parts += [f"{op} {_number(found[key])}" for key, op in (("gt", ">"), ("lt", "<")) if key in found]
    if "pattern" in found:
        parts.append(f"matching `{found['pattern']}`")
    return ", ".join(parts)


def _number(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def default_text(info: FieldInfo) -> str:
    """A field's default as the page shows it (a factory's: its rule)."""
    if info.default_factory is not None:
        if info.default_factory not in FACTORY_DEFAULTS:
            raise ValueError(f"entry/docgen.py: the default factory {info.default_factory!r} gives a value that "
                             "may differ per machine; add its rule to FACTORY_DEFAULTS")
        return FACTORY_DEFAULTS[info.default_factory]
    value = info.default
    if value is PydanticUndefined:
        return "(required)"
    if value is None:
        return "(unset)"
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (int, float)):
        return f"`{_number(value)}`"
    if value == "":
        return "(empty)"
    if isinstance(value, (list, dict)):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def _rows(fields: dict[str, FieldInfo], docs: dict[str, str], name_of: Any, label: str = "Variable") -> list[str]:
    rows = [f"| {label} | Type | Default | Meaning |", "| --- | --- | --- | --- |"]
    for name, info in fields.items():
        if not docs.get(name):
            raise ValueError(f"{name}: no docstring; write one under the field (it is the setting's documentation)")
        kind = type_name(info.annotation)
        extra = bounds(info)
        rows.append(f"| `{name_of(name)}` | {md(kind + (', ' + extra if extra else ''), True)} | "
                    f"{md(default_text(info), True)} | {md(docs[name], True)} |")
    return rows


def event_fields() -> dict[str, FieldInfo]:
    """The events settings' own fields (not the Settings they carry)."""
    return {k: f for k, f in EventsConfig.model_fields.items() if k != "settings"}


def settings_md() -> str:
    """The text of docs/settings.md."""
    lines = ["# Settings", "",
             f"Generated by `{REGENERATE}` from the settings' own docstrings (`infra/settings.py`, "
             "`infra/events/config.py`); do not edit it by hand: change the docstring and regenerate.", "",
             "Every setting is an environment variable. `bosun settings` prints the values in force (secrets as "
             "`***`), `bosun settings --describe` each with its meaning.", "",
             "## bosun's settings", "",
             "`infra/settings.py`: `BOSUN_<FIELD>` (e.g. `BOSUN_DATA_DIR`). A bad value is refused with a message "
             "naming the variable and what is expected.", "",
             *_rows(dict(Settings.model_fields), field_docs(Settings), lambda n: f"BOSUN_{n.upper()}"), "",
             "## Events settings", "",
             "`infra/events/config.py`: the webhook ingress and the event starter (`bosun up` runs them when a "
             "webhook secret is set; docs/EVENTS.md). Each is `BOSUN_EVENTS_<FIELD>`, lists and objects as JSON "
             f"(e.g. `BOSUN_EVENTS_REPOS='{{\"acme/api\": \"/srv/api\"}}'`), or a key of the JSON object in the "
             f"file `{CONFIG_FILE_ENV}` names (the environment wins over the file). Their secrets, API URLs and "
             "the ingress port are bosun's settings above (`BOSUN_GITHUB_TOKEN`...).", "",
             *_rows(event_fields(), field_docs(EventsConfig), env_name), "",
             "### `BOSUN_EVENTS_TRIGGERS`", "",
             "The trigger rules: a JSON object with any of these keys (the others keep their defaults).", "",
             *_rows(dict(TriggerRules.model_fields), field_docs(TriggerRules), lambda n: n, "Key"), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- main

PAGES = {CLI_MD: cli_md, SETTINGS_MD: settings_md}


def stale() -> list[Path]:
    """The committed pages that differ from what the code says now."""
    return [path for path, make in PAGES.items() if not path.is_file() or path.read_text(encoding="utf-8") != make()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--check"]:
        old = stale()
        for path in old:
            print(f"{path.relative_to(ROOT)} is out of date: run `{REGENERATE}`", file=sys.stderr)
        return 1 if old else 0
    if argv:
        print("usage: python -m entry.docgen [--check]", file=sys.stderr)
        return 2
    for path, make in PAGES.items():
        path.write_text(make(), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
