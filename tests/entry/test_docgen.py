"""docs/cli.md and docs/settings.md are generated (entry/docgen.py) from the parsers' pages and the settings'
docstrings: a help text or a docstring changed without regenerating them fails here."""

from __future__ import annotations

import difflib
import socket

import pytest
from pydantic import Field
from pydantic.fields import FieldInfo

from entry import docgen
from infra.events.config import EventsConfig, TriggerRules, env_name
from infra.fielddocs import field_docs
from infra.settings import Settings


@pytest.mark.parametrize("path", list(docgen.PAGES), ids=lambda p: p.name)
def test_the_committed_page_is_what_the_code_says(path):
    made = docgen.PAGES[path]()
    committed = path.read_text(encoding="utf-8") if path.is_file() else ""
    if committed != made:
        diff = "".join(list(difflib.unified_diff(committed.splitlines(True), made.splitlines(True),
                                                 "committed", "generated", n=1))[:40])
        pytest.fail(f"{path.relative_to(docgen.ROOT)} differs from what the code says: regenerate it with "
                    f"`{docgen.REGENERATE}` and commit it\n{diff}")


def test_the_pages_do_not_depend_on_the_machine(monkeypatch, tmp_path):
    cli, settings = docgen.cli_md(), docgen.settings_md()
    for name, value in (("HOME", str(tmp_path)), ("XDG_DATA_HOME", str(tmp_path / "xdg")), ("COLUMNS", "37"),
                        ("BOSUN_SEARCH_CACHE", str(tmp_path / "search")), ("BOSUN_UI_PORT", "1234")):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(socket, "gethostname", lambda: "another-host")
    assert docgen.cli_md() == cli and docgen.settings_md() == settings
    assert str(tmp_path) not in cli + settings and "another-host" not in settings


def test_the_cli_page_has_every_command_with_its_sections():
    text = docgen.cli_md()
    sections = text.split("\n## ")[1:]
    by_name = {s.split("\n", 1)[0]: s for s in sections}
    for c in docgen.commands():
        section = by_name[c.name]
        assert f"```text\nusage: {c.name}" in section
        assert "| Exit code | Meaning |" in section and "```sh\n" in section
        for example in c.page.examples:
            assert f"\n{example}\n" in section
        for action in c.parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in section, f"{flag} of {c.name} missing"


def test_the_settings_page_has_every_setting_with_its_docstring():
    text = docgen.settings_md()
    rows = {line.split("`")[1]: line for line in text.splitlines() if line.startswith("| `")}
    fields = [*((f"BOSUN_{n.upper()}", field_docs(Settings)[n]) for n in Settings.model_fields),
              *((env_name(n), field_docs(EventsConfig)[n]) for n in EventsConfig.model_fields if n != "settings"),
              *((n, field_docs(TriggerRules)[n]) for n in TriggerRules.model_fields)]
    for name, doc in fields:
        assert name in rows, f"{name} missing from docs/settings.md"
        assert doc and docgen.md(doc, table=True) in rows[name]
    assert "| `BOSUN_NATS_REPLICAS` | integer, 1 to 5 | `1` |" in text
    assert "| `BOSUN_ARTIFACT_STORE` | one of `files`, `nats` | `files` |" in text
    assert "| `BOSUN_WORKER_ID` | string | this host's name |" in text


def test_a_default_that_differs_per_machine_needs_its_rule():
    with pytest.raises(ValueError, match="FACTORY_DEFAULTS"):
        docgen.default_text(Field(default_factory=lambda: "somewhere"))
    assert docgen.default_text(FieldInfo(default=None)) == "(unset)"


def test_markdown_escapes_outside_code_only():
    assert docgen.md("bosun/<id> and `<data dir>` | x", table=True) == r"bosun/&lt;id&gt; and `<data dir>` \| x"
