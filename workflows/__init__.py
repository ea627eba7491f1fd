"""The Temporal workflows and their contracts: deterministic orchestration only.

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``agent``: AgentWorkflow: one agent run.
- ``models``: The workflows' public contract: what TaskWorkflow and AgentWorkflow take and return.
- ``placement``: Placement by free capacity and host watches, for the workflows that put work on hosts (a task's
  agents, an evaluation's instances).
- ``task``: TaskWorkflow: the coordinator of one task.
"""
