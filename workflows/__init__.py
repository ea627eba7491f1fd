"""The Temporal workflows and their contracts: deterministic orchestration only.

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``agent``: AgentWorkflow: one agent run.
- ``conversation``: A pull request's conversation as plain state: what came in, what is waiting, what a round takes,
  and the loop guards.
- ``models``: The workflows' public contract: what TaskWorkflow, AgentWorkflow and PullRequestWorkflow take and
  return.
- ``placement``: Placement by free capacity and host watches, for the workflows that put work on hosts (a task's
  agents, an evaluation's instances).
- ``pull_request``: PullRequestWorkflow: one long-lived workflow per pull request bosun opened, the conversation on
  it.
- ``task``: TaskWorkflow: the coordinator of one task.
"""
