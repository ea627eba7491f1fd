"""The ground floor: settings, errors, artifacts, telemetry, the engines' and the trackers' clients. It imports no
other top-level folder.

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``alerts``: Error-rate alerts per (tool, model, error class), against a rolling baseline.
- ``artifacts``: Content-addressed artifact store: transcripts, file contents and tool outputs live here, history
  keeps refs.
- ``cliargs``: Command-line parsing: the pages every command's ``--help`` shows, and parsers that suggest the choice
  a typo meant.
- ``errors``: bosun's error classes.
- ``events``: The events vocabulary, shared by the ingress, the starter and status back.
- ``events.config``: Configuration of the events subsystem: webhook secrets, API tokens, trigger rules, repository
  mapping, stream and consumer tuning.
- ``events.conversation``: The pull request as a conversation: what one event on a pull request bosun opened means
  to its long-lived workflow.
- ``events.gateway``: Temporal operations of the starter: start, signal-with-start (follow-ups), cancel.
- ``events.github_api``: GitHub REST (over httpx) for reporting status back: comments, state labels, pull requests,
  and pushing branches.
- ``events.gitlab_api``: GitLab REST v4 (over httpx) for status back: notes, replies in threads, state labels, merge
  requests, award emoji, and the access level a trigger's author has.
- ``events.linear_api``: Linear GraphQL (over httpx) for reporting to an agent session: activities and the session's
  external link.
- ``events.triggers``: Trigger rules: from one webhook event to a decision (start a task, follow up, cancel, or
  ignore).
- ``events.verify``: Checks on an incoming webhook before anything is published: signature, headers, timestamp,
  body.
- ``export``: Trajectory export: everything a run did, in a documented, versioned schema (docs/TRAJECTORY.md).
- ``fielddocs``: The docstrings written under a model's fields, read from the class's source when asked.
- ``history``: Read a run's steps back from Temporal: model turns, tool calls with arguments and short results,
  durations.
- ``hosts``: The worker hosts of a cluster and their heartbeats, in a JetStream key-value bucket (``bosun-hosts``).
- ``names``: File names as bosun carries them: one reversible text form for any name's bytes.
- ``objectstore``: The artifact store every host shares: a JetStream Object Store (``BOSUN_ARTIFACT_STORE=nats``),
  content-addressed as the file store is, with a bounded local read cache.
- ``privatestack``: The settings of a private stack: one that never collides with another stack on the same machine.
- ``runview``: What the web view shows of a run, as plain values.
- ``safetext``: Text from models and repositories, made safe to print: no terminal control sequences, no bidi
  overrides.
- ``settings``: All of bosun's settings in one model.
- ``spanfile``: The offline span store's files: where, whether telemetry is on, and appending span records, without
  OpenTelemetry.
- ``spanstore``: Spans every host shares (``BOSUN_ARTIFACT_STORE=nats``): a JetStream stream, so ``bosun trace`` and
  the web view on any host, or on a machine with an empty data dir.
- ``telemetry``: OpenTelemetry for every bosun process: traces and metrics, exported where users already look.
- ``temporal``: Temporal wiring: the client bosun uses everywhere (pydantic payloads, tracing, TLS, API key).
- ``temporal_http``: Starting a workflow through Temporal's HTTP API, without loading Temporal's SDK (``bosun run``).
- ``traceview``: A task's spans as a tree for the terminal (``bosun trace ID``), from the offline span store.
"""
