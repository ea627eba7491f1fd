"""Command-line parsing that reports instead of exiting: the subcommands print a usage error their own way (one
line, exit 2) and their tests call them in-process."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from infra.errors import ConfigError


class UsageError(Exception):
    """The command line was wrong: the message says what and how to fix it."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise UsageError instead of printing and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


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
