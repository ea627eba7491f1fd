"""A pull request's conversation as plain state: what came in, what is waiting, what a round takes, and the loop
guards. Pure and deterministic (no Temporal, no clock of its own): PullRequestWorkflow (workflows/pull_request.py)
feeds it the events it is signalled and asks it for the next round.

The rules people can predict (docs/github.md, "Reviews and follow-ups"):

* every event counts once, by its id (a redelivered webhook, a repeated signal);
* a submitted review and its inline comments are one unit; the unit acts when the review requests changes, or when
  the review or one of its comments mentions bosun; a conversation comment acts (the trigger rules pass only those
  that mention bosun);
* what arrives while a round runs waits for the next round; nothing is dropped without a note saying why;
* a failed check acts at most ``max_ci_rounds`` times per pull request, once per head commit, not when it fails on
  the base branch too, not for bosun's own CI fix failing again, and not at all after a push that is not bosun's
  own (until someone asks again by review or mention);
* at most ``max_rounds`` rounds in all.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from infra.events.conversation import PREvent


class Limits(BaseModel):
    """The conversation's settings (EventsConfig: review_quiet_s, max_ci_rounds, max_review_rounds)."""

    quiet_s: float = Field(30.0, ge=0)
    """After the last event, wait this long before a round: a review's comments and loose comments arrive one
    by one."""
    max_ci_rounds: int = Field(3, ge=0)
    """Rounds started by failed checks, per pull request."""
    max_rounds: int = Field(10, ge=0)
    """Rounds in all, per pull request."""


class Round(BaseModel):
    """What one round takes on."""

    number: int
    items: list[PREvent]
    """Reviews, their comments, conversation comments and failed checks, in arrival order."""
    kind: str = "review"
    """review (people asked) or ci (only failed checks)."""


class RoundRecord(BaseModel):
    number: int
    kind: str
    item_ids: list[str]
    status: str = "running"
    commit: str | None = None


