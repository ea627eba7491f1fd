"""The task repository on the host (sandbox/hostrepo.py) and reading a workspace as data (sandbox/snapshot.py).

The first test reproduces the host-git defect class with the way bosun used to commit an agent's work (git run in
the workspace, hooks and fsmonitor off) and shows that the import does not run anything."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from infra.errors import ConfigError
from sandbox import diskquota
from sandbox.checkouts import TEMPLATES_PER_SOURCE, CheckoutTemplates
from sandbox.hostgit import check_ref, check_revision, quote_path
from sandbox.hostrepo import TaskRepo, task_key
from sandbox.snapshot import Bounds, SnapshotRefused
from sandbox.sources import SourceStore
from tests.conftest import make_example_repo

G = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


@pytest.fixture
def task(tmp_path) -> tuple[TaskRepo, str]:
    src = make_example_repo(tmp_path / "src")
    (src / ".gitignore").write_text("build/\n*.pyc\n!keep.pyc\n")
    subprocess.run([*G, "add", "-A"], cwd=src, check=True)
    subprocess.run([*G, "commit", "-qm", "ignore"], cwd=src, check=True)
    repo = TaskRepo(tmp_path / "workspaces", "task-1")
    base = repo.prepare(str(src), "HEAD")
    repo.start_branch("bosun/task-1", base)
    return repo, base


def plant_git_attack(ws: Path, canary: Path) -> None:
    """What a prompt-injected model writes with run_command (the issue's reproduction)."""
    subprocess.run(["git", "init", "-q", "--bare", str(ws / "evil")], check=True, capture_output=True)
    run = f'sh -c "id > {canary}; cat"'
    (ws / "evil" / "config").write_text(
        f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = sh -c "id > {canary}"\n'
        f'[filter "x"]\n\tclean = {run}\n\tsmudge = {run}\n[diff]\n\texternal = {run}\n')
    (ws / ".git" / "commondir").write_text("../evil\n")
    (ws / ".gitattributes").write_text("*.py filter=x\n")
    (ws / "calc" / "stats.py").write_text((ws / "calc" / "stats.py").read_text() + "\nx = 1\n")


def test_host_git_in_an_agent_workspace_runs_its_config_and_the_import_does_not(task, tmp_path):
    repo, base = task
    # The old way: git in the workspace, with the old SAFE_GIT overrides. The attack runs (the defect).
    old = repo.materialize("old-way", base)
    canary = tmp_path / "canary-old"
    plant_git_attack(old, canary)
    safe_git_before = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
                       "-c", "protocol.ext.allow=never", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*safe_git_before, "add", "-A"], cwd=old, capture_output=True)
    assert canary.exists(), "the reproduction no longer reproduces: check the attack files"
    # The import: reads the same kind of workspace as data.
    ws = repo.materialize("new-way", base)
    canary2 = tmp_path / "canary-new"
    plant_git_attack(ws, canary2)
    imported = repo.import_run("new-way", base, "agent work")
    assert not canary2.exists()
    assert {".gitattributes", "calc/stats.py", "evil/config"} <= set(imported.files)  # plain files, as data
    merged = repo.merge("bosun/task-1", imported.commit, "merge")
    view = repo.deliver_view("bosun/task-1")  # a checkout of that tree on the host: still nothing runs
    assert merged.merged and (view / "calc" / "stats.py").read_text().endswith("x = 1\n")
    assert not canary2.exists()


def test_run_workspaces_share_nothing_writable(task):
    repo, base = task
    a, b = repo.materialize("a", base), repo.materialize("b", base)
    objects = {p.stat().st_ino for p in (repo.git_dir / "objects").rglob("*") if p.is_file()}
    for ws in (a, b):
        for p in ws.rglob("*"):
            if p.is_file() and not p.is_symlink():
                assert p.stat().st_nlink == 1, p
                assert p.stat().st_ino not in objects
        # the scratch .git borrows objects from the read-only mount inside the sandbox, not from a host path
        assert (ws / ".git" / "objects" / "info" / "alternates").read_text() == "/run/bosun/objects\n"
    assert TaskRepo.objects_for(a) == repo.git_dir / "objects"
    assert TaskRepo.objects_for(repo.git_dir.parent / "elsewhere" / "x") is None


def test_materialize_is_idempotent_and_fresh_for_another_commit(task):
    repo, base = task
    ws = repo.materialize("a", base)
    (ws / "build").mkdir()
    (ws / "build" / "scratch.o").write_text("agent wrote this (ignored)")
    assert repo.materialize("a", base) == ws and (ws / "build" / "scratch.o").exists()  # a retry keeps it
    (ws / "calc" / "stats.py").write_text("changed\n")
    imported = repo.import_run("a", base, "m")
    ws2 = repo.materialize("a", imported.commit)  # another commit: a fresh checkout, nothing left over
    assert not (ws2 / "build").exists() and (ws2 / "calc" / "stats.py").read_text() == "changed\n"


