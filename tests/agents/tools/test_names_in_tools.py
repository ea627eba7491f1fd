"""Tools on files whose names are not UTF-8, in a real sandbox: every result shows them quoted (infra/names.py) and
can cross an activity; a name given back as it was shown reaches the same file."""

from __future__ import annotations

import json
import os
import subprocess

from agents.tools.registry import ToolOutput

BIN = os.fsdecode(b"\xff\xfebin")
MOD = os.fsdecode(b"pkg/mod\xe9.py")


def crosses(out: ToolOutput) -> ToolOutput:
    """What the tool_call activity does with a result: JSON in history, text in the artifact store."""
    out.model_dump_json()
    out.text.encode("utf-8")
    json.dumps(out.data).encode("utf-8")
    return out


async def test_listing_reading_and_editing_names_that_are_not_utf8(reg, ctx, repo):
    (repo / BIN).write_bytes(b"")
    (repo / MOD).write_text("VALUE = 1\n")
    subprocess.run(["git", "add", "--", MOD], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "mod"], cwd=repo, check=True)

    async def run(tool: str, **args) -> ToolOutput:
        return crosses(await reg.execute(tool, args, ctx))

    listed = await run("list_dir", path=".")
    assert '"\\377\\376bin"' in listed.text and {"name": '"\\377\\376bin"', "type": "file", "size": 0} in \
        listed.data["entries"]
    assert '"pkg/mod\\351.py"' in (await run("glob", pattern="**/*.py")).data["paths"]
    assert (await run("grep", pattern="VALUE")).data["matches"][0]["path"] == '"pkg/mod\\351.py"'
    assert "VALUE = 1" in (await run("read_file", path='"pkg/mod\\351.py"')).text
    assert (await run("list_dir", path="pkg")).data["path"] == "pkg"

    edited = await run("str_replace", path='"pkg/mod\\351.py"', old_str="VALUE = 1", new_str="VALUE = 2")
    assert not edited.is_error, edited.text
    assert (repo / MOD).read_text() == "VALUE = 2\n"
    wrote = await run("write_file", path='"new\\377.py"', content="X = (\n")
    assert wrote.is_error and "syntax" in wrote.text  # the syntax check knew it for Python by its real name
    assert not (await run("write_file", path='"new\\377.py"', content="X = 1\n")).is_error
    assert (repo / os.fsdecode(b"new\xff.py")).read_text() == "X = 1\n"

    status = await run("git_status")
    assert '"\\377\\376bin"' in status.text and '"new\\377.py"' in status.text
    diff = await run("git_diff", paths=['"pkg/mod\\351.py"'])
    assert "+VALUE = 2" in diff.text
    (repo / MOD).write_text("VALUE = (\n")
    checked = await run("check", ruff=False)
    assert '"pkg/mod\\351.py":1' in checked.text
    assert sorted(checked.data["files_checked"]) == ['"new\\377.py"', '"pkg/mod\\351.py"']

    missing = await run("read_file", path='"gone\\377.py"')
    assert missing.is_error and "gone\\377.py" in missing.text  # the tool server's message, shown
    bad = await run("read_file", path='"pkg/mod\\q.py"')
    assert bad.error_kind == "InvalidArguments" and "not a valid quoted name" in bad.text


async def test_code_search_shows_names_that_are_not_utf8(reg, ctx, repo):
    (repo / os.fsdecode(b"pkg/legacy\xe9.py")).write_text("def old_greeting():\n    return 'hi'\n")
    (repo / BIN).write_text("def helper_in_a_binary_name():\n    pass\n")
    hits = crosses(await reg.execute("search_code", {"query": "old greeting"}, ctx))
    assert hits.data["hits"][0]["path"] == '"pkg/legacy\\351.py"'
    found = crosses(await reg.execute("find_symbol", {"name": "old_greeting"}, ctx))
    assert found.data["definitions"][0]["path"] == '"pkg/legacy\\351.py"'
    assert '"pkg/legacy\\351.py"' in crosses(await reg.execute("repo_map", {"query": "greeting"}, ctx)).text
