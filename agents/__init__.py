"""The agents: the turn, providers, router, roles, context, tools, edits and search. Pure logic where it can be:
nothing here runs a Temporal worker.

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``budget``: Budgets: how much an agent (or a whole task) may spend in tokens, turns, wall-clock time and money.
- ``context.compaction``: Compaction: when a transcript passes a share of the model's window, old tool outputs
  become summaries.
- ``context.static``: Static context: the facts an agent gets up front, built from values the caller gathered (no
  I/O here).
- ``harness_settings``: Harness settings: the knobs of bosun's agent loop that a task may set for itself.
- ``messages``: The provider-neutral conversation types every provider translates to and from.
- ``plan``: The planner's output: a typed Plan of subtasks with file scopes, dependencies and acceptance checks.
- ``providers``: Model specs and provider construction.
- ``providers.base``: The provider interface: one model call, provider-neutral messages in, a ModelResponse out.
- ``providers.scripted``: The scripted model: THE TEST DOUBLE.
- ``roles``: Agent roles as data: ``agents/roles/<name>.toml`` names a prompt, a tool set, a budget and an output.
- ``router``: Model routing: which model runs a role, and what to fall back to when its provider keeps failing.
- ``search.index``: A repository index: code files, their symbols, BM25 over files and symbol chunks, name tables.
- ``search.ranker``: File ranking for a task: BM25 (files and symbol chunks) fused with signals from the task text.
- ``search.repomap``: Repo map: files ranked by personalised PageRank over the identifier reference graph.
- ``tools.builtin``: The built-in tools and the tool sets per model family.
- ``tools.commands``: Command tools, all run inside the sandbox: run_command, run_tests, check, git_status,
  git_diff.
- ``tools.escalation``: request_escalation: ask a person to approve running ONE command outside the sandbox.
- ``tools.once``: Tool calls with one effect each, however often their activity runs.
- ``tools.registry``: The tool registry: each tool declares pydantic argument and result models, whether it only
  reads, and how it runs.
- ``tools.scheduling``: Which tool calls of one model turn may run at the same time (pure; used by the workflow).
- ``tools.subagents``: spawn_subagents: an agent starts 1-N child agents with their own context, in parallel, and
  gets their results back as this tool's result.
- ``turn``: One agent turn, as pure functions: what a model call sends, and what its answer means.
"""
