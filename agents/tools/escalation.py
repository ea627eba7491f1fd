"""request_escalation: ask a person to approve running ONE command outside the sandbox.

The AgentWorkflow handles this tool itself (it is never executed as an ordinary tool call): it records the
request, waits for a person's decision (`bosun approve ID REQUEST [--deny]`), and only if approved runs that exact
command on the worker host through ``sandbox.escalation.run_escalated``. A denial, or no decision within the
wait, comes back to the model as an EscalationRefused result.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agents.tools.registry import Tool, ToolContext, ToolOutput
from infra.errors import ToolFailed

NAME = "request_escalation"


class EscalationArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The exact shell command to run outside the sandbox.")
    justification: str = Field(min_length=1, description="Why it cannot run inside the sandbox; a person reads it.")


async def _not_here(ctx: ToolContext, args: EscalationArgs) -> ToolOutput:
    raise ToolFailed("request_escalation is decided by a person through the workflow, not run as a tool")


ESCALATION_TOOL = Tool(NAME, "Ask a person to approve running one command OUTSIDE the sandbox (with network and "
                             "host access). Use only when the task cannot be done inside; most requests are denied.",
                       EscalationArgs, _not_here, read_only=False, key=lambda _args: "*")