def test_a_run_opened_first_has_what_a_sandbox_binds_and_its_checkout_completes_it(task):
    """An evaluation starts the sandbox on an opened run while the files are checked out: what the sandbox binds
    (the scratch .git's config, hooks, info) is there before, the files after; the result is a materialized run."""
    repo, base = task
    ws = repo.open_run("a", base)
    assert "bosun agent" in (ws / ".git" / "config").read_text() and (ws / ".git" / "hooks").is_dir()
    assert not (ws / "calc").exists()
    repo.check_out("a", base)
    made = repo.materialize("b", base)
    files = sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if ".git" not in p.parts)
    assert files == sorted(str(p.relative_to(made)) for p in made.rglob("*") if ".git" not in p.parts)
    assert (ws / ".git" / "objects" / "info" / "alternates").read_text() == \
        (made / ".git" / "objects" / "info" / "alternates").read_text()
    (ws / "calc" / "stats.py").write_text("kept\n")
    assert repo.open_run("a", base) == ws  # done already: neither half redoes anything
    repo.check_out("a", base)
    assert (ws / "calc" / "stats.py").read_text() == "kept\n"


def test_import_reads_links_and_names_as_data(task):
    repo, base = task
    ws = repo.materialize("a", base)
    os.symlink("/etc/shadow", ws / "shadow.py")
    os.symlink("/", ws / "root")
    os.mkfifo(ws / "fifo.py")
    for name in ("-rf", "--upload-pack=touch x", "a\nb.py", "tab\t.py", "quote\".py", "back\\slash.py"):
        (ws / name).write_text(name)
    (ws / os.fsdecode(b"latin-\xe9.py")).write_text("non-utf8 name")
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    (ws / "tool.sh").chmod(0o755)
    for nested in ("vendor/.git", "vendor2/.GIT", "vendor3/git~1", "vendor4/.git."):
        (ws / nested).mkdir(parents=True)
        (ws / nested / "config").write_text("[core]\n\tfsmonitor = id\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_text("ignored")
    (ws / "keep.pyc").write_text("negated ignore")
    (ws / "x.pyc").write_text("ignored")
    (ws / "calc" / "report.py").unlink()

    done = threading.Event()
    result = {}

    def work():
        result["imported"] = repo.import_run("a", base, "agent")
        done.set()

    threading.Thread(target=work, daemon=True).start()
    assert done.wait(30), "the import blocked (a FIFO must never be opened for reading)"
    imported = result["imported"]
    files = set(imported.files)
    # names are handed out in their shown form (infra.names): one that is not UTF-8 quoted as git quotes it
    assert {"shadow.py", "root", "-rf", "--upload-pack=touch x", "a\nb.py", "tab\t.py", "quote\".py",
            "back\\slash.py", "tool.sh", "keep.pyc", "calc/report.py", '"latin-\\351.py"'} == files
    assert any("fifo.py" in n and "FIFO" in n for n in imported.notes)
    assert sum("nested git directory" in n for n in imported.notes) == 4
    tree = subprocess.run(["git", f"--git-dir={repo.git_dir}", "ls-tree", "-r", imported.commit],
                          capture_output=True, text=True, check=True).stdout
    assert "120000 blob" in tree and "100755 blob" in tree
    names = subprocess.run(["git", f"--git-dir={repo.git_dir}", "ls-tree", "-r", "-z", "--name-only",
                            imported.commit], capture_output=True, check=True).stdout.split(b"\0")
    assert b"latin-\xe9.py" in names and b"a\nb.py" in names  # the commit holds the names' bytes
    shown = subprocess.run(["git", f"--git-dir={repo.git_dir}", "show", f"{imported.commit}:shadow.py"],
                           capture_output=True, text=True, check=True).stdout
    assert shown == "/etc/shadow"  # the link's target, never the file it points to


def test_import_takes_files_as_git_add_does_with_the_attributes_eol(tmp_path):
    """A repository whose .gitattributes says ``*.bat text eol=crlf`` (pytest's): the checkout writes CRLF, the
    import takes the files back as git add does (LF blobs), so an untouched file is no change and an edited one
    is stored with LF, the attributes' own conversions only."""
    src = make_example_repo(tmp_path / "src")
    (src / ".gitattributes").write_text("*.bat text eol=crlf\n")
    (src / "run.bat").write_text("echo one\necho two\n")
    subprocess.run([*G, "add", "-A"], cwd=src, check=True)
    subprocess.run([*G, "commit", "-qm", "bat"], cwd=src, check=True)
    repo = TaskRepo(tmp_path / "workspaces", "task-crlf")
    base = repo.prepare(str(src), "HEAD")
    ws = repo.materialize("a", base)
    assert (ws / "run.bat").read_bytes() == b"echo one\r\necho two\r\n"  # what a checkout writes
    assert repo.import_run("a", base, "nothing").commit is None
    (ws / "calc" / "stats.py").write_text("x = 1\n")
    imported = repo.import_run("a", base, "one file")
    assert imported.files == ["calc/stats.py"]
    (ws / "run.bat").write_bytes(b"echo one\r\necho three\r\n")
    imported = repo.import_run("a", base, "the bat")
    assert imported.files == ["calc/stats.py", "run.bat"]
    shown = subprocess.run(["git", f"--git-dir={repo.git_dir}", "cat-file", "blob", f"{imported.commit}:run.bat"],
                           capture_output=True, check=True).stdout
    assert shown == b"echo one\necho three\n"


def test_import_is_bounded(task):
    repo, base = task
    ws = repo.materialize("a", base)
    junk = ws / "node_modules"
    junk.mkdir()
    for i in range(300):
        (junk / f"f{i}.js").write_text("x")
    (ws / ".gitignore").write_text("build/\n*.pyc\nnode_modules/\n")
    small = Bounds(max_entries=200, max_depth=8, max_file_bytes=1000, max_total_bytes=100_000)
    # an ignored directory is never walked, so its 300 files do not count
    assert repo.import_run("a", base, "m", small).commit is not None
    (ws / ".gitignore").write_text("build/\n")
    with pytest.raises(SnapshotRefused, match="more than 200 files"):
        repo.import_run("a", base, "m", small)
    (ws / ".gitignore").write_text("node_modules/\n")
    deep = ws
    for _ in range(12):
        deep = deep / "d"
    deep.mkdir(parents=True)
    with pytest.raises(SnapshotRefused, match="deeper than 8"):
        repo.import_run("a", base, "m", small)
    import shutil

    shutil.rmtree(ws / "d")
    (ws / "big.bin").write_bytes(b"\0" * 5000)
    (ws / "calc" / "stats.py").write_bytes(b"#" * 5000)  # a tracked file grown past the bound: kept as it was
    imported = repo.import_run("a", base, "m", small)
    assert "big.bin" not in imported.files and "calc/stats.py" not in imported.files
    assert any(n.startswith("big.bin:") for n in imported.notes)
    for i in range(120):
        (ws / f"part{i}.txt").write_bytes(b"y" * 900)
    with pytest.raises(SnapshotRefused, match="add up to more than"):
        repo.import_run("a", base, "m", small)


def test_merges_happen_in_the_repository(task):
    repo, base = task
    one, two, three = (repo.materialize(n, base) for n in ("s1", "s2", "s3"))
    (one / "calc" / "stats.py").write_text((one / "calc" / "stats.py").read_text() + "\n# one\n")
    (two / "calc" / "report.py").write_text((two / "calc" / "report.py").read_text() + "\n# two\n")
    (three / "calc" / "stats.py").write_text((three / "calc" / "stats.py").read_text() + "\n# three\n")
    c1, c2, c3 = (repo.import_run(n, base, n).commit for n in ("s1", "s2", "s3"))
    assert repo.merge("bosun/task-1", c1, "m1").merged
    m2 = repo.merge("bosun/task-1", c2, "m2")
    assert m2.merged and repo.merge("bosun/task-1", c2, "m2") == m2  # idempotent
    m3 = repo.merge("bosun/task-1", c3, "m3")
    assert not m3.merged and m3.conflicts == ["calc/stats.py"] and repo.head("bosun/task-1") == m2.head
    diff, files = repo.diff(base, m2.head)
    assert files == ["calc/report.py", "calc/stats.py"] and "+# one" in diff and "+# two" in diff


def test_names_that_are_not_utf8_are_imported_merged_and_handed_out_shown(task):
    """Every name the repository hands out is in the shown form (infra/names.py), and one left out of an import is
    not taken for a deletion whatever its bytes."""
    repo, base = task
    both, big = os.fsdecode(b"both\xff.txt"), os.fsdecode(b"big\xe9.bin")
    for run, text in (("a", "from a\n"), ("b", "from b\n")):
        ws = repo.materialize(run, base)
        (ws / both).write_text(text)
        (ws / big).write_text("small for now\n")
        os.mkfifo(ws / os.fsdecode(b"fifo\xff"))
    a, b = repo.import_run("a", base, "a"), repo.import_run("b", base, "b")
    assert a.files == ['"big\\351.bin"', '"both\\377.txt"'] and a.notes == ['"fifo\\377": a FIFO, not imported']
    assert repo.merge("bosun/task-1", a.commit, "m").merged
    m = repo.merge("bosun/task-1", b.commit, "m")
    assert not m.merged and m.conflicts == ['"both\\377.txt"']
    head = repo.head("bosun/task-1")
    diff, files = repo.diff(base, head)
    assert files == ['"big\\351.bin"', '"both\\377.txt"'] and '+++ "b/both\\377.txt"' in diff
    assert repo.patch(base, head)[1] == files
    later = repo.materialize("c", head)
    (later / big).write_text("x" * 5000)  # now too large to import: left out, not deleted
    (later / both).write_text("later\n")
    c = repo.import_run("c", head, "c", Bounds(max_file_bytes=4000))
    assert c.files == ['"both\\377.txt"'] and c.notes == ['"big\\351.bin": 5000 bytes, larger than 4000; not imported']


def test_names_from_outside_never_become_options(task, tmp_path):
    repo, base = task
    for bad in ("--upload-pack=touch /tmp/x", "-b", "a b", "a\nb", "a..b", "a//b", "x.lock", "@{-1}", "", "é"):
        with pytest.raises(ConfigError):
            check_ref(bad)
    assert check_revision("0123abc") == "0123abc"
    assert check_ref("bosun/gh-acme-api-issue-7") == "bosun/gh-acme-api-issue-7"
    other = TaskRepo(tmp_path / "ws2", "t2")
    with pytest.raises(ConfigError):
        other.prepare(str(tmp_path / "src"), "--upload-pack=touch /tmp/pwned")
    with pytest.raises(ConfigError):
        other.prepare("--upload-pack=touch /tmp/pwned", "HEAD")
    with pytest.raises(ConfigError):
        repo.run_dir("../escape")
    assert task_key("a/b") != task_key("a_b") and "/" not in task_key("../../x") and task_key("ok-1") == "ok-1"
    assert quote_path("a\n\"b\\") == b'"a\\n\\"b\\\\"'


def test_a_workspace_with_a_quota_fills_up_alone(task):
    repo, base = task
    assert diskquota.support()[0], diskquota.support()[1]  # the suite runs as root, with loop devices
    ws = repo.materialize("q", base, owner=(64000, 64000), quota_mb=8)
    assert diskquota.is_mount(ws) and ws.stat().st_uid == 64000 and (ws / "calc").stat().st_uid == 64000
    with pytest.raises(OSError, match="No space left"):
        with open(ws / "fill", "wb") as f:
            for _ in range(64):
                f.write(b"\0" * (1 << 20))
                f.flush()
                os.fsync(f.fileno())
    repo.drop_run("q")
    assert not ws.exists() and not diskquota.image_of(ws).exists()


def _git_out(*args: str, env: dict | None = None, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True, env=env, cwd=cwd).stdout


def test_an_evaluation_fetches_just_the_commits_it_needs(tmp_path):
    src = make_example_repo(tmp_path / "src")
    first = _git_out("-C", str(src), "rev-parse", "HEAD").strip()
    for n in range(3):
        (src / f"later{n}.txt").write_text(f"{n}\n")
        subprocess.run([*G, "add", "-A"], cwd=src, check=True)
        subprocess.run([*G, "commit", "-qm", f"later {n}"], cwd=src, check=True)
    second = _git_out("-C", str(src), "rev-parse", "HEAD~1").strip()
    repo = TaskRepo(tmp_path / "workspaces", "eval-1/inst")
    assert repo.prepare_commits(str(src), [second, first]) == second
    assert repo.prepare_commits(str(src), [second, first]) == second  # idempotent
    store = SourceStore(tmp_path / "workspaces", str(src))
    assert repo.objects_git == store.git_dir
    assert sorted(_git_out("--git-dir", str(store.git_dir), "rev-list", "--all").split()) == sorted([first, second])
    # the instance's own repository (what its sandbox may read) holds the commits and their trees, no file
    assert sorted(_git_out("--git-dir", str(repo.git_dir), "rev-list", "--all").split()) == sorted([first, second])
    blob = _git_out("--git-dir", str(store.git_dir), "rev-parse", f"{second}:later0.txt").strip()
    has = ["git", "--git-dir", str(repo.git_dir), "cat-file", "-e", blob]
    assert subprocess.run(has, capture_output=True).returncode != 0
    ws = repo.materialize("eval", second)  # the host checks out from the store
    assert (ws / "later1.txt").exists() and not (ws / "later2.txt").exists()
    assert not list((ws / ".git" / "objects" / "pack").glob("*.pack")) and (ws / ".git" / "shallow").exists()
    # inside the sandbox git reads the instance's repository (bound at OBJECTS_IN_SANDBOX), here emulated by
    # naming its objects directory: a file it was not lent cannot be checked out ...
    env = {**os.environ, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo.git_dir / "objects")}
    (ws / "later0.txt").write_text("changed\n")
    reset = ["git", "checkout", second, "--", "later0.txt"]
    assert subprocess.run(reset, cwd=ws, capture_output=True, env=env).returncode != 0
    # ... one lent by expose can (a name the commit does not have lends nothing)
    repo.expose(second, ["no/such/file.py"])
    assert subprocess.run(has, capture_output=True).returncode != 0
    repo.expose(second, ["later0.txt", "no/such/file.py"])
    subprocess.run(reset, cwd=ws, check=True, capture_output=True, env=env)
    assert (ws / "later0.txt").read_text() == "0\n"
    assert _git_out("log", "--format=%H", cwd=ws, env=env).split() == [second]  # the history stops there
    # another instance of the same source and commit fetches nothing
    packs = sorted((store.git_dir / "objects" / "pack").glob("*.pack"))
    other = TaskRepo(tmp_path / "workspaces", "eval-2/inst")
    assert other.prepare_commits(str(src), [second]) == second
    assert sorted((store.git_dir / "objects" / "pack").glob("*.pack")) == packs
    assert (other.materialize("eval", second) / "later1.txt").exists()
    missing = TaskRepo(tmp_path / "workspaces", "eval-1/other")
    with pytest.raises(ConfigError, match="cannot fetch 0000000000"):
        missing.prepare_commits(str(src), ["0" * 40])
    assert not missing.git_dir.exists()
    with pytest.raises(ConfigError, match="full object id"):
        missing.prepare_commits(str(src), ["abc123"])
    with pytest.raises(ConfigError, match="may not start with '-'"):
        missing.prepare_commits("--upload-pack=touch /tmp/x", [first])


