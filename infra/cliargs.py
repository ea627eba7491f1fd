"""Command-line parsing: the pages every command's ``--help`` shows, and parsers that suggest the choice a typo
meant.

A command's page is its description, what its exit codes mean and one to three examples (:class:`Page`, declared
with :func:`add_command` or ``Parser(..., page=Page(...))``); docs/cli.md is generated from the same text
(``python -m entry.docgen``). :class:`CommandParser` prints a usage error and exits 2, as argparse does;
:class:`Parser` raises :class:`UsageError` instead, for subcommands that print a usage error their own way (one
line, exit 2) and whose tests call them in-process. Both answer an unknown choice (``bosun rnu``) with the closest
ones (``did you mean 'run'?``)."""

from __future__ import annotations

import argparse
import difflib
import json
import math
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.errors import ConfigError

EXIT_CODES = "exit codes:"
EXAMPLES = "examples:"
EPILOG_WIDTH = 100
"""Width of a page's exit codes (wrapped here, so that --help and docs/cli.md read the same on any terminal)."""


class UsageError(Exception):
    """The command line was wrong: the message says what and how to fix it."""


@dataclass(frozen=True)
class Page:
    """What a command's ``--help`` says beyond its usage and options: what the command does and needs
    (``description``), what each exit code means, and one to three examples (real command lines, each maybe
    followed by ``  # what it does``); ``notes``: more text after them."""

    description: str
    exit_codes: Mapping[int, str] = field(default_factory=dict)
    examples: tuple[str, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "examples", tuple(self.examples))
        object.__setattr__(self, "exit_codes", dict(sorted(self.exit_codes.items())))

    @property
    def text(self) -> str:
        """The description, its blank-line-separated paragraphs each on one line (a block with indented lines, such
        as a list of forms, stays as written)."""
        return "\n\n".join(block if any(line[:1].isspace() for line in block.splitlines()) else " ".join(block.split())
                           for block in self.description.strip("\n").split("\n\n"))

    def epilog(self) -> str:
        """The exit codes and examples as --help prints them, after the options."""
        parts = []
        if self.exit_codes:
            width = max(len(str(code)) for code in self.exit_codes)
            lines = [EXIT_CODES]
            for code, meaning in self.exit_codes.items():
                lines += textwrap.wrap(" ".join(meaning.split()), EPILOG_WIDTH, initial_indent=f"  {code:<{width}}  ",
                                       subsequent_indent=" " * (width + 4))
            parts.append("\n".join(lines))
        if self.examples:
            parts.append("\n".join([EXAMPLES, *(f"  {example}" for example in self.examples)]))
        if self.notes:
            parts.append(self.notes.strip())
        return "\n\n".join(parts)

    def parser_kwargs(self) -> dict[str, Any]:
        return {"description": self.text, "epilog": self.epilog(), "formatter_class": PageFormatter}


class PageFormatter(argparse.RawDescriptionHelpFormatter):
    """Wraps the description's paragraphs to the terminal, and keeps a block whose lines are indented (exit codes,
    examples) as it is written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.splitlines()
            if any(line[:1].isspace() for line in lines):
                blocks.append("\n".join(indent + line for line in lines))
            else:
                blocks.append(textwrap.fill(" ".join(block.split()), width, initial_indent=indent,
                                            subsequent_indent=indent))
        return "\n\n".join(blocks)


def did_you_mean(value: object, choices: Iterable[object]) -> str:
    """``"; did you mean 'run'?"`` for the choice closest to ``value`` (difflib), or ``""`` when none is close."""
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser (usage errors: the usage, one line, exit 2) that takes a :class:`Page` (``page=``) and
    answers an unknown choice with the closest one."""

    def __init__(self, *args: Any, page: Page | None = None, **kwargs: Any) -> None:
        if page is not None:
            kwargs = {**page.parser_kwargs(), **kwargs}
        super().__init__(*args, **kwargs)
        self.page = page

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = list(action.choices)
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{did_you_mean(value, choices)} "
                                                 f"(choose from {', '.join(map(str, choices))})")


class Parser(CommandParser):
    """A :class:`CommandParser` whose errors raise UsageError instead of printing and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def add_command(subparsers: Any, name: str, *, help: str, description: str = "",  # noqa: A002 - argparse's name
                exit_codes: Mapping[int, str] | None = None, examples: Iterable[str] = (), notes: str = "",
                page: Page | None = None, **kwargs: Any) -> argparse.ArgumentParser:
    """Declare the subcommand ``name`` of ``subparsers`` (``parser.add_subparsers()``) with its page: ``help`` is
    its line in the parent's --help, ``description``, ``exit_codes`` and ``examples`` its own --help (or ``page``,
    a Page already made); ``kwargs`` go to ``add_parser``. The parent must be a CommandParser (or a Parser)."""
    if page is None:
        page = Page(description, exit_codes or {}, tuple(examples), notes)
    return subparsers.add_parser(name, help=help, page=page, **kwargs)


def page_of(parser: argparse.ArgumentParser) -> Page | None:
    """The page a parser was declared with (None: a plain argparse parser)."""
    return getattr(parser, "page", None)


def check_non_negative(flag: str, value: float | None, hint: str = "") -> None:
    """ConfigError unless ``value`` (of ``flag``; None: not given) is a finite number of 0 or more (a float flag
    takes ``nan`` and ``inf`` too)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{flag} {value:g}: give a number of 0 or more{hint}")


def read_json_file(path: Path | str, where: str) -> Any:
    """The JSON value in a file the command line names; ConfigError starting with ``where``: it cannot be read,
    or it is not JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{where}: cannot read it ({e.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{where}: not JSON ({e})") from None
