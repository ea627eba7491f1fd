"""Configuration of the events subsystem: webhook secrets, API tokens, trigger rules, repository mapping, stream
and consumer tuning.

Secrets, API URLs and the ingress port are bosun :class:`infra.settings.Settings` (``BOSUN_GITHUB_TOKEN`` ...,
see :data:`SHARED`); an EventsConfig carries the Settings it was built with (``cfg.settings``). Where the other
values come from, strongest first:

1. keyword overrides of :func:`load_events_config`;
2. environment variables ``BOSUN_EVENTS_<FIELD>`` (dicts and lists as JSON, e.g.
   ``BOSUN_EVENTS_REPOS='{"acme/api": "/srv/api"}'``);
3. a JSON file named by ``BOSUN_EVENTS_CONFIG`` (an object with the field names as keys; it may also hold the
   shared Settings fields, which the environment then overrides);
4. the defaults below.

``docs/EVENTS.md`` lists every field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from infra.errors import ConfigError
from infra.settings import Settings, load_settings

CONFIG_FILE_ENV = "BOSUN_EVENTS_CONFIG"


class TriggerRules(BaseModel):
    """Which events start (or continue, or stop) a TaskWorkflow."""

    model_config = ConfigDict()  # (its fields' docstrings: infra/fielddocs.py)

    github_label: str = "bosun"
    """An issue (or pull request) that gets this label starts a task."""
    github_mention: str = "@bosun"
    """A comment containing this mention starts a task or reaches the running one as a follow-up."""
    github_associations: list[str] = ["OWNER", "MEMBER", "COLLABORATOR"]
    """author_association values allowed to trigger by mention (people with write access)."""
    github_debug_branch_prefix: str = "bosun/"
    """A failed check_run / workflow_run on a branch with this prefix starts a debugger task."""
    github_failed_conclusions: list[str] = ["failure", "timed_out"]
    """Conclusions that count as failed."""
    linear_label: str = "bosun"
    """A Linear issue that gets this label starts a task."""
    linear_agent_sessions: bool = True
    """Linear AgentSessionEvent: ``created`` starts, ``prompted`` follows up, a stop signal cancels."""
    ignore_bots: bool = True
    """Ignore comments written by bots and comments carrying a bosun marker (no loops on our own comments)."""
    gitlab_label: str = "bosun"
    """A GitLab issue (or merge request) that gets this label starts a task."""
    gitlab_mention: str = "@bosun"
    """A GitLab comment (note) containing this mention starts a task or reaches the running one as a follow-up."""
    gitlab_min_access_level: int = 30
    """The project role a note's author needs for a mention to act (GitLab access levels: 30 Developer, 40
    Maintainer, 50 Owner): people who can push. Checked through the API, so it needs BOSUN_GITLAB_TOKEN."""
    gitlab_debug_branch_prefix: str = "bosun/"
    """A failed pipeline on a branch with this prefix starts a debugger task."""
    gitlab_failed_statuses: list[str] = ["failed"]
    """Pipeline statuses that count as failed."""


SHARED = ("github_webhook_secret", "linear_webhook_secret", "github_token", "linear_api_key", "github_api_url",
          "linear_api_url", "ingress_port", "gitlab_webhook_secret", "gitlab_token", "gitlab_api_url")
"""Settings fields the events subsystem uses (read from ``BOSUN_<FIELD>`` by Settings)."""


def env_name(field: str) -> str:
    return f"BOSUN_{field.upper()}" if field in SHARED else f"BOSUN_EVENTS_{field.upper()}"


class EventsConfig(BaseModel):
    """Everything the ingress and the starter need beyond :class:`Settings`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    settings: Settings = Field(default_factory=load_settings, exclude=True, repr=False)
    """bosun's settings: webhook secrets, API tokens and URLs, the ingress port (see :data:`SHARED`)."""

    # ---------------------------------------------------------------- ingress
    max_body_bytes: int = 25 * 1024 * 1024
    """Largest webhook body accepted (GitHub caps payloads at 25 MB); larger ones get 413."""
    inline_body_max: int | None = None
    """Bodies above this many bytes travel by reference (artifact store). Default: the server's max payload
    minus 16 KiB for headers (1 MiB - 16 KiB with nats-server defaults)."""
    linear_timestamp_tolerance_s: float = 60.0
    """Linear deliveries whose webhookTimestamp is further than this from now are refused (replays)."""
    publish_timeout_s: float = 8.0
    """How long the ingress keeps trying to get JetStream's PubAck before answering 503. GitHub waits 10 s for an
    answer and never retries on its own; on a NATS cluster, the stream elects a new leader 4 to 9 s after its
    leader's node is lost. Linear waits 5 s, then retries (a minute later): the delivery id makes that retry a
    duplicate JetStream drops."""

    # ---------------------------------------------------------------- JetStream
    stream: str = "EVENTS"
    """Stream holding every accepted webhook (subjects events.>)."""
    duplicate_window_s: float = 120.0
    """JetStream drops a second message with the same Nats-Msg-Id inside this window. Later redeliveries are caught
    by the delivery ledger and the workflow id."""
    stream_max_age_s: float = 7 * 24 * 3600.0
    """Events are kept this long (replay, audit)."""
    deadletter_stream: str = "DEADLETTER"
    """Stream holding poison messages (subjects deadletter.>)."""
    deadletter_max_age_s: float = 30 * 24 * 3600.0
    """Poison messages are kept this long in the dead-letter stream (to look at them, or replay them)."""
    consumer: str = "starter"
    """Durable pull consumer of the starter."""
    ack_wait_s: float = 30.0
    """A message not acked within this time is redelivered (e.g. the starter died mid-way)."""
    fetch_batch: int = 32
    """Messages fetched at once; different workflows are handled concurrently, the same one in order."""
    poison_after: int = 5
    """A message that fails in a non-transient way this many deliveries is dead-lettered and terminated."""
    retry_delay_s: float = 2.0
    """First nak delay for transient failures (Temporal unreachable); doubles per delivery."""
    retry_delay_max_s: float = 60.0
    """The longest nak delay for transient failures: the doubling of retry_delay_s stops here."""
    ledger_bucket: str = "bosun-deliveries"
    """JetStream key-value bucket recording handled deliveries (delivery id -> workflow id, run id)."""
    ledger_ttl_s: float = 4 * 24 * 3600.0
    """How long a handled delivery is remembered: longer than GitHub's 3-day manual redelivery window."""
    temporal_timeout_s: float = 10.0
    """Timeout of one Temporal call made by the starter; past it the message is nak'ed and retried."""

    # ---------------------------------------------------------------- what a started task looks like
    repos: dict[str, str] = {}
    """GitHub ``owner/repo`` -> local path or clone URL of the repository the task works on."""
    gitlab_repos: dict[str, str] = {}
    """GitLab project path (``group/subgroup/project``, as ``path_with_namespace``) -> local path or clone URL."""
    linear_repos: dict[str, str] = {}
    """Linear team key (the ``ENG`` of ``ENG-123``) -> a key of ``repos``, a path, or a clone URL."""
    linear_default_repo: str | None = None
    """Repository for Linear issues whose team has no entry in ``linear_repos``."""
    model: str | None = None
    """Model spec of event-started tasks. Default: Settings.default_model."""
    max_turns: int | None = None
    """Turn budget of event-started tasks. Default: Settings.max_turns."""
    task_defaults: dict[str, Any] = {}
    """Further TaskInput fields for event-started tasks, e.g. ``{"mode": "solo", "max_parallel": 2}``."""
    id_reuse_policy: Literal["allow_duplicate", "allow_duplicate_failed_only", "reject_duplicate"] = "allow_duplicate"
    """What a NEW trigger does to a business key whose workflow already finished: start a new run (default),
    only after a failure, or never. Redeliveries of an old delivery never start anything (delivery ledger)."""
    triggers: TriggerRules = TriggerRules()
    """Which events start, continue or stop a task: a JSON object with any of the fields of TriggerRules
    (``BOSUN_EVENTS_TRIGGERS='{"github_label": "ai"}'``; the others keep their defaults)."""

    # ---------------------------------------------------------------- a pull request's conversation
    review_quiet_s: float = Field(30.0, ge=0)
    """After the last review, comment or check of a pull request bosun opened, wait this long before a round: a
    review's comments arrive one by one, and loose comments are handled together."""
    max_ci_rounds: int = Field(3, ge=0)
    """Rounds started by failed checks, per pull request (never two for one head commit, none after a person's
    push, none for bosun's own CI fix failing)."""
    max_review_rounds: int = Field(10, ge=0)
    """Rounds in all, per pull request."""

    # ---------------------------------------------------------------- status back
    post_status: bool = True
    """The starter acknowledges a start right away (GitHub comment + bosun:working label; Linear thought)
    when the token for that service is set."""
    run_url_template: str | None = None
    """Link to a run, with {workflow_id} (URL-encoded) and {namespace}. Default: the embedded Temporal Web UI."""

    def secret(self, name: Literal["github_webhook_secret", "linear_webhook_secret", "github_token",
                                   "linear_api_key", "gitlab_webhook_secret", "gitlab_token"]) -> str | None:
        value = getattr(self.settings, name)
        return value.get_secret_value() or None if value is not None else None