def test_a_source_store_cut_short_is_made_good_and_expose_lends_what_git_would_match(tmp_path):
    src = make_example_repo(tmp_path / "src")
    (src / "d").mkdir()
    for name in ("a[1].py", "a1.py", "b.py"):
        (src / "d" / name).write_text(f"# {name}\n")
    subprocess.run([*G, "add", "-A"], cwd=src, check=True)
    subprocess.run([*G, "commit", "-qm", "more"], cwd=src, check=True)
    head = _git_out("-C", str(src), "rev-parse", "HEAD").strip()
    root = tmp_path / "workspaces"
    store = SourceStore(root, str(src))
    store.git_dir.mkdir(parents=True)
    (store.git_dir / "HEAD").write_text("ref: refs/heads/main\n")  # a crash while it was being made
    repo = TaskRepo(root, "eval-1/inst")
    assert repo.prepare_commits(str(src), [head]) == head
    assert (store.git_dir / "bosun-store").exists() and store.missing([head]) == []
    # a fetch cut short before its ref was written: the objects are there, the commit counts as missing and is
    # fetched again (so a repack can never drop it)
    subprocess.run(["git", "--git-dir", str(store.git_dir), "update-ref", "-d", f"refs/bosun/keep/{head}"],
                   check=True)
    assert store.missing([head]) == [head]
    store.ensure([head])
    assert store.missing([head]) == []

    def lent() -> set[str]:
        found = set()
        for line in _git_out("--git-dir", str(store.git_dir), "ls-tree", "-r", "--full-tree", head).splitlines():
            meta, path = line.split("\t", 1)
            has = subprocess.run(["git", "--git-dir", str(repo.git_dir), "cat-file", "-e", meta.split()[2]],
                                 capture_output=True)
            if has.returncode == 0:
                found.add(path)
        return found

    assert lent() == set()
    # bad names are skipped, not an error; a name lends what git's pathspec would match there (d/a[1].py: itself
    # and, as a pattern, d/a1.py: git checkout resets both, as in the harness), a folder lends its files
    repo.expose(head, ["", "/etc/passwd", "../outside", "d/a[1].py"])
    assert lent() == {"d/a[1].py", "d/a1.py"}
    repo.expose(head, ["calc"])
    assert {p for p in lent() if p.startswith("calc/")} == set(_git_out("-C", str(src), "ls-files", "calc").split())
    repo.expose(head, [], everything=True)
    assert lent() == set(_git_out("-C", str(src), "ls-files").split())


