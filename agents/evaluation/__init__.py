"""Evaluation on SWE-bench-format instances: the instances and predictions, which tests to run and how, what the
test runners' output says about each test, and the per-instance report (compatible with the SWE-bench harness's
``report.json``). Pure logic: workflows/eval.py runs it, activities/eval.py adapts it to sandboxes."""
