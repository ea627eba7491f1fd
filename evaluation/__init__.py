"""``bosun eval``: judging SWE-bench-format instances with bosun's environments and agents, a package of its own
above the core (docs/ARCHITECTURE.md, "Layers"): the instances and predictions (``swebench``), the harness's
recipes (``recipes``) and versions (``versions``), which tests run and how (``harness``), what the runners' output
says of each test (``testlogs``), the comparison of runs (``compare``) -- pure logic --; the Temporal activities that
adapt it to sandboxes (``activities``) and the workflows that run it (``workflow``). The core (workflows, activities,
agents, environments, sandbox, infra) imports nothing of it; ``entry`` registers it on workers and serves
``bosun eval``.

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``activities``: Evaluation activities: thin adapters from the evaluation workflows to the task repository,
  environments and sandboxes.
- ``compare``: A/B comparison of variants on the same instances: paired, because the instances differ far more than
  the variants do.
- ``recipes``: What the SWE-bench reference harness does for each repository and version (pure data).
- ``swebench``: SWE-bench-format instances and predictions, and the per-instance report.
- ``workflow``: Evaluation workflows: SWE-bench-format instances judged as the reference harness does.
"""