def _tree(ws: Path) -> dict[str, tuple]:
    """Every path of a work tree but .git: kind, mode, owner, content or link target."""
    found = {}
    for path in sorted(ws.rglob("*")):
        rel = path.relative_to(ws).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        st = path.lstat()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path), st.st_uid)
        elif path.is_dir():
            found[rel] = ("dir", st.st_uid)
        else:
            found[rel] = ("file", oct(st.st_mode), st.st_uid, path.read_bytes())
    return found


def test_a_workspace_from_a_checkout_template_equals_a_fresh_checkout(tmp_path, monkeypatch):
    src = make_example_repo(tmp_path / "src")
    (src / "gone.txt").write_text("removed later\n")
    (src / "run.sh").write_text("echo hi\n")
    (src / "deep" / "er").mkdir(parents=True)
    (src / "deep" / "er" / "old.py").write_text("x = 1\n")
    (src / "esc").mkdir()
    (src / "esc" / "f.txt").write_text("a folder in the template's commit\n")
    subprocess.run([*G, "add", "-A"], cwd=src, check=True)
    subprocess.run([*G, "commit", "-qm", "template commit"], cwd=src, check=True)
    template = _git_out("-C", str(src), "rev-parse", "HEAD").strip()
    (src / "gone.txt").unlink()
    (src / "run.sh").chmod(0o755)
    (src / "README.md").write_text("changed\n")
    subprocess.run([*G, "mv", "deep/er/old.py", "deep/new.py"], cwd=src, check=True)
    (src / "added").mkdir()
    (src / "added" / "f.txt").write_text("new\n")
    os.symlink("added/f.txt", src / "link")
    # ... and a link out of the workspace at the base commit: its old files' names must not lead the host there
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("the host's\n")
    subprocess.run([*G, "rm", "-rq", "esc"], cwd=src, check=True)
    os.symlink(str(outside), src / "esc")
    subprocess.run([*G, "add", "-A"], cwd=src, check=True)
    subprocess.run([*G, "commit", "-qm", "base commit"], cwd=src, check=True)
    base = _git_out("-C", str(src), "rev-parse", "HEAD").strip()
    fresh = TaskRepo(tmp_path / "workspaces", "eval-1/inst")
    repo = TaskRepo(tmp_path / "workspaces", "eval-2/inst")
    try:
        _from_a_template(tmp_path, monkeypatch, src, fresh, repo, template, base)
    finally:  # no workspace file system left mounted
        fresh.drop_run("eval")
        repo.drop_run("eval")


