"""Benchmarks (scripts printing JSON: ``python bench/<name>.py``) and evaluation corpora.

``bench.editcases`` is the edit engine's evaluation: the real-change corpus generator, the baselines bosun is
compared with, and the scoring behind ``bosun eval edits``.
"""
