"""The edit engine's evaluation: ``corpus`` builds cases from real changes, ``baselines`` are the appliers bosun is
compared with, ``eval`` scores a corpus (``bosun eval edits --cases CASES.jsonl``)."""
