"""A small classic-BPF seccomp filter for bwrap sandboxes (``bwrap --seccomp FD``), built without libseccomp.

It refuses, with EPERM:
- keyrings (add_key, request_key, keyctl: the worker's session keyring is inherited), bpf, perf_event_open,
  userfaultfd, setns, module loading, kexec, acct, swapon, reboot: nothing a tool needs, all attack surface;
- chmod/fchmod/fchmodat/fchmodat2 when the new mode has the set-user-ID or set-group-ID bit: a process running as
  root inside the sandbox could otherwise leave a setuid-root binary in the workspace for the host to trip over;
- clone/unshare with any namespace flag (new user namespaces would hand capabilities back inside the sandbox);
- clone3 gets ENOSYS so libc falls back to clone, whose flags the filter can inspect (clone3 passes a pointer);
- every syscall of a foreign ABI (i386 on x86_64, x32): their numbers differ, so they could bypass the rules.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

_SUID_SGID = 0o6000
_CLONE_NS_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

# (audit arch, {syscall: (kind, arg index)}) per machine; kind "mode" checks set-id bits, "ns" namespace flags.
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {"chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "clone": 56,
                            "unshare": 272, "clone3": 435, "setns": 308, "add_key": 248, "request_key": 249,
                            "keyctl": 250, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
                            "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
                            "acct": 163, "swapon": 167, "reboot": 169}),
    "aarch64": (0xC00000B7, {"fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "clone": 220, "unshare": 97,
                             "clone3": 435, "setns": 268, "add_key": 217, "request_key": 218, "keyctl": 219,
                             "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104,
                             "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "acct": 89,
                             "swapon": 224, "reboot": 142}),
}
_RULES = {"chmod": ("mode", 1), "fchmod": ("mode", 1), "fchmodat": ("mode", 2), "fchmodat2": ("mode", 2),
          "clone": ("ns", 0), "unshare": ("ns", 0), "clone3": ("enosys", 0)}
"""Syscalls not listed here but in the tables above are refused outright (EPERM)."""


class _Asm:
    """Just enough of an assembler: instructions with forward jumps to named labels."""

    def __init__(self) -> None:
        self.ins: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.ins.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ins)

    def _rel(self, i: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        off = self.labels[target] - i - 1
        if not 0 <= off <= 255:
            raise ValueError(f"seccomp jump to {target} out of range")
        return off

    def assemble(self) -> bytes:
        out = b""
        for i, (code, jt, jf, k) in enumerate(self.ins):
            out += struct.pack("<HBBI", code, self._rel(i, jt), self._rel(i, jf), k & 0xFFFFFFFF)
        return out


def build_filter(machine: str | None = None) -> bytes:
    """The compiled BPF program (struct sock_filter[]) for this machine; ValueError if unsupported."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise ValueError(f"no seccomp filter for machine {machine!r}")
    arch, numbers = _ARCHES[machine]
    eperm = _RET_ERRNO | errno.EPERM
    a = _Asm()
    a.op(_LD_W_ABS, 4)                      # seccomp_data.arch
    a.op(_JEQ_K, arch, 0, "deny")
    a.op(_LD_W_ABS, 0)                      # seccomp_data.nr
    if machine == "x86_64":
        a.op(_JGE_K, 0x40000000, "deny", 0)  # x32 ABI
    for name, nr in numbers.items():
        a.op(_JEQ_K, nr, f"rule_{name}", 0)
    a.op(_RET_K, _RET_ALLOW)
    for name in numbers:
        kind, argi = _RULES.get(name, ("deny", 0))
        a.label(f"rule_{name}")
        if kind == "deny":
            a.op(_RET_K, eperm)
            continue
        if kind == "enosys":
            a.op(_RET_K, _RET_ERRNO | errno.ENOSYS)
            continue
        a.op(_LD_W_ABS, 16 + 8 * argi)      # low 32 bits of args[argi] (little endian)
        a.op(_JSET_K, _SUID_SGID if kind == "mode" else _CLONE_NS_FLAGS, "deny", 0)
        a.op(_RET_K, _RET_ALLOW)
    a.label("deny")
    a.op(_RET_K, eperm)
    return a.assemble()


def docker_profile() -> dict[str, object]:
    """The same rules as a docker seccomp profile (``security_opt=["seccomp=<json>"]``).

    Used for containers that run as root (a root-owned workspace): docker's default profile does not stop root
    from setting set-id bits on files it owns, which would land on the host's workspace. The profile allows by
    default and refuses what a capability-less process could still abuse: set-id chmod, new namespaces, keyrings,
    bpf, perf, userfaultfd, ptrace, cross-process memory access, personality changes.
    """
    eperm = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}
    rules: list[dict[str, object]] = [
        {"names": ["unshare", "setns", "mount", "umount2", "pivot_root", "keyctl", "add_key", "request_key", "bpf",
                   "perf_event_open", "userfaultfd", "ptrace", "process_vm_readv", "process_vm_writev",
                   "personality", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
                   "open_by_handle_at", "name_to_handle_at", "acct", "swapon", "swapoff", "reboot", "syslog",
                   "io_uring_setup", "io_uring_enter", "io_uring_register"], **eperm},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS},
    ]
    for bit in (0o4000, 0o2000):
        for names, index in ((["chmod", "fchmod"], 1), (["fchmodat", "fchmodat2"], 2)):
            rules.append({"names": names, **eperm,
                          "args": [{"index": index, "value": bit, "valueTwo": bit, "op": "SCMP_CMP_MASKED_EQ"}]})
    flag = 0x00020000
    while flag <= 0x40000000:
        if flag & _CLONE_NS_FLAGS:
            rules.append({"names": ["clone"], **eperm,
                          "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}]})
        flag <<= 1
    return {"defaultAction": "SCMP_ACT_ALLOW",
            "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64",
                              "SCMP_ARCH_ARM"],
            "syscalls": rules}


def filter_fd(machine: str | None = None) -> int:
    """A readable fd (memfd, positioned at 0) holding the program, for ``bwrap --seccomp FD``. Caller closes it."""
    program = build_filter(machine)
    fd = os.memfd_create("bosun-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
