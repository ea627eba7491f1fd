"""Rust repositories (pure): what Cargo.toml and rust-toolchain say, and the environment that builds and tests them.

The toolchain is Debian's ``cargo`` and ``rustc`` in the base (the release of the base's suite: ``DEBIAN_RUST``);
rustup and static.rust-lang.org are not used, so a ``rust-toolchain`` file naming another channel is a note, not a
download. The build runs ``cargo fetch`` with network into ENV_ROOT/cargo (kept in the environment; it also writes
Cargo.lock when the repository has none, kept with the build's other files); the tests run
``cargo test --workspace --no-fail-fast`` with ``CARGO_NET_OFFLINE``, the compiled output in the workspace's
``target/`` as cargo puts it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

from environments.interpreters import vkey
from environments.models import ENV_ROOT, NativeSpec, Reason, TestCommand

RUST_FILES = ("Cargo.toml", "Cargo.lock", "rust-toolchain", "rust-toolchain.toml")
"""What detection reads (and what keys the environment: the dependencies they pin)."""
DEBIAN_RUST = "1.85"
"""The Rust of the base's Debian suite (trixie's rustc)."""
DEBIAN_RUST_RELEASE = "1.85.1"
"""Its release (what a rust-version naming a patch release is compared with)."""
CARGO_HOME = f"{ENV_ROOT}/cargo"
ENV = {"CARGO_HOME": CARGO_HOME, "CARGO_TERM_COLOR": "never", "CARGO_INCREMENTAL": "0", "RUST_BACKTRACE": "0"}
"""Variables of the build and of the sandboxes."""
OFFLINE = {"CARGO_NET_OFFLINE": "true"}
"""Variables of the sandboxes only: nothing is downloaded while the tests run."""

_DEP_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")


@dataclass
class RustFacts:
    package: str = ""
    rust_version: str = ""
    """Cargo.toml's ``rust-version``: the oldest rustc the package supports."""
    channel: str = ""
    """rust-toolchain(.toml)'s channel (never installed here)."""
    members: list[str] = field(default_factory=list)
    """The workspace's members (as Cargo.toml names them, globs and all)."""
    dependencies: int = 0
    """Dependencies of every kind and target the top Cargo.toml names (the workspace's shared ones too)."""
    locked: bool = False
    notes: list[str] = field(default_factory=list)



def _count(doc: dict[str, Any]) -> int:
    tables = [doc.get(t) for t in _DEP_TABLES]
    targets = doc.get("target") if isinstance(doc.get("target"), dict) else {}
    tables += [spec.get(t) for spec in targets.values() if isinstance(spec, dict) for t in _DEP_TABLES]
    workspace = doc.get("workspace") if isinstance(doc.get("workspace"), dict) else {}
    tables.append(workspace.get("dependencies"))
    return sum(len(t) for t in tables if isinstance(t, dict))


def facts(texts: dict[str, str], present: set[str]) -> RustFacts:
    """The facts of Cargo.toml and rust-toolchain (read as data: a file that is not valid TOML is a note)."""
    f = RustFacts(locked="Cargo.lock" in present)
    try:
        doc = tomllib.loads(texts.get("Cargo.toml", ""))
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        f.notes.append(f"Cargo.toml is not valid TOML ({str(exc)[:120]}): cargo will say the same")
        doc = {}
    package = doc.get("package") if isinstance(doc.get("package"), dict) else {}
    f.package = str(package.get("name", ""))[:100]
    if isinstance(package.get("rust-version"), str):
        f.rust_version = package["rust-version"][:20]
    workspace = doc.get("workspace") if isinstance(doc.get("workspace"), dict) else {}
    members = workspace.get("members")
    f.members = [str(m)[:200] for m in members[:100]] if isinstance(members, list) else []
    f.dependencies = _count(doc)
    if "rust-toolchain.toml" in texts:
        try:
            tool = tomllib.loads(texts["rust-toolchain.toml"]).get("toolchain")
            f.channel = str(tool.get("channel", ""))[:40] if isinstance(tool, dict) else ""
        except (tomllib.TOMLDecodeError, RecursionError):
            f.notes.append("rust-toolchain.toml is not valid TOML: passed over")
    elif "rust-toolchain" in texts:
        first = texts["rust-toolchain"].strip().splitlines()
        if first and not first[0].startswith("["):
            f.channel = first[0].strip()[:40]
        elif first:
            try:
                tool = tomllib.loads(texts["rust-toolchain"]).get("toolchain")
                f.channel = str(tool.get("channel", ""))[:40] if isinstance(tool, dict) else ""
            except (tomllib.TOMLDecodeError, RecursionError):
                f.notes.append("rust-toolchain is not valid TOML: passed over")
    return f


def plan(f: RustFacts) -> tuple[NativeSpec, list[str], list[str], TestCommand, list[Reason], list[str]]:
    """(the Rust part, the Debian packages, the setup commands, the test command, the reasons, the notes)."""
    reasons = [Reason(field="toolchain", value=f"cargo, rustc (Rust {DEBIAN_RUST})",
                      source="Debian's, in the base: rustup's downloads are not used")]
    notes = list(f.notes)
    if f.rust_version:
        reasons.append(Reason(field="rust-version", value=f.rust_version, source="Cargo.toml's package.rust-version"))
        if vkey(f.rust_version, 3) > vkey(DEBIAN_RUST_RELEASE, 3):
            notes.append(f"Cargo.toml needs rustc {f.rust_version}, newer than Debian's {DEBIAN_RUST}: cargo refuses "
                         "to build it")
    if f.channel:
        reasons.append(Reason(field="channel", value=f.channel, source="rust-toolchain (not installed: Debian's "
                                                                      "rustc builds it)"))
        if f.channel.startswith("nightly") or (f.channel[:1].isdigit() and
                                               vkey(f.channel, 3) > vkey(DEBIAN_RUST_RELEASE, 3)):
            notes.append(f"rust-toolchain asks for {f.channel}; Debian's rustc {DEBIAN_RUST} is what runs here "
                         "(a nightly feature fails to build)")
    if f.members:
        reasons.append(Reason(field="workspace", value=", ".join(f.members)[:100], source="Cargo.toml [workspace]"))
    setup = ["cargo fetch"]
    reasons.append(Reason(field="dependencies", value="cargo fetch",
                          source=f"Cargo.toml names {f.dependencies} dependenc{'y' if f.dependencies == 1 else 'ies'}"
                          + (", pinned by Cargo.lock" if f.locked else "") + ": fetched at build time, the tests "
                          "run with CARGO_NET_OFFLINE"))
    test = TestCommand(kind="command", argv=["cargo", "test", "--workspace", "--no-fail-fast"])
    reasons.append(Reason(field="test_command", value=test.text, source="cargo's own runner, every package"))
    native = NativeSpec(language="rust", package="cargo", offline=dict(OFFLINE),
                        versions="cargo --version; rustc --version")
    return native, ["cargo"], setup, test, reasons, notes