def _from_a_template(tmp_path, monkeypatch, src, fresh, repo, template, base):
    owner = (64000, 64000)
    fresh.prepare_commits(str(src), [base, template])
    expected = _tree(fresh.materialize("eval", base, owner=owner, quota_mb=64))
    # no template yet: a full checkout; then the template is made (once) for the next instances
    assert fresh.make_template(template, owner=owner, quota_mb=64)
    assert not fresh.make_template(template, owner=owner, quota_mb=64)
    repo.prepare_commits(str(src), [base, template])
    ws = repo.open_run("eval", base, owner=owner, quota_mb=64, template=template)
    assert (ws / "gone.txt").exists() and (ws / ".git" / "bosun-template").exists()  # the template's copy
    repo.check_out("eval", base, owner=owner)
    assert _tree(ws) == expected  # added, removed, renamed, mode and symlink changes; every file the sandbox's
    assert (tmp_path / "outside" / "f.txt").stat().st_uid == os.getuid()  # not chowned through the link
    scratch = ws / ".git"
    assert not (scratch / "bosun-template").exists() and not (scratch / "logs").exists()
    assert (scratch / "shallow").read_text() == (repo.git_dir / "shallow").read_text()
    assert (scratch / "objects" / "info" / "alternates").read_text() == "/run/bosun/objects\n"
    env = {**os.environ, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo.objects_git / "objects")}
    assert _git_out("-c", "safe.directory=*", "rev-parse", "HEAD", cwd=ws, env=env).strip() == base
    assert _git_out("-c", "safe.directory=*", "status", "--porcelain", cwd=ws, env=env) == ""
    # too small for a commit whose checkout needs more room: a fresh file system instead
    templates = repo.templates()
    assert templates is not None and templates.find(template, owner, 10**6, 0) is None
    # at most TEMPLATES_PER_SOURCE per source, the least recently used removed first
    for commit in (base, template):
        other = TaskRepo(tmp_path / "workspaces", f"eval-3/{commit[:8]}")
        other.prepare_commits(str(src), [commit])
    for uid in range(64001, 64001 + TEMPLATES_PER_SOURCE):
        assert repo.make_template(base, owner=(uid, uid), quota_mb=64)
    assert len(list(templates.dir.glob("*.img"))) == TEMPLATES_PER_SOURCE
    assert templates.find(template, owner, 0, 0) is None and templates.find(base, (64001, 64001), 0, 0)
    # a template removed between finding and copying it: the workspace is made fresh
    monkeypatch.setattr(CheckoutTemplates, "find", lambda *_a: templates.dir / "removed-meanwhile.img")
    repo.drop_run("eval")
    ws = repo.open_run("eval", base, owner=owner, quota_mb=64, template=template)
    assert not (ws / ".git" / "bosun-template").exists() and not (ws / "README.md").exists()
    repo.check_out("eval", base, owner=owner)
    assert _tree(ws) == expected


