"""Polyglot repositories: a JavaScript/TypeScript part beside the repository's main ecosystem (a Python service with
a TypeScript front end in ``web/``), found from its ``package.json`` and the repository's CI (pure).

A folder (the top, or one or two levels down, outside ``node_modules`` and hidden folders) with a ``package.json`` is
a part when a GitHub workflow installs or runs it: an ``npm``/``yarn``/``pnpm`` command run there (``working-directory:
web``, ``cd web``, ``--prefix web``, ``-C web``, ``--cwd web``; the top's: any such command). The part gets its Node
and package manager and its dependencies installed in its folder; when the workflows also run its tests (``npm
test``, ``yarn test``, ``npm run test...``) and its ``package.json`` has a test script, the environment's test run
runs them after the main ecosystem's, in the part's folder, each part's results read by its own runner. Only
detected environments get parts: a declaration says everything itself. The workflows are read as text by bounded
regular expressions (hostile content: nothing of them runs)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from environments import node
from environments.models import NodeSpec, Reason

WORKFLOWS = re.compile(r"^\.github/workflows/[^/]+\.ya?ml$")
PM_COMMAND = re.compile(r"\b(?:npm|yarn|pnpm|npx)\b")
TEST_RUN = re.compile(r"\b(?:npm|yarn|pnpm)(?:[ \t]+run)?[ \t]+test\b")
MAX_TEXT = 500_000


def candidates(paths: list[str]) -> list[str]:
    """Folders of a package.json that could be a part: the top (""), then one or two levels down."""
    found = []
    for p in paths:
        if not p.endswith("package.json") or p.rsplit("/", 1)[-1] != "package.json":
            continue
        folder = p[: -len("package.json")].rstrip("/")
        parts = folder.split("/") if folder else []
        if len(parts) <= 2 and not any(x.startswith(".") or x == "node_modules" for x in parts):
            found.append(folder)
    return sorted(found, key=lambda f: (f.count("/") + bool(f), f))[:20]


def _runs_in(text: str, folder: str) -> tuple[bool, bool]:
    """(a package manager runs in ``folder``, its tests run there), as far as a workflow's text says."""
    if not folder:
        return bool(PM_COMMAND.search(text)), bool(TEST_RUN.search(text))
    f = re.escape(folder)
    place = re.compile(rf"(?:working-directory:[ \t]*['\"]?(?:\./)?{f}/?['\"]?[ \t]*$"
                       rf"|\bcd[ \t]+['\"]?(?:\./)?{f}/?['\"]?(?:[ \t]|$|&|;)"
                       rf"|--(?:prefix|cwd|dir)[= ](?:\./)?{f}\b|[ \t]-C[ \t]+(?:\./)?{f}\b)", re.M)
    installs = tests = False
    for block in re.split(r"\n[ \t]*- ", text):  # a workflow's steps (a list item each), roughly
        if place.search(block) and PM_COMMAND.search(block):
            installs = True
            tests = tests or bool(TEST_RUN.search(block))
    defaults = re.search(rf"defaults:[ \t]*\n[ \t]+run:[ \t]*\n[ \t]+working-directory:[ \t]*['\"]?(?:\./)?{f}/?"
                         rf"['\"]?[ \t]*$", text, re.M)
    if defaults and PM_COMMAND.search(text):
        installs, tests = True, tests or bool(TEST_RUN.search(text))
    return installs, tests


def node_part(paths: list[str], texts: dict[str, str], read: Callable[[list[str]], dict[str, str]],
              commit_date: datetime | None) -> tuple[NodeSpec, list[Reason], list[str], list[str]] | None:
    """The JavaScript/TypeScript part of a repository of another main ecosystem (see the module docstring):
    (its spec, the reasons, notes, the files that key it), or None. ``texts``: the files detection read (the
    workflows among them); ``read``: more files by path."""
    flows = {p: t[:MAX_TEXT] for p, t in texts.items() if WORKFLOWS.match(p)}
    if not flows:
        return None
    every = set(paths)
    for folder in candidates(paths):
        seen = [(p, _runs_in(t, folder)) for p, t in flows.items()]
        installs = [p for p, (i, _t) in seen if i]
        if not installs:
            continue
        tested = [p for p, (_i, t) in seen if t]
        prefix = f"{folder}/" if folder else ""
        own = [prefix + n for n in node.NODE_FILES]
        got = read([p for p in own if p in every])
        local = {p[len(prefix):]: t for p, t in got.items()}
        present = {p[len(prefix):] for p in paths if p.startswith(prefix) and "/" not in p[len(prefix):]}
        f = node.facts(local, present)
        spec, test, reasons = node.plan(f, commit_date)
        where = folder or "the top"
        notes = [f"{prefix}{n}" for n in f.notes]
        runs = test is not None and bool(tested)
        spec = spec.model_copy(update={"root": folder, "test": test.text if runs and test else ""})
        reasons = [r.model_copy(update={"field": f"part {where}: {r.field}"}) for r in reasons]
        reasons.insert(0, Reason(field="part", value=f"{where} (JavaScript/TypeScript)", source=(
            f"{prefix}package.json, installed by {installs[0]}" + (f"; its tests run by {tested[0]}" if runs else
                                                                   "; its tests are not run by the CI"))))
        keyed = [prefix + n for n in node.SHAPING if prefix + n in every]
        return spec, reasons, notes, keyed
    return None
