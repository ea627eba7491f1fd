"""str_replace and apply_patch through the in-process sandbox (conftest.py): edits, refusals, the syntax guard,
all or nothing."""

from __future__ import annotations

CORE = "pkg/core.py"


def patch(*body: str) -> str:
    return "*** Begin Patch\n" + "".join(line + "\n" for line in body) + "*** End Patch\n"


async def test_str_replace_shows_the_edited_region(reg, ctx, repo):
    out = await reg.execute("str_replace", {"path": CORE, "old_str": "return value.upper()",
                                            "new_str": "return value.upper().strip()"}, ctx)
    assert not out.is_error, out.text
    assert out.text.startswith(f"edited {CORE} (")
    assert "    16\t    return value.upper().strip()" in out.text
    assert out.data["status"] == "applied" and out.data["level"] == "exact"
    again = await reg.execute("str_replace", {"path": CORE, "old_str": "return value.upper()\n",
                                              "new_str": "return value.upper().strip()\n"}, ctx)
    assert not again.is_error and again.data["status"] == "already_applied"


async def test_str_replace_fuzzy_indentation(reg, ctx, repo):
    out = await reg.execute("str_replace", {
        "path": CORE,
        "old_str": "for line in text.splitlines():\n    key, _, value = line.partition(\"=\")\n",
        "new_str": "for line in text.splitlines():\n    if not line.strip():\n        continue\n"
                   "    key, _, value = line.partition(\"=\")\n"}, ctx)
    assert not out.is_error, out.text
    assert out.data["level"] == "indent_offset"
    assert "            if not line.strip():\n                continue\n" in (repo / CORE).read_text()


async def test_str_replace_syntax_guard(reg, ctx, repo):
    before = (repo / CORE).read_text()
    out = await reg.execute("str_replace", {"path": CORE, "old_str": "def helper(value: str) -> str:",
                                            "new_str": "def helper(value: str -> str:"}, ctx)
    assert out.is_error and out.error_kind == "ToolFailed"
    assert "new syntax error" in out.text and "line 15" in out.text
    assert (repo / CORE).read_text() == before


async def test_apply_patch_add_update_delete_move(reg, ctx, repo):
    text = patch(
        "*** Add File: pkg/extra.py",
        "+def extra() -> int:",
        "+    return 1",
        "*** Update File: pkg/core.py",
        "@@ def helper(value: str) -> str:",
        "-    return value.upper()",
        "+    return value.lower()",
        "*** Delete File: README.md",
        "*** Update File: pkg/util.py",
        "*** Move to: pkg/runner.py",
        "@@",
        " def run(text: str) -> dict[str, str]:",
        "-    parsed = Parser().parse(text)",
        "+    parsed = Parser().parse(text.strip())",
    )
    out = await reg.execute("apply_patch", {"input": text}, ctx)
    assert not out.is_error, out.text
    actions = {f["path"]: f["action"] for f in out.data["files"]}
    assert actions == {"pkg/extra.py": "added", "pkg/core.py": "updated", "README.md": "deleted",
                       "pkg/util.py": "deleted", "pkg/runner.py": "added"}
    assert (repo / "pkg/extra.py").read_text() == "def extra() -> int:\n    return 1\n"
    assert "return value.lower()" in (repo / CORE).read_text()
    assert not (repo / "README.md").exists() and not (repo / "pkg/util.py").exists()
    assert "Parser().parse(text.strip())" in (repo / "pkg/runner.py").read_text()


def snapshot(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts}


async def test_apply_patch_is_all_or_nothing(reg, ctx, repo):
    before = snapshot(repo)
    text = patch(
        "*** Update File: pkg/core.py",
        "@@",
        "-    return value.upper()",
        "+    return value.lower()",
        "*** Add File: pkg/new.py",
        "+X = 1",
        "*** Update File: pkg/util.py",
        "@@",
        "-    this line is not in the file",
        "+    replacement",
    )
    out = await reg.execute("apply_patch", {"input": text}, ctx)
    assert out.is_error and out.error_kind == "ToolFailed"
    assert "operation 3 of 3" in out.text and "no file was changed" in out.text
    assert snapshot(repo) == before


async def test_apply_patch_restores_files_when_a_write_fails(reg, bwrap_ctx, repo):
    before = snapshot(repo)
    hook = repo / ".git" / "hooks" / "post-checkout"
    text = patch(
        "*** Update File: pkg/core.py",
        "@@",
        "-    return value.upper()",
        "+    return value.lower()",
        "*** Add File: .git/hooks/post-checkout",  # read-only inside the sandbox
        "+#!/bin/sh",
    )
    out = await reg.execute("apply_patch", {"input": text}, bwrap_ctx)
    assert out.is_error and out.error_kind == "ToolFailed"
    assert "restored (pkg/core.py)" in out.text
    assert snapshot(repo) == before and not hook.exists()


async def test_apply_patch_syntax_guard_and_bad_patches(reg, ctx, repo):
    before = snapshot(repo)
    broken = patch("*** Update File: pkg/core.py", "@@", "-def helper(value: str) -> str:",
                   "+def helper(value: str -> str:", "*** Add File: pkg/ok.py", "+OK = True")
    out = await reg.execute("apply_patch", {"input": broken}, ctx)
    assert out.is_error and "new syntax error" in out.text and "pkg/core.py" in out.text
    for text, message in [
        ("*** Update File: pkg/core.py\n", "must start with '*** Begin Patch'"),
        (patch("*** Add File: ../outside.py", "+x = 1"), "outside the workspace"),
        (patch("*** Add File: pkg/core.py", "+x = 1"), "already exists"),
        (patch("*** Delete File: pkg/missing.py"), "no such file"),
    ]:
        out = await reg.execute("apply_patch", {"input": text}, ctx)
        assert out.is_error and out.error_kind == "ToolFailed", text
        assert message in out.text, out.text
    assert snapshot(repo) == before
    assert not (repo.parent / "outside.py").exists()