def _file_values() -> dict[str, Any]:
    path = os.environ.get(CONFIG_FILE_ENV)
    if not path:
        return {}
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{CONFIG_FILE_ENV}={path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{CONFIG_FILE_ENV}={path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{CONFIG_FILE_ENV}={path} must hold a JSON object (field name -> value)")
    known = [*_own_fields(), *SHARED]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{CONFIG_FILE_ENV}={path}: unknown field(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return data


def _env_values() -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, field in _own_fields().items():
        raw = os.environ.get(env_name(name))
        if raw is None:
            continue
        ann = field.annotation
        if get_origin(ann) in (dict, list) or (isinstance(ann, type) and issubclass(ann, BaseModel)):
            try:
                values[name] = json.loads(raw)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{env_name(name)} must be JSON ({e}); e.g. "
                                  f"{env_name(name)}='{{\"acme/api\": \"/srv/api\"}}'") from None
        else:
            values[name] = raw
    return values


def _own_fields() -> dict[str, Any]:
    return {k: f for k, f in EventsConfig.model_fields.items() if k != "settings"}


def _with_shared(settings: Settings, values: dict[str, Any], where: str) -> Settings:
    """``settings`` with some SHARED fields replaced (validated like Settings validates them)."""
    if not values:
        return settings
    update = {}
    for name, raw in values.items():
        try:
            update[name] = TypeAdapter(Settings.model_fields[name].annotation).validate_python(raw)
        except ValidationError as e:
            raise ConfigError(f"{name}={raw!r} is invalid: {e.errors()[0]['msg']} ({where})") from None
    return settings.model_copy(update=update)


def load_events_config(settings: Settings | None = None, **overrides: Any) -> EventsConfig:
    """Build the EventsConfig (see the module docstring for precedence). ``overrides`` win over everything and may
    name SHARED Settings fields too (e.g. ``github_token=...``).

    A bad value raises ConfigError naming the variable, the value and what is expected.
    """
    settings = settings if settings is not None else load_settings()
    merged: dict[str, Any] = dict(_file_values())
    from_file = {k: merged.pop(k) for k in SHARED if k in merged}
    # a value set in the environment or by the caller beats the file's
    settings = _with_shared(settings, {k: v for k, v in from_file.items() if k not in settings.model_fields_set},
                            f"the file named by {CONFIG_FILE_ENV}")
    settings = _with_shared(settings, {k: overrides.pop(k) for k in SHARED if k in overrides}, "load_events_config")
    merged.update(_env_values())
    merged.update(overrides)
    try:
        return EventsConfig.model_validate({**merged, "settings": settings})
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(p) for p in err["loc"]]
        field = ".".join(loc) or "a field"
        where = env_name(loc[0]) if loc else "the environment"
        raise ConfigError(f"events config: {field}={err.get('input')!r} is invalid: {err['msg']} "
                          f"(set by {where} or the file named by {CONFIG_FILE_ENV})") from None


def run_url(settings: Settings, cfg: EventsConfig, workflow_id: str) -> str:
    """A link to the run in the Temporal Web UI (or wherever run_url_template points)."""
    from urllib.parse import quote

    wid = quote(workflow_id, safe="")
    if cfg.run_url_template:
        return cfg.run_url_template.format(workflow_id=wid, namespace=settings.temporal_namespace)
    return f"http://{settings.host}:{settings.temporal_ui_port}/namespaces/{settings.temporal_namespace}/workflows/{wid}"