def test_source_stores_are_listed_and_pruned_by_last_use_never_while_recent(tmp_path):
    """`bosun eval sources`: each store with its commits, size and last use (every instance's fetch marks it);
    pruning removes a store and its checkout templates by age or beyond a size, never one used within the
    hour, nothing on a dry run; what a crash left is cleared; a marker that cannot be read, or names another
    source, is no store."""
    import json
    import time

    from sandbox.sources import SOURCES, prune_sources, stored_sources

    root = tmp_path / "workspaces"
    srcs, commits = [], []
    for name in ("a", "b", "c"):
        src = make_example_repo(tmp_path / name)
        srcs.append(str(src))
        commits.append(_git_out("-C", str(src), "rev-parse", "HEAD").strip())
        TaskRepo(root, f"eval-1/{name}").prepare_commits(str(src), [commits[-1]])
    stores = [SourceStore(root, s) for s in srcs]
    templates = CheckoutTemplates(stores[0].git_dir).dir
    templates.mkdir()
    (templates / f"{commits[0]}-0.img").write_bytes(b"x" * 4096)
    listed = stored_sources(root)
    assert sorted(s.source for s in listed) == sorted(srcs)
    assert all(s.commits == 1 and s.size_mb > 0 for s in listed)
    # a's last use 30 days ago, b's 3 days ago, c's now
    now = time.time()
    os.utime(stores[0].marker, (now - 30 * 86400, now - 30 * 86400))
    os.utime(stores[1].marker, (now - 3 * 86400, now - 3 * 86400))
    assert [s.source for s in stored_sources(root)] == srcs  # least recently used first
    # junk beside them: a crash while removing one, templates whose store is gone, a marker unreadable, a marker
    # naming another source
    trash = root / SOURCES / ".trash-0000-x.git"
    orphan = root / SOURCES / ("f" * 24 + ".templates")
    for junk in (trash, orphan):
        junk.mkdir()
        os.utime(junk, (now - 7200, now - 7200))
    (root / SOURCES / "bad.git").mkdir()
    (root / SOURCES / "bad.git" / "bosun-store").write_text("{not json")
    (root / SOURCES / "other.git").mkdir()
    (root / SOURCES / "other.git" / "bosun-store").write_text(json.dumps({"source": srcs[2]}))
    assert len(stored_sources(root)) == 3
    before = sorted(p.name for p in (root / SOURCES).iterdir())
    assert prune_sources(root, older_than_days=14, dry_run=True)["sources"] == [srcs[0]]
    assert sorted(p.name for p in (root / SOURCES).iterdir()) == before  # a dry run changes nothing
    out = prune_sources(root, older_than_days=14)
    assert out["sources"] == [srcs[0]] and out["freed_mb"] > 0
    assert not stores[0].git_dir.exists() and not templates.exists() and not trash.exists()
    assert not orphan.exists()
    assert stores[1].git_dir.exists() and stores[2].git_dir.exists()
    # by size: the least recently used go until the rest fits, but not c (used within the hour)
    assert prune_sources(root, max_gb=1e-9)["sources"] == [srcs[1]]
    assert [s.source for s in stored_sources(root)] == [srcs[2]]
    assert prune_sources(root, older_than_days=0, max_gb=1e-9)["sources"] == []
    # used since it was listed (a fetch began meanwhile: it holds the lock, then marks the store): kept
    listed = stored_sources(root)[0]
    os.utime(stores[2].marker, (listed.last_used + 5, listed.last_used + 5))
    assert not stores[2].remove(unless_used_after=listed.last_used) and stores[2].git_dir.exists()
    # a removed source is fetched again by the next instance that needs it, and by one prepared before (an
    # evaluation run again under the same name)
    assert TaskRepo(root, "eval-1/a").prepare_commits(srcs[0], [commits[0]]) == commits[0]
    assert stores[0].missing([commits[0]]) == []
    assert (TaskRepo(root, "eval-1/a").materialize("eval", commits[0]) / "calc").exists()
    assert TaskRepo(root, "eval-2/a").prepare_commits(srcs[0], [commits[0]]) == commits[0]


