"""Command-line parsing that reports instead of exiting: the subcommands print a usage error their own way (one
line, exit 2) and their tests call them in-process."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """The command line was wrong: the message says what and how to fix it."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise UsageError instead of printing and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)
