"""Thin Temporal adapters: each activity reads its input, calls the layers below and returns references.

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``agent``: The agent's activities: thin adapters from Temporal to the agent turn (agents/turn.py), the tools and
  the sandbox of each agent run.
- ``heartbeat``: Heartbeats for long activity steps, so a dead worker is noticed within the heartbeat timeout.
- ``hosts``: Hosts, slots and host loss: the activities a task uses to place its agents by free capacity and to
  notice a lost host (workflows/task.py).
- ``interceptor``: The one activity interceptor every worker installs, the same way (``plugin``, the SDK's worker
  plugin).
- ``models``: Inputs and outputs of bosun's activities and workflows (one pydantic model per activity input).
- ``report``: Status back to where a task came from (GitHub issue/PR, Linear agent session), at the end of a run.
- ``telemetry``: Spans, metrics and error-rate alerts for model calls and tool calls: a layer of the one activity
  interceptor (activities/interceptor.py).
- ``workspace``: The workspace activities: thin adapters from Temporal to the task's repository on this host
  (sandbox/hostrepo.py) and to the test runs in sandboxes.
"""