def test_another_host_restores_the_task_from_its_checkpoints(task, tmp_path):
    """The clone, an agent's commit and a merge, each a bundle of what is new; a host with an empty data dir
    applies them in order and holds the branch as it was; one it already holds is not fetched again."""
    repo, base = task
    bundles: list[tuple[list[str], Path]] = []

    def keep(tips: list[str], parents: list[str]) -> None:
        path = tmp_path / f"ckpt-{len(bundles)}.bundle"
        assert repo.checkpoint(tips, parents, path)
        bundles.append((tips, path))

    keep([base], [])
    ws = repo.open_run("agent-1", base)
    repo.check_out("agent-1", base)
    (ws / "calc" / "stats.py").write_text("def median(xs):\n    return 0\n")
    run = repo.import_run("agent-1", base, "agent work").commit
    keep([run], [base])
    assert not repo.checkpoint([run], [base, run], tmp_path / "empty.bundle")  # nothing new: no bundle
    merged = repo.merge("bosun/task-1", run, "merge agent-1")
    keep([merged.head], [base, run])
    assert bundles[1][1].stat().st_size < bundles[0][1].stat().st_size / 2  # incremental, not the clone again

    other = TaskRepo(tmp_path / "host-b", "task-1")
    fetched: list[Path] = []

    def fetcher(path: Path):
        def fetch(dest: Path) -> None:
            fetched.append(path)
            dest.write_bytes(path.read_bytes())
        return fetch

    meta = repo.prepared()
    assert other.restore(meta, [(tips, fetcher(p)) for tips, p in bundles], "bosun/task-1", merged.head) == 3
    assert other.head("bosun/task-1") == merged.head and other.prepared()["base"] == base
    assert other.diff(base, merged.head) == repo.diff(base, merged.head)
    assert other.restore(meta, [(tips, fetcher(p)) for tips, p in bundles]) == 0 and len(fetched) == 3
    # a bundle whose objects were tampered with is refused (git checks what it fetches)
    bad = tmp_path / "bad.bundle"
    data = bundles[2][1].read_bytes()
    bad.write_bytes(data[:-40] + bytes(b ^ 0xFF for b in data[-40:]))
    third = TaskRepo(tmp_path / "host-c", "task-1")
    with pytest.raises(ConfigError):
        third.restore(meta, [(bundles[0][0], fetcher(bundles[0][1])), (bundles[2][0], fetcher(bad))])


def _state(src: Path) -> dict:
    """Everything of a work tree a person works with: HEAD, the index, the status, the files' contents."""
    def run(*args: str) -> bytes:  # (no fsmonitor, no index refresh: looking changes nothing)
        return subprocess.run(["git", "--no-optional-locks", "-c", "core.fsmonitor=false", *args], cwd=src,
                              capture_output=True, check=True).stdout
    files = {p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*")
             if p.is_file() and ".git" not in p.relative_to(src).parts}
    status = run("status", "--porcelain=v1", "-z", "--untracked-files=all")
    return {"head": run("symbolic-ref", "HEAD"), "index": (src / ".git" / "index").read_bytes(), "status": status,
            "staged": run("diff", "--cached", "--binary"), "files": files}


def _worked(repo: TaskRepo, base: str) -> str:
    ws = repo.materialize("agent", base)
    (ws / "calc" / "stats.py").write_text((ws / "calc" / "stats.py").read_text() + "\n# fixed\n")
    imported = repo.import_run("agent", base, "agent work")
    return repo.merge("bosun/task-1", imported.commit, "merge").head


def test_the_result_lands_in_the_source_repository_as_a_ref_only(task, tmp_path):
    """The branch appears in the user's repository at the task's head; their checked-out branch, index, staged and
    unstaged changes and untracked files are exactly as they were, and none of their hooks or fsmonitor ran."""
    repo, base = task
    head = _worked(repo, base)
    src = Path(repo.prepared()["source"])
    (src / "calc" / "report.py").write_text("# my unfinished work\n")  # unstaged
    (src / "notes.txt").write_text("staged\n")
    subprocess.run([*G, "add", "notes.txt"], cwd=src, check=True)
    (src / "scratch.txt").write_text("untracked\n")
    canary = tmp_path / "canary"
    for hook in ("reference-transaction", "post-checkout", "post-merge", "pre-auto-gc"):
        (src / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\necho {hook} >> {canary}\n")
        (src / ".git" / "hooks" / hook).chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", f"echo fsmonitor >> {canary}"], cwd=src, check=True)
    before = _state(src)
    got = repo.deliver_to_source(str(src), "bosun/task-1", base, head)
    assert got.branch == "bosun/task-1" and "a ref only" in got.note
    tip = subprocess.run(["git", "rev-parse", "bosun/task-1"], cwd=src, capture_output=True, text=True, check=True)
    assert tip.stdout.strip() == head
    assert _state(src) == before
    assert not canary.exists(), canary.read_text()
    again = repo.deliver_to_source(str(src), "bosun/task-1", base, head)  # delivered twice: the same
    assert again.branch == "bosun/task-1"


def test_a_branch_of_the_same_name_with_other_commits_is_left_alone(task):
    repo, base = task
    head = _worked(repo, base)
    src = Path(repo.prepared()["source"])
    subprocess.run([*G, "checkout", "-qb", "bosun/task-1"], cwd=src, check=True)
    (src / "mine.txt").write_text("mine\n")
    subprocess.run([*G, "add", "mine.txt"], cwd=src, check=True)
    subprocess.run([*G, "commit", "-qm", "mine"], cwd=src, check=True)
    mine = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True).stdout.strip()
    got = repo.deliver_to_source(str(src), "bosun/task-1", base, head)
    assert got.branch == "" and ("checked out" in got.note or "other commits" in got.note), got.note
    subprocess.run([*G, "checkout", "-q", "-"], cwd=src, check=True)  # not checked out now: still not moved
    got = repo.deliver_to_source(str(src), "bosun/task-1", base, head)
    assert got.branch == "" and "other commits" in got.note
    assert subprocess.run(["git", "rev-parse", "bosun/task-1"], cwd=src, capture_output=True,
                          text=True).stdout.strip() == mine


