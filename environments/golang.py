"""Go repositories (pure): what go.mod and go.work say, and the environment that builds and tests them.

The toolchain is Debian's ``golang-go`` in the base (the Go release of the base's suite: ``DEBIAN_GO``); Go's own
downloads (go.dev, a ``toolchain`` line's newer release) are not used, so ``GOTOOLCHAIN=local``. The build runs
``go mod download`` with network (GOPROXY as the build's network gives it) into ENV_ROOT/go, kept in the
environment; the tests run ``go test -json ./...`` with ``GOPROXY=off``: what the module needs must be in that cache
(or in ``vendor/``). The build cache is the sandbox's own (/tmp), never the workspace's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from environments.interpreters import vkey
from environments.models import ENV_ROOT, NativeSpec, Reason, TestCommand

GO_FILES = ("go.mod", "go.sum", "go.work", "go.work.sum", "vendor/modules.txt")
"""What detection reads (and what keys the environment: the dependencies they pin)."""
DEBIAN_GO = "1.24"
"""The Go of the base's Debian suite (trixie's golang-go)."""
DEBIAN_GO_RELEASE = "1.24.4"
"""Its release (what a go line naming a patch release is compared with)."""
GO_ROOT = f"{ENV_ROOT}/go"
ENV = {"GOPATH": GO_ROOT, "GOMODCACHE": f"{GO_ROOT}/mod", "GOCACHE": "/tmp/go-build", "GOTOOLCHAIN": "local",
       "GOFLAGS": "-modcacherw", "GOTELEMETRY": "off"}
"""Variables of the build and of the sandboxes (the module cache writable by its owner, so it exports as files)."""
OFFLINE = {"GOPROXY": "off", "GOSUMDB": "off"}
"""Variables of the sandboxes only: nothing is downloaded while the tests run."""

_GO_LINE = re.compile(r"go\s+(\d+\.\d+(?:\.\d+)?)\s*(?://.*)?$")
_TOOLCHAIN_LINE = re.compile(r"toolchain\s+go(\S+)")
_MODULE_LINE = re.compile(r"module\s+\"?([^\s\"]+)")
_MAX_LINES = 20_000


def _directives(text: str) -> list[tuple[str, str]]:
    """(verb, the rest) of each directive of a go.mod or go.work, a block's lines under its verb (``require (``
    ... ``)``): one pass over the lines, comments dropped, at most ``_MAX_LINES``."""
    out: list[tuple[str, str]] = []
    block = ""
    for raw in text.splitlines()[:_MAX_LINES]:
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block:
            if line == ")":
                block = ""
            else:
                out.append((block, line))
            continue
        verb, _, rest = line.partition(" ")
        rest = rest.strip()
        if rest == "(":
            block = verb
        else:
            out.append((verb, rest))
    return out


@dataclass
class GoFacts:
    module: str = ""
    go: str = ""
    """go.mod's ``go`` line: the language version the module needs."""
    toolchain: str = ""
    """go.mod's ``toolchain`` line (the release its authors use; never downloaded here)."""
    requires: int = 0
    """Modules go.mod requires (direct and indirect)."""
    workspace: list[str] = field(default_factory=list)
    """go.work's ``use`` directories."""
    vendored: bool = False
    notes: list[str] = field(default_factory=list)



def facts(texts: dict[str, str], present: set[str]) -> GoFacts:
    """The facts of go.mod and go.work (read as data: a line that is not Go's grammar is passed over)."""
    f = GoFacts(vendored="vendor/modules.txt" in present)
    mod = texts.get("go.mod", "")
    for verb, rest in _directives(mod):
        if verb == "module" and not f.module and (m := _MODULE_LINE.match(f"module {rest}")):
            f.module = m[1][:200]
        elif verb == "go" and not f.go and (m := _GO_LINE.match(f"go {rest}")):
            f.go = m[1]
        elif verb == "toolchain" and not f.toolchain and (m := _TOOLCHAIN_LINE.match(f"toolchain {rest}")):
            f.toolchain = m[1][:40]
        elif verb == "require" and len(rest.split()) >= 2:
            f.requires += 1
    f.workspace = [rest.split()[0] for verb, rest in _directives(texts.get("go.work", "")) if verb == "use"][:100]
    if "go.mod" not in texts and not f.workspace:
        f.notes.append("go.mod cannot be read (larger than the limit, or not text)")
    return f


def plan(f: GoFacts) -> tuple[NativeSpec, list[str], list[str], TestCommand, list[Reason], list[str]]:
    """(the Go part, the Debian packages, the setup commands, the test command, the reasons, the notes)."""
    reasons = [Reason(field="toolchain", value=f"golang-go (Go {DEBIAN_GO})",
                      source="Debian's, in the base: Go's own downloads are not used (GOTOOLCHAIN=local)")]
    notes = list(f.notes)
    if f.go:
        reasons.append(Reason(field="go", value=f.go, source="go.mod's go line"))
        if vkey(f.go, 3) > vkey(DEBIAN_GO_RELEASE, 3):
            notes.append(f"go.mod needs Go {f.go}, newer than Debian's {DEBIAN_GO}: go refuses to build it "
                         "(GOTOOLCHAIN=local; Go's own downloads are not reached from here)")
    if f.toolchain:
        reasons.append(Reason(field="toolchain line", value=f.toolchain,
                              source="go.mod (not downloaded: Debian's Go builds the module when its go line allows)"))
    setup: list[str] = []
    if f.vendored:
        reasons.append(Reason(field="dependencies", value="vendor/", source="vendor/modules.txt: go uses them"))
    elif f.requires or f.workspace:
        setup = ["go mod download"]
        reasons.append(Reason(field="dependencies", value="go mod download",
                              source=f"go.mod requires {f.requires} module(s)" + (
                                  f"; go.work uses {len(f.workspace)} module(s)" if f.workspace else "")
                              + ": fetched at build time, the tests run with GOPROXY=off"))
    else:
        reasons.append(Reason(field="dependencies", value="none", source="go.mod requires no module"))
    test = TestCommand(kind="command", argv=["go", "test", "-json", "./..."])
    reasons.append(Reason(field="test_command", value=test.text,
                          source="Go's own runner, every package" + (" of the workspace" if f.workspace else "")))
    native = NativeSpec(language="go", package="golang-go", offline=dict(OFFLINE),
                        versions='echo "go $(go env GOVERSION | sed s/^go//)"')
    return native, ["golang-go"], setup, test, reasons, notes
