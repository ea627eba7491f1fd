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

Python is detected today (``pyconfig``, ``pyci``, ``setuppy``, ``imports``, ``interpreters``, ``standins``) and
installed (``installer``, over ``installplan``, ``installcmds`` and ``installfixes``); a repository of another
ecosystem is said to be undetected, with the declaration that would do (``ecosystems``).

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``buildrun``: One build's run in its build container: its steps, their capped log, its deadline, BuildFailed.
- ``declared``: Declared environments: ``.bosun/environment.toml`` in the repository, an operator's override file
  for repositories you do not control (``BOSUN_ENV_OVERRIDES``).
- ``ecosystems``: Which ecosystems a repository's files show, and what to say when bosun cannot detect its
  environment (pure).
- ``interpreters``: The interpreters environments can have, and the choice among them (pure).
- ``models``: The typed vocabulary of environments: what was detected or declared (``EnvSpec`` and the reasons
  behind it), and what was built (``EnvRecord``).
- ``pyci``: What a Python project's CI workflows, conda environment files and noxfile say (pure).
- ``pyconfig``: Readers of a Python project's configuration files (pure: text in, facts out).
- ``pydetect``: Detection of a Python project's environment: the half of ``detect`` (environments/detect.py) that
  reads what describes a Python project (pyproject.toml, setup.cfg.
- ``repofiles``: A repository's files at one commit, read as data for detection (docs/THREAT-MODEL.md: "environment
  detection").
- ``results``: Reading a test run's results, for every runner an environment's test command calls.
- ``runtime``: A built environment as its sandboxes run it: ``run_of`` turns a build's record into the
  ``EnvironmentRun`` that sandbox/envruntime.py runs (PATH starting with the.
- ``service``: Environments on this host, end to end: detect -> key -> cached record, or build (base, container
  steps, image, export) -> record.
- ``standins``: Local stand-ins for public test services that a project's tests reach by name (pure: shell text and
  a scan).
- ``store``: The environment cache on this host (``BOSUN_ENV_CACHE``):: bases/<name>/rootfs/ a base root filesystem
  (debootstrap).
"""