def test_a_source_that_is_not_a_repository_here_gets_a_note_not_an_error(task, tmp_path):
    repo, base = task
    head = _worked(repo, base)
    for source in ("https://example.com/acme/calc.git", str(tmp_path / "gone"), str(tmp_path)):
        got = repo.deliver_to_source(source, "bosun/task-1", base, head)
        assert got.branch == "" and source in got.note


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a root worker writing into a repository another uid owns")
def test_a_root_worker_writes_the_branch_as_the_repository_owner(task):
    repo, base = task
    head = _worked(repo, base)
    src = Path(repo.prepared()["source"])
    for folder in [*src.parents][:-1]:  # (the owner reaches their repository, as in a home directory)
        if folder.stat().st_mode & 0o001 == 0 and str(folder).startswith(tempfile.gettempdir()):
            folder.chmod(folder.stat().st_mode | 0o011)
    subprocess.run(["chown", "-R", "65534:65534", str(src)], check=True)
    before = {p for p in (src / ".git").rglob("*")}
    got = repo.deliver_to_source(str(src), "bosun/task-1", base, head)
    assert got.branch == "bosun/task-1", got.note
    new = [p for p in (src / ".git").rglob("*") if p not in before]
    assert new and all(p.stat().st_uid == 65534 for p in new), [(str(p), p.stat().st_uid) for p in new]


def test_a_repository_without_the_base_commit_is_not_written(task):
    """The directory at the task's source path no longer has the commit the task started from (another repository
    there now, or its history rewritten): nothing is written into it, and the note says why."""
    repo, base = task
    head = _worked(repo, base)
    src = Path(repo.prepared()["source"])
    subprocess.run(["rm", "-rf", str(src / ".git")], check=True)
    subprocess.run([*G, "init", "-q"], cwd=src, check=True)
    subprocess.run([*G, "add", "-A"], cwd=src, check=True)
    subprocess.run([*G, "commit", "-qm", "rewritten"], cwd=src, check=True)
    got = repo.deliver_to_source(str(src), "bosun/task-1", base, head)
    assert got.branch == "" and "does not have the commit the task started from" in got.note
    assert subprocess.run(["git", "cat-file", "-t", base], cwd=src, capture_output=True, text=True).returncode != 0
    assert subprocess.run(["git", "rev-parse", "--verify", "-q", "bosun/task-1"], cwd=src).returncode != 0


def test_a_result_that_moves_a_submodule_touches_nothing_of_the_submodule(task, tmp_path):
    """The task's commit points a submodule at another commit: the branch arrives, and git does not go and fetch
    into the user's submodule (no recursion: a ref only)."""
    repo, base = task
    src = Path(repo.prepared()["source"])
    sub = tmp_path / "sub"
    sub.mkdir()

    def commit_in_sub(i: int) -> str:
        (sub / "f.txt").write_text(f"{i}\n")
        subprocess.run([*G, "add", "-A"], cwd=sub, check=True)
        subprocess.run([*G, "commit", "-qm", f"c{i}"], cwd=sub, check=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=sub, capture_output=True, text=True).stdout.strip()
    subprocess.run([*G, "init", "-q"], cwd=sub, check=True)
    commit_in_sub(1)
    subprocess.run([*G, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub"], cwd=src,
                   check=True)
    subprocess.run([*G, "commit", "-qm", "submodule"], cwd=src, check=True)
    c2 = commit_in_sub(2)  # (the user's submodule has not fetched it)
    repo2 = TaskRepo(tmp_path / "workspaces2", "task-2")
    base2 = repo2.prepare(str(src), "HEAD")
    repo2.start_branch("bosun/task-2", base2)
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "index"), "GIT_DIR": str(repo2.git_dir)}
    run = lambda *a: subprocess.run(["git", *a], env=env, capture_output=True, text=True, check=True).stdout.strip()  # noqa: E731
    run("read-tree", base2)
    run("update-index", "--cacheinfo", f"160000,{c2},sub")
    tree = run("write-tree")
    head = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", tree, "-p", base2,
                           "-m", "move sub"], env=env, capture_output=True, text=True, check=True).stdout.strip()
    run("update-ref", "refs/heads/bosun/task-2", head)
    modules = src / ".git" / "modules" / "sub"
    refs_before = subprocess.run(["git", f"--git-dir={modules}", "for-each-ref"], capture_output=True,
                                 text=True).stdout
    got = repo2.deliver_to_source(str(src), "bosun/task-2", base2, head)
    assert got.branch == "bosun/task-2", got.note
    assert subprocess.run(["git", f"--git-dir={modules}", "for-each-ref"], capture_output=True,
                          text=True).stdout == refs_before
