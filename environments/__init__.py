"""Environments: what a repository needs to build and run its tests, found from its files, built once per what it
installs, and run in sandboxes (sandbox/envruntime.py).

The parts, the same for every ecosystem:

- the repository's facts: its files at a commit, read as data (``repofiles``: the object store through a scratch
  git directory, never a work tree or the repository's config);
- the plan: detected (``detect``) or declared (``declared``: ``.bosun/environment.toml``, an operator's override,
  a Dockerfile's or devcontainer.json's hints), an ``EnvSpec`` with a reason for each choice (``models``);
- the build, with network, in a build container (``builder``, on a base root filesystem: ``bases``), kept in the
  host's cache (``store``) by a key of what it installs;
- the test command (``testcmd``), run without network in the environment's sandboxes (``runtime``);
- the environment service the CLI and the activities use (``service``).

Python is detected today (``pyconfig``, ``setuppy``, ``imports``, ``interpreters``, ``installer``, ``standins``); a
repository of another ecosystem is said to be undetected, with the declaration that would do (``ecosystems``).
"""
