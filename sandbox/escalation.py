"""Escalation: the one way to run a command outside every sandbox, and only with a person's approval.

``run_escalated(cmd, justification, approver)`` shows the approver the exact command and the reason; anything but
an explicit ``True`` refuses (EscalationRefused), and so does an approver that fails. The approved command runs
once, as given, with a timeout; the decision is logged.
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
                        output_cap: int = 1_000_000) -> ExecResult:
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
    return await asyncio.to_thread(_run, argv, cwd, timeout_s, output_cap)


def _run(argv: list[str], cwd: str | Path | None, timeout_s: float, cap: int) -> ExecResult:
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        import os  # noqa: PLC0415
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
