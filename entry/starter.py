"""The starter: a durable JetStream pull consumer (explicit ack) that turns events into TaskWorkflow starts,
follow-up signals and cancellations.

For each message:

1. read the envelope (headers) and the body (inline, or from the artifact store by ``Bosun-Body-Ref``);
   unreadable -> dead-letter + ``term()`` at once;
2. apply the trigger rules (``triggers.decide``); an event no rule wants is acked; a known event with an
   unexpected shape is nak'ed and dead-lettered once it failed ``poison_after`` deliveries;
3. a delivery already in the ledger is acked (a late redelivery); on a redelivery (the starter may have died after
   Temporal accepted but before the ack) the latest run's memo is checked for this delivery too;
4. start (USE_EXISTING), signal-with-start (``follow_up``) or cancel, with the request id derived from the delivery;
   Temporal unreachable -> ``nak(delay)`` with exponential backoff, never dead-lettered;
5. acknowledge on GitHub/Linear (best effort, idempotent), write the ledger, ack.

Messages of the same workflow are handled in order; different workflows concurrently.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from agents.providers import parse_spec
from agents.providers.scripted import load_trajectory
from entry.health import STARTER_FILE
from infra.artifacts import ArtifactMissing, write_json_atomically
from infra.errors import ConfigError
from infra.events import bus, tracing
from infra.events.config import EventsConfig, load_events_config, run_url
from infra.events.conversation import CONVERSATION_SIGNAL, CONVERSATION_WORKFLOW, conversation_id
from infra.events.gateway import TransientError, WorkflowGateway
from infra.events.github_api import ExternalServiceError, GitHubClient
from infra.events.gitlab_api import GitLabClient
from infra.events.linear_api import LinearClient
from infra.events.triggers import Decision, UnknownShape, bosun_head, decide
from infra.objectstore import open_store
from infra.settings import Settings
from infra.temporal import connect
from workflows.conversation import Limits
from workflows.models import ConversationInput, checked_task

log = logging.getLogger("bosun.events.starter")

OUTCOMES_KEPT = 10_000


class Poison(Exception):
    """A message that can never be handled (no source header, body not JSON, ...): dead-lettered at once."""


@dataclass
class Envelope:
    subject: str
    source: str
    event: str
    delivery: str
    headers: dict[str, str]
    payload: dict[str, Any]
    deliveries: int

    @property
    def dedupe_key(self) -> str:
        return f"{self.source}:{self.delivery}"


@dataclass
class Stats:
    started: int = 0
    signalled: int = 0
    cancelled: int = 0
    existing: int = 0
    ignored: int = 0
    duplicates: int = 0
    retried: int = 0
    deadlettered: int = 0
    outcomes: dict[str, str] = field(default_factory=dict)
    """Last outcome per delivery (dedupe key) of the latest OUTCOMES_KEPT deliveries, for tests and debugging."""

    def note(self, key: str, outcome: str) -> None:
        self.outcomes.pop(key, None)
        self.outcomes[key] = outcome
        while len(self.outcomes) > OUTCOMES_KEPT:
            del self.outcomes[next(iter(self.outcomes))]


class Starter:
    """Run with ``await Starter(settings).run(stop)``; ``handle`` processes one message (used by tests too)."""

    def __init__(self, settings: Settings, cfg: EventsConfig | None = None, *,
                 gateway: WorkflowGateway | None = None) -> None:
        self.settings = settings
        self.cfg = cfg or load_events_config(settings)
        self.gateway = gateway
        self.store = open_store(settings)
        self.nc: NATS | None = None
        self.js: JetStreamContext | None = None
        self.ledger: bus.Ledger | None = None
        self.stats = Stats()
        self.ready = asyncio.Event()
        self.model = self.cfg.model or settings.default_model
        self.max_turns = self.cfg.max_turns or settings.max_turns

    # ---------------------------------------------------------------- setup

    def check_config(self) -> None:
        """Refuse to run with a configuration that would fail every start (rather than dead-letter every event)."""
        if not self.model:
            raise ConfigError("no model for event-started tasks: set BOSUN_EVENTS_MODEL or BOSUN_DEFAULT_MODEL")

        spec = parse_spec(self.model)
        if spec.kind == "scripted":
            load_trajectory(spec.model)
        self._task_input(repo="/", task="check", trajectory_ref=None, ref="HEAD")

    def _task_input(self, **fields: Any) -> Any:
        """TaskInput for a start: the decision's fields, the model, and EventsConfig.task_defaults."""
        return checked_task({"model": self.model, "max_turns": self.max_turns, **self.cfg.task_defaults, **fields},
                            f"BOSUN_EVENTS_TASK_DEFAULTS={json.dumps(self.cfg.task_defaults)}")

    async def _setup(self, stop: asyncio.Event) -> bool:
        self.nc = await bus.connect_nats_retrying(self.settings, name="bosun-starter", stop=stop)
        if self.nc is None:
            return False
        self.js = self.nc.jetstream()
        delay = 0.2
        while not stop.is_set():
            try:
                await bus.ensure_events_stream(self.js, self.cfg)
                await bus.ensure_deadletter_stream(self.js, self.cfg)
                self.ledger = await bus.Ledger.open(self.js, self.cfg)
                self.sub = await self.js.pull_subscribe(
                    f"{bus.SUBJECT_ROOT}.>", durable=self.cfg.consumer, stream=self.cfg.stream,
                    config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                                          ack_wait=self.cfg.ack_wait_s, max_deliver=-1,
                                          max_ack_pending=max(self.cfg.fetch_batch * 4, 256),
                                          description="bosun starter (see docs/EVENTS.md)"))
                break
            except ConfigError:  # the server cannot do what the settings ask (replicas without a cluster)
                raise
            except Exception as e:  # noqa: BLE001 - JetStream not ready: retry
                log.warning("cannot set up JetStream (%s); retrying in %.1fs", e, delay)
                await _sleep(stop, delay)
                delay = min(delay * 2, 5.0)
        if stop.is_set():
            return False
        while self.gateway is None and not stop.is_set():
            try:
                client = await connect(self.settings, timeout_s=5)
                self.gateway = WorkflowGateway(client, task_queue=self.settings.task_queue,
                                               timeout_s=self.cfg.temporal_timeout_s,
                                               reuse_policy=self.cfg.id_reuse_policy)
            except ConfigError as e:
                log.warning("%s; retrying in %.1fs", e, delay)
                await _sleep(stop, delay)
                delay = min(delay * 2, 5.0)
        return not stop.is_set()

    # ---------------------------------------------------------------- main loop

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Consume until ``stop`` is set. In-flight messages finish; unacked ones are redelivered later."""
        stop = stop or asyncio.Event()
        self.check_config()
        health = asyncio.create_task(self._health_loop(stop), name="starter-health")
        try:
            if not await self._setup(stop):
                return
            self.ready.set()
            log.info("starter consuming %s.> as durable %r (task queue %s)", bus.SUBJECT_ROOT, self.cfg.consumer,
                     self.settings.task_queue)
            while not stop.is_set():
                try:
                    msgs = await self.sub.fetch(self.cfg.fetch_batch, timeout=1.0)
                except nats.errors.TimeoutError:
                    continue
                except Exception as e:  # noqa: BLE001 - connection lost, reconnecting: keep polling
                    log.debug("fetch failed (%s: %s); retrying", type(e).__name__, e)
                    await _sleep(stop, 0.5)
                    continue
                await self.handle_batch(msgs)
        finally:
            health.cancel()
            with contextlib.suppress(BaseException):
                await health
            if self.nc is not None and not self.nc.is_closed:
                with contextlib.suppress(Exception):
                    await self.nc.close()

    async def handle_batch(self, msgs: list[Msg]) -> None:
        """Handle a fetched batch: same workflow id in order, different ones concurrently."""
        groups: dict[str, list[tuple[Msg, Envelope | Exception, Decision | Exception | None]]] = {}
        for msg in msgs:
            env, decision = self._prepare(msg)
            key = decision.workflow_id if isinstance(decision, Decision) and decision.workflow_id else id(msg)
            groups.setdefault(str(key), []).append((msg, env, decision))

        async def run_group(items: list[tuple[Msg, Envelope | Exception, Decision | Exception | None]]) -> None:
            for msg, env, decision in items:
                try:
                    await self._execute(msg, env, decision)
                except Exception:  # noqa: BLE001 - never let one message stop the loop; it will be redelivered
                    log.exception("unexpected error handling message on %s", msg.subject)

        await asyncio.gather(*(run_group(g) for g in groups.values()))

    async def handle(self, msg: Msg) -> str:
        """Handle one message; returns the outcome (``started``, ``signalled``, ``ignored``, ``retry``, ...)."""
        env, decision = self._prepare(msg)
        return await self._execute(msg, env, decision)

    # ---------------------------------------------------------------- stages

    def _prepare(self, msg: Msg) -> tuple[Envelope | Exception, Decision | Exception | None]:
        try:
            env = self._envelope(msg)
        except Exception as e:  # noqa: BLE001 - Poison or a missing artifact: decided in _execute
            return e, None
        try:
            return env, decide(env.source, env.event, env.payload, self.cfg)
        except Exception as e:  # noqa: BLE001 - UnknownShape, or a bug in a rule
            return env, e

    def _envelope(self, msg: Msg) -> Envelope:
        h = dict(msg.headers or {})
        source, event = h.get(bus.H_SOURCE), h.get(bus.H_EVENT)
        delivery = h.get(bus.H_DELIVERY) or h.get(bus.H_MSG_ID)
        if not source or not event or not delivery:
            parts = msg.subject.split(".")
            if len(parts) == 3 and parts[0] == bus.SUBJECT_ROOT and delivery:
                source, event = source or parts[1], event or parts[2]
            else:
                raise Poison(f"message on {msg.subject} lacks the {bus.H_SOURCE}/{bus.H_EVENT}/{bus.H_DELIVERY} "
                             "headers (not published by the bosun ingress)")
        body = msg.data
        ref = h.get(bus.H_BODY_REF)
        if ref:
            body = self.store.get_bytes(ref)  # ArtifactMissing: counted failure (the store may be catching up)
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise Poison(f"body is not JSON: {e}") from None
        if not isinstance(payload, dict):
            raise Poison(f"body is JSON {type(payload).__name__}, not an object")
        return Envelope(msg.subject, source, event, delivery, h, payload, msg.metadata.num_delivered or 1)

    async def _execute(self, msg: Msg, env: Envelope | Exception, decision: Decision | Exception | None) -> str:
        deliveries = msg.metadata.num_delivered or 1
        if isinstance(env, Poison):
            return await self._deadletter(msg, str(env), deliveries)
        if isinstance(env, Exception) or isinstance(decision, Exception):
            err = env if isinstance(env, Exception) else decision
            kind = "unknown shape" if isinstance(err, UnknownShape | ArtifactMissing) else type(err).__name__
            reason = f"{kind}: {err}"
            if deliveries >= self.cfg.poison_after:
                return await self._deadletter(msg, reason, deliveries)
            log.warning("message on %s failed (%s), delivery %d of %d before dead-lettering", msg.subject, reason,
                        deliveries, self.cfg.poison_after)
            return await self._retry(msg, deliveries, None)
        assert isinstance(env, Envelope) and isinstance(decision, Decision)
        if decision.kind == "ignore":
            self.stats.ignored += 1
            log.info("%s %s %s ignored: %s", env.source, env.event, env.delivery, decision.reason)
            return await self._ack(msg, env, "ignored")
        try:
            return await self._act(msg, env, decision)
        except TransientError as e:
            log.warning("%s %s %s: %s; retrying later", env.source, env.event, env.delivery, e)
            return await self._retry(msg, deliveries, env)
        except (nats.errors.Error, OSError) as e:  # ledger unreachable (NATS reconnecting)
            log.warning("%s %s %s: NATS error %s; retrying later", env.source, env.event, env.delivery, e)
            return await self._retry(msg, deliveries, env)
        except Exception as e:  # noqa: BLE001 - a bad request or a bug: counted, then dead-lettered
            if deliveries >= self.cfg.poison_after:
                return await self._deadletter(msg, f"{type(e).__name__}: {e}", deliveries)
            log.exception("%s %s %s failed (delivery %d of %d before dead-lettering)", env.source, env.event,
                          env.delivery, deliveries, self.cfg.poison_after)
            return await self._retry(msg, deliveries, env)

    async def _act(self, msg: Msg, env: Envelope, d: Decision) -> str:
        assert self.ledger is not None and self.gateway is not None and d.workflow_id
        seen = await self.ledger.get(env.source, env.delivery)
        if seen is not None:
            self.stats.duplicates += 1
            log.info("%s delivery %s was handled before (%s %s); acking", env.source, env.delivery, seen.action,
                     seen.workflow_id)
            return await self._ack(msg, env, "duplicate")
        if d.kind in ("start", "follow_up") and env.deliveries > 1:
            memo = await self.gateway.latest_memo(d.workflow_id)
            if memo and memo.get("delivery") == env.dedupe_key:
                await self.ledger.put(env.source, env.delivery, bus.LedgerEntry(d.workflow_id, None, "started"))
                self.stats.duplicates += 1
                return await self._ack(msg, env, "duplicate")

        if d.kind == "cancel":
            cancelled = await self.gateway.cancel(d.workflow_id)
            outcome = "cancelled" if cancelled else "nothing-to-cancel"
            self.stats.cancelled += cancelled
            log.info("%s %s: cancel %s -> %s", env.source, env.delivery, d.workflow_id, outcome)
            await self._report(env, d, outcome)
            await self.ledger.put(env.source, env.delivery, bus.LedgerEntry(d.workflow_id, None, outcome))
            return await self._ack(msg, env, outcome)

        if d.author_id is not None:
            refused = await self._gitlab_access(d)
            if refused:
                self.stats.ignored += 1
                log.info("%s %s %s ignored: %s", env.source, env.event, env.delivery, refused)
                await self.ledger.put(env.source, env.delivery, bus.LedgerEntry(d.workflow_id, None, "ignored"))
                return await self._ack(msg, env, "ignored")
        d = await self._pull_request_head(d)
        with tracing.span(f"start {d.workflow_id}", env.headers, **{"bosun.workflow_id": d.workflow_id}) as carrier:
            task_input = self._task_input(repo=d.repo or "", task=d.task or "", ref=d.ref,
                                          trajectory_ref=await self._trajectory_ref())
            kind: dict[str, Any] = {}
            if d.kind == "converse":  # the pull request's long-lived workflow; one that ended (the pull request was
                # closed) is not started again, one that failed is
                assert d.event is not None and d.origin is not None and d.origin.number is not None
                task_input = ConversationInput(
                    repo_name=d.origin.repo or "", number=d.origin.number, title=d.summary, url=d.origin.url,
                    source="gitlab" if d.origin.source == "gitlab" else "github", project_id=d.origin.project_id,
                    head_branch=d.origin.head_branch, base_branch=d.origin.base_branch, task=task_input,
                    limits=Limits(quiet_s=self.cfg.review_quiet_s, max_ci_rounds=self.cfg.max_ci_rounds,
                                  max_rounds=self.cfg.max_review_rounds))
                kind = {"workflow_type": CONVERSATION_WORKFLOW, "signal": CONVERSATION_SIGNAL,
                        "follow_up": d.event, "reuse_policy": "allow_duplicate_failed_only"}
            memo: dict[str, Any] = {"delivery": env.dedupe_key, "event": f"{env.source}.{env.event}",
                                    "trigger": d.reason, "traceparent": carrier.get("traceparent", "")}
            if d.origin is not None:
                memo["origin"] = d.origin.model_dump(exclude_none=True, exclude_defaults=True)
            result = await self.gateway.start(
                workflow_id=d.workflow_id, task_input=task_input, dedupe_key=env.dedupe_key, memo=memo,
                trace_carrier=carrier, summary=d.summary,
                **(kind or {"follow_up": d.follow_up if d.kind == "follow_up" else None}))
        if result.closed:
            outcome = "closed"
            log.info("%s %s: %s finished and the reuse policy (%s) forbids a new run", env.source, env.delivery,
                     d.workflow_id, self.cfg.id_reuse_policy)
        elif result.started:
            outcome = "started"
            self.stats.started += 1
        elif d.kind in ("follow_up", "converse"):
            outcome = "signalled"
            self.stats.signalled += 1
        else:
            outcome = "existing"
            self.stats.existing += 1
        log.info("%s %s %s -> %s %s (run %s, trace %s)", env.source, env.event, env.delivery, outcome, d.workflow_id,
                 result.run_id, tracing.trace_id(carrier.get("traceparent")))
        await self._report(env, d, outcome)
        await self.ledger.put(env.source, env.delivery, bus.LedgerEntry(d.workflow_id, result.run_id, outcome))
        return await self._ack(msg, env, outcome)

    async def _pull_request_head(self, d: Decision) -> Decision:
        """A task a pull request comment starts works on the pull request's head (looked up through GitHub's API).

        A refusal (no such pull request, no access) keeps the default branch and says so in the log; a transient
        failure (5xx, rate limit, network) retries the message later."""

        if d.pull_request is None or d.origin is None or not d.origin.repo or d.ref != "HEAD":
            return d
        try:
            async with GitHubClient.from_config(self.cfg) as gh:
                pr = await gh.get_pull_request(d.origin.repo, d.pull_request)
            sha, branch = pr["head"]["sha"], pr["head"]["ref"]
            head_repo = (pr["head"].get("repo") or {}).get("full_name")
            base = pr.get("base", {}).get("ref")
        except ExternalServiceError as e:
            if e.retryable:
                raise TransientError(f"looking up pull request {d.origin.repo}#{d.pull_request}: {e}") from None
            log.warning("pull request %s#%s: %s; the task starts from the default branch", d.origin.repo,
                        d.pull_request, e)
            return d
        except (KeyError, TypeError, ValueError) as e:
            log.warning("pull request %s#%s: unexpected answer (%s); the task starts from the default branch",
                        d.origin.repo, d.pull_request, e)
            return d
        origin = d.origin.model_copy(update={"head_branch": branch, "base_branch": base})
        if d.event is not None and d.kind in ("follow_up", "converse") and \
                bosun_head(branch, head_repo if isinstance(head_repo, str) else None, d.origin.repo, self.cfg):
            return d.model_copy(update={"kind": "converse", "ref": sha, "origin": origin, "follow_up": None,
                                        "workflow_id": conversation_id(d.origin.repo, d.pull_request),
                                        "event": d.event.model_copy(update={"head_branch": branch,
                                                                            "base_branch": base})})
        task = f"{d.task or ''}\n\nWork on the pull request's branch {branch} (head {sha[:12]})."
        return d.model_copy(update={"ref": sha, "task": task, "origin": origin, "event": None})

    async def _gitlab_access(self, d: Decision) -> str | None:
        """Why a GitLab note's author may not trigger (None: they may): a note carries no role, so their access
        level to the project is asked (BOSUN_GITLAB_TOKEN). A transient failure retries the message later."""
        need = self.cfg.triggers.gitlab_min_access_level
        if not self.cfg.secret("gitlab_token"):
            return ("a GitLab mention needs BOSUN_GITLAB_TOKEN to check the author's access level "
                    f"(at least {need}); none is set")
        assert d.origin is not None and d.author_id is not None
        try:
            async with GitLabClient.from_config(self.cfg) as gl:
                level = await gl.access_level(d.origin.project_id or d.origin.repo or "", d.author_id)
        except ExternalServiceError as e:
            if e.retryable:
                raise TransientError(f"looking up user {d.author_id}'s access to {d.origin.repo}: {e}") from None
            return f"the access level of user {d.author_id} to {d.origin.repo} could not be read: {e}"
        if level < need:
            return f"user {d.author_id} has access level {level} to {d.origin.repo}, below {need}"
        return None

    async def _trajectory_ref(self) -> str | None:
        """scripted: (the test double) needs its trajectory in the artifact store, as `bosun run` does it."""
        if not self.model.startswith("scripted:"):
            return None

        text, _ = await asyncio.to_thread(load_trajectory, self.model.partition(":")[2])
        return await asyncio.to_thread(self.store.put_text, text)

    # ---------------------------------------------------------------- acks

    async def _ack(self, msg: Msg, env: Envelope, outcome: str) -> str:
        await msg.ack()
        self.stats.note(env.dedupe_key, outcome)
        return outcome

    async def _retry(self, msg: Msg, deliveries: int, env: Envelope | None) -> str:
        delay = min(self.cfg.retry_delay_s * 2 ** max(deliveries - 1, 0), self.cfg.retry_delay_max_s)
        with contextlib.suppress(Exception):  # if even the nak is lost, ack_wait brings the message back
            await msg.nak(delay=delay)
        self.stats.retried += 1
        if env is not None:
            self.stats.note(env.dedupe_key, "retry")
        return "retry"

    async def _deadletter(self, msg: Msg, reason: str, deliveries: int) -> str:
        """Copy the message to deadletter.<subject> (same body and headers, plus the reason), then term() it."""
        assert self.js is not None
        headers = dict(msg.headers or {})
        original_id = headers.get(bus.H_MSG_ID) or f"seq-{msg.metadata.sequence.stream}"
        headers.update({bus.H_MSG_ID: f"dl:{original_id}", bus.H_DL_REASON: bus.header_safe(reason),
                        bus.H_DL_DELIVERIES: str(deliveries), bus.H_DL_SUBJECT: msg.subject})
        try:
            await self.js.publish(bus.deadletter_subject(msg.subject), msg.data, headers=headers,
                                  stream=self.cfg.deadletter_stream, timeout=5)
        except Exception as e:  # noqa: BLE001 - keep the message rather than lose it
            log.error("could not dead-letter message on %s (%s); will retry", msg.subject, e)
            return await self._retry(msg, deliveries, None)
        await msg.term()
        self.stats.deadlettered += 1
        self.stats.note(f"dl:{original_id}", "deadlettered")
        log.error("dead-lettered message on %s after %d deliveries: %s", msg.subject, deliveries, reason)
        return "deadlettered"

    # ---------------------------------------------------------------- status back (best effort)

    async def _report(self, env: Envelope, d: Decision, outcome: str) -> None:
        if not self.cfg.post_status or d.origin is None or d.workflow_id is None or d.kind == "converse":
            return  # (a pull request's conversation answers from its rounds)
        try:
            await asyncio.wait_for(self._report_inner(env, d, outcome), 8)
        except Exception as e:  # noqa: BLE001 - status is best effort; the workflow reports later anyway
            log.warning("could not report %s for %s back to %s: %s", outcome, d.workflow_id, d.origin.source, e)

    async def _report_inner(self, env: Envelope, d: Decision, outcome: str) -> None:
        origin, wf_id = d.origin, d.workflow_id
        assert origin is not None and wf_id is not None
        link = run_url(self.settings, self.cfg, wf_id)
        if origin.source == "github" and self.cfg.secret("github_token") and origin.repo:
            async with GitHubClient.from_config(self.cfg) as gh:
                if outcome == "started" and origin.number is not None:
                    await gh.upsert_comment(origin.repo, origin.number, f"{wf_id}:started:{env.delivery}",
                                            f"bosun is on it ({d.reason}). Follow the run: [{wf_id}]({link})")
                    await gh.set_state(origin.repo, origin.number, "working")
                if origin.comment_id is not None and outcome in ("started", "signalled"):
                    await gh.react(origin.repo, origin.comment_id, "eyes")
        elif origin.source == "gitlab" and self.cfg.secret("gitlab_token") and origin.repo:
            project = origin.project_id or origin.repo
            async with GitLabClient.from_config(self.cfg) as gl:
                if outcome == "started" and origin.number is not None and origin.noteable:
                    await gl.upsert_note(project, origin.noteable, origin.number, f"{wf_id}:started:{env.delivery}",
                                         f"bosun is on it ({d.reason}). Follow the run: [{wf_id}]({link})")
                    await gl.set_state(project, origin.noteable, origin.number, "working")
                if origin.comment_id is not None and origin.noteable and origin.number is not None \
                        and outcome in ("started", "signalled"):
                    await gl.award(project, origin.noteable, origin.number, origin.comment_id, "eyes")
        elif origin.source == "linear" and self.cfg.secret("linear_api_key") and origin.agent_session_id:
            sid = origin.agent_session_id
            async with LinearClient.from_config(self.cfg) as linear:
                if outcome in ("started", "signalled", "existing"):
                    text = ("On it: reading the issue and preparing a workspace." if outcome == "started"
                            else "Got your follow-up; passing it to the running task.")
                    await linear.thought(sid, text, key=f"ack:{env.delivery}")
                    if outcome == "started":
                        await linear.set_external_url(sid, "bosun run", link)
                        if origin.issue_id:
                            await linear.set_state(origin.issue_id, "working")
                elif outcome in ("cancelled", "nothing-to-cancel"):
                    await linear.response(sid, "Stopped as requested." if outcome == "cancelled"
                                          else "Nothing was running; nothing to stop.", key=f"stop:{env.delivery}")
        elif origin.source == "linear" and self.cfg.secret("linear_api_key") and origin.issue_id and \
                outcome == "started":  # a labelled issue: no session to talk to, the label says it
            async with LinearClient.from_config(self.cfg) as linear:
                await linear.set_state(origin.issue_id, "working")

    # ---------------------------------------------------------------- health

    async def _health_loop(self, stop: asyncio.Event) -> None:
        path = self.settings.data_dir / STARTER_FILE
        while not stop.is_set():
            info = {"ts": round(time.time(), 3), "pid": os.getpid(), "ready": self.ready.is_set(),
                    "nats": bool(self.nc and self.nc.is_connected), "consumer": self.cfg.consumer,
                    "started": self.stats.started, "signalled": self.stats.signalled,
                    "duplicates": self.stats.duplicates, "ignored": self.stats.ignored,
                    "retried": self.stats.retried, "deadlettered": self.stats.deadlettered}
            with contextlib.suppress(OSError):
                path.parent.mkdir(parents=True, exist_ok=True)
                write_json_atomically(path, info)
            await _sleep(stop, 2.0)


async def _sleep(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def run_starter(settings: Settings, *, cfg: EventsConfig | None = None,
                      stop: asyncio.Event | None = None) -> None:
    """Run the starter until ``stop`` is set (``python -m entry.events starter`` sets it on SIGINT/SIGTERM)."""
    await Starter(settings, cfg).run(stop)