class ConversationState(BaseModel):
    """Everything the workflow knows of its pull request; the ``conversation`` query and the continue-as-new
    payload."""

    seen: list[str] = []
    """Ids of every event received (each counts once)."""
    pending: list[PREvent] = []
    """Received, not yet taken by a round or set aside."""
    received: int = 0
    """Events counted so far (the quiet period restarts at each)."""
    rounds: list[RoundRecord] = []
    ci_shas: list[str] = []
    """Head commits a failed check already started a round for."""
    ci_paused_by: str = ""
    """Who pushed to the branch (a push that is not bosun's): no CI round until asked again."""
    own_commits: list[str] = []
    """Commits bosun pushed to the branch (their pushes are not a person's)."""
    notes: list[str] = []
    """Why something was set aside (said in the pull request's status comment)."""
    closed: bool = False
    merged: bool = False
    head_branch: str | None = None

    def receive(self, ev: PREvent) -> bool:
        """Take one event; False when it was seen before (nothing changes)."""
        if ev.id in self.seen:
            return False
        self.seen.append(ev.id)
        self.received += 1
        if ev.head_branch and not self.head_branch:
            self.head_branch = ev.head_branch
        if ev.kind == "closed":
            self.closed, self.merged = True, ev.merged
            return True
        self.pending.append(ev)
        return True

    def wants_round(self) -> bool:
        """Something waiting asks for a round (before the guards are applied), or a push waits to be judged."""
        return any(ev.actionable or ev.kind == "push" for ev in self.pending)

    def take(self, limits: Limits) -> Round | None:
        """The next round, with the guards applied, or None. What it does not take is set aside with a note, except
        a review's comments that may still be joined by their review."""
        self._judge_pushes()
        people = [ev for ev in self.pending if ev.kind in ("review", "review_comment", "comment")]
        checks = [ev for ev in self.pending if ev.kind == "check_failed"]
        units = _units(people)
        asked = [ev for unit in units if any(u.actionable for u in unit) for ev in unit]
        quiet = [unit for unit in units if not any(u.actionable for u in unit)]
        ci = self._ci_items(checks, limits, asked=bool(asked))
        # a review's comments whose review has not arrived yet wait for it (GitHub sends them apart)
        self.pending = [ev for unit in quiet if all(u.kind == "review_comment" for u in unit) for ev in unit]
        for ev in (ev for unit in quiet for ev in unit if ev not in self.pending):
            self.notes.append(f"{ev.kind} {ev.id} by {ev.author}: nothing asked of bosun (no mention, no request "
                              "for changes)")
        items = sorted(asked + ci, key=lambda e: self.seen.index(e.id))
        if not items:
            return None
        if len(self.rounds) >= limits.max_rounds:
            self.notes.append(f"{len(items)} request(s) set aside: the pull request had its {limits.max_rounds} "
                              "rounds")
            return None
        if asked:
            self.ci_paused_by = ""  # asked again: CI counts again
        kind = "review" if asked else "ci"
        rnd = Round(number=len(self.rounds) + 1, items=items, kind=kind)
        self.rounds.append(RoundRecord(number=rnd.number, kind=kind, item_ids=[e.id for e in items]))
        self.ci_shas.extend(e.sha for e in ci if e.sha and e.sha not in self.ci_shas)
        return rnd

    def unweighed_checks(self) -> list[PREvent]:
        """Failed checks waiting whose context (the base branch, the log) was not asked for yet."""
        return [ev for ev in self.pending if ev.kind == "check_failed" and ev.fails_on_base is None]

    def finished(self, number: int, status: str, commit: str | None, pushed: bool) -> None:
        rec = next(r for r in self.rounds if r.number == number)
        rec.status, rec.commit = status, commit
        if pushed and commit:
            self.own_commits.append(commit)

    def _judge_pushes(self) -> None:
        """A push is bosun's own when it brought a commit bosun pushed (judged between rounds, once the round's
        commit is known); anyone else's stops CI rounds."""
        for ev in [e for e in self.pending if e.kind == "push"]:
            self.pending.remove(ev)
            if ev.sha not in self.own_commits:
                self.ci_paused_by = ev.author or "someone"
                self.notes.append(f"{self.ci_paused_by} pushed {str(ev.sha)[:12]}: bosun stops acting on CI until "
                                  "asked again (a review or a mention)")

    def _ci_items(self, checks: list[PREvent], limits: Limits, *, asked: bool) -> list[PREvent]:
        taken: list[PREvent] = []
        for ev in checks:
            why = self._set_aside(ev, taken, limits, asked=asked)
            if why is None:
                taken.append(ev)
            else:
                self.notes.append(f"check {ev.check!r} failed at {(ev.sha or '')[:12]}: not acted on ({why})")
        return taken

    def _set_aside(self, ev: PREvent, taken: list[PREvent], limits: Limits, *, asked: bool) -> str | None:
        """Why a failed check makes no round (None: it does)."""
        sha = ev.sha or ""
        if ev.fails_on_base:  # (first: whoever pushed since, it is not this pull request's doing)
            return f"it fails on the base branch {ev.base_branch or ''} too: not this pull request's doing"
        if self.ci_paused_by and not asked:
            return f"{self.ci_paused_by} pushed to the branch"
        if any(t.sha == sha for t in taken):
            return None  # two checks of one commit: one round
        if sha in self.ci_shas:
            return f"a round already worked on {sha[:12]}"
        if sum(1 for r in self.rounds if r.kind == "ci") >= limits.max_ci_rounds:
            return f"the {limits.max_ci_rounds} CI rounds of this pull request are spent"
        if any(r.commit == sha and r.kind == "ci" for r in self.rounds):
            return "it is bosun's own CI fix failing: a person decides what next"  # (no fix of a fix)
        return None


def _units(people: list[PREvent]) -> list[list[PREvent]]:
    """Reviews with their comments (by review id), then every other comment alone, in arrival order."""
    by_review: dict[int, list[PREvent]] = {}
    units: list[list[PREvent]] = []
    for ev in people:
        if ev.review_id is not None and ev.kind in ("review", "review_comment"):
            if ev.review_id not in by_review:
                by_review[ev.review_id] = []
                units.append(by_review[ev.review_id])
            by_review[ev.review_id].append(ev)
        else:
            units.append([ev])
    return units

