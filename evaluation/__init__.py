"""``bosun eval``: judging SWE-bench-format instances with bosun's environments and agents, a package of its own
above the core (docs/ARCHITECTURE.md, "Layers"): the instances and predictions (``swebench``), the harness's
recipes (``recipes``) and versions (``versions``), which tests run and how (``harness``), what the runners' output
says of each test (``testlogs``), the comparison of runs (``compare``) -- pure logic --; the Temporal activities that
adapt it to sandboxes (``activities``) and the workflows that run it (``workflow``). The core (workflows, activities,
agents, environments, sandbox, infra) imports nothing of it; ``entry`` registers it on workers and serves
``bosun eval``."""
