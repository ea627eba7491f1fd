"""Escalation: the one way to run a command outside every sandbox, and only with a person's approval.

``run_escalated(cmd, justification, approver)`` shows the approver the exact command and the reason; anything but
an explicit ``True`` refuses (EscalationRefused), and so does an approver that fails. The approved command runs
once, as given, with a timeout; the decision is logged.

What a person approves is the command, not the workspace it runs in (which the model wrote). So even an approved
command runs with none of the worker's environment (no model keys, no tokens: only a plain PATH, HOME and git's
safe defaults: no system or global config, hooks and fsmonitor off), and as ``user`` (the sandbox's uid) when the
worker is root - never as the worker itself unless no other uid is given.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import shlex
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from infra.errors import EscalationRefused
from sandbox.base import ExecResult

log = logging.getLogger("bosun.sandbox.escalation")

Approver = Callable[[list[str] | str, str], bool | Awaitable[bool]]
"""Called with (the exact command, the justification); must return True to approve."""


async def run_escalated(cmd: list[str] | str, justification: str, approver: Approver, *,
                        cwd: str | Path | None = None, timeout_s: float = 300.0,
                        output_cap: int = 1_000_000, user: tuple[int, int] | None = None) -> ExecResult:
    """Run ``cmd`` on the host, unsandboxed, if and only if ``approver`` approves this exact command.

    Raises EscalationRefused when the approver declines, raises, or returns anything but True; when the
    justification is empty; or when the command is empty.
    """
    shown = cmd if isinstance(cmd, str) else shlex.join(cmd)
    if not cmd or (isinstance(cmd, list) and not all(isinstance(a, str) for a in cmd)):
        raise EscalationRefused("refusing to escalate an empty or malformed command")
    if not justification or not justification.strip():
        raise EscalationRefused(f"refusing to escalate {shown!r}: no justification given")
    try:
        decision = approver(cmd, justification)
        if inspect.isawaitable(decision):
            decision = await decision
    except Exception as exc:  # noqa: BLE001 - a failing approver is a refusal
        log.warning("escalation of %r refused: the approver failed (%s)", shown, exc)
        raise EscalationRefused(f"escalation of {shown!r} refused: the approver failed ({exc})") from None
    if decision is not True:
        log.info("escalation of %r refused by the approver", shown)
        raise EscalationRefused(f"escalation of {shown!r} was not approved; it did not run. Find a way to do "
                                f"this inside the sandbox, or ask a person to run it")
    log.warning("running APPROVED unsandboxed command %r (justification: %s)", shown, justification)
    argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    return await asyncio.to_thread(_run, argv, cwd, timeout_s, output_cap, user)


ESCALATED_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/tmp",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "core.hooksPath",
    "GIT_CONFIG_VALUE_0": "/dev/null",
    "GIT_CONFIG_KEY_1": "core.fsmonitor",
    "GIT_CONFIG_VALUE_1": "false",
    "GIT_TERMINAL_PROMPT": "0",
}
"""The whole environment of an escalated command (see the module docstring)."""


def _run(argv: list[str], cwd: str | Path | None, timeout_s: float, cap: int,
         user: tuple[int, int] | None = None) -> ExecResult:
    import os  # noqa: PLC0415

    start = time.monotonic()
    as_user: dict = {}
    if user is not None and os.geteuid() == 0:
        as_user = {"user": user[0], "group": user[1], "extra_groups": []}
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, env=dict(ESCALATED_ENV), **as_user)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        import signal  # noqa: PLC0415

        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        out, err = proc.communicate()

    def clip(data: bytes) -> tuple[str, bool]:
        if len(data) <= cap:
            return data.decode("utf-8", "replace"), False
        return (data[:cap].decode("utf-8", "replace")
                + f"\n[... output truncated: {len(data) - cap} bytes dropped ...]\n"), True

    (so, t1), (se, t2) = clip(out), clip(err)
    return ExecResult(exit_code=None if timed_out else proc.returncode, stdout=so, stderr=se, timed_out=timed_out,
                      truncated=t1 or t2, duration_s=round(time.monotonic() - start, 4))
