"""A pull request's conversation as plain state (workflows/conversation.py): what makes a round, what waits, what is
set aside and why, and the CI loop guards. No Temporal: the rules alone."""

from __future__ import annotations

from infra.events.conversation import PREvent
from workflows.conversation import ConversationState, Limits

LIMITS = Limits(quiet_s=0, max_ci_rounds=3, max_rounds=10)


def review(rid: int, state: str = "changes_requested", body: str = "Please rework this", author: str = "alice"):
    return PREvent(id=f"review:{rid}", kind="review", author=author, body=body, review_id=rid, review_state=state,
                   actionable=state == "changes_requested" or "@bosun" in body)


def inline(cid: int, rid: int | None, body: str = "rename this", mention: bool = False):
    return PREvent(id=f"review_comment:{cid}", kind="review_comment", author="alice", body=body, review_id=rid,
                   comment_id=cid, path="calc/stats.py", line=cid % 50, actionable=mention)


def check(sha: str, name: str = "tests"):
    return PREvent(id=f"check:{sha}:{name}", kind="check_failed", sha=sha, check=name, actionable=True)


def push(sha: str, author: str = "bob"):
    return PREvent(id=f"push:{sha}", kind="push", sha=sha, author=author)


def test_a_review_with_five_comments_is_one_round_and_redeliveries_change_nothing():
    s = ConversationState()
    events = [inline(i, 77) for i in range(1, 6)] + [review(77)]
    assert [s.receive(e) for e in events] == [True] * 6
    assert [s.receive(e) for e in events] == [False] * 6  # the same deliveries again
    assert s.wants_round()
    rnd = s.take(LIMITS)
    assert rnd.number == 1 and rnd.kind == "review"
    assert [e.id for e in rnd.items] == [f"review_comment:{i}" for i in range(1, 6)] + ["review:77"]
    assert s.take(LIMITS) is None and not s.pending


def test_a_plain_review_acts_only_when_it_or_one_of_its_comments_mentions_bosun():
    s = ConversationState()
    s.receive(review(1, state="approved", body="LGTM"))
    s.receive(review(2, state="commented", body="a thought"))
    assert s.take(LIMITS) is None
    assert len(s.notes) == 2 and "nothing asked of bosun" in s.notes[0]
    s.receive(review(3, state="commented", body=""))
    s.receive(inline(31, 3, "@bosun use a constant here", mention=True))
    s.receive(inline(32, 3, "and here"))
    rnd = s.take(LIMITS)
    assert [e.id for e in rnd.items] == ["review:3", "review_comment:31", "review_comment:32"]


def test_a_review_comment_waits_for_its_review():
    s = ConversationState()
    s.receive(inline(5, 9))  # GitHub sends the comments and the review apart
    assert s.take(LIMITS) is None and [e.id for e in s.pending] == ["review_comment:5"]
    s.receive(review(9))
    assert [e.id for e in s.take(LIMITS).items] == ["review_comment:5", "review:9"]


def test_what_arrives_during_a_round_is_the_next_round():
    s = ConversationState()
    s.receive(review(1))
    first = s.take(LIMITS)
    s.receive(PREvent(id="comment:9", kind="comment", author="carol", body="@bosun also the docs", actionable=True))
    s.finished(first.number, "succeeded", "c1" * 20, pushed=True)
    second = s.take(LIMITS)
    assert second.number == 2 and [e.id for e in second.items] == ["comment:9"]


def test_a_failed_check_acts_once_per_head_and_at_most_n_times():
    s = ConversationState()
    s.receive(check("a" * 40, "tests"))
    s.receive(check("a" * 40, "lint"))  # two checks of one commit: one round
    rnd = s.take(LIMITS)
    assert rnd.kind == "ci" and len(rnd.items) == 2
    s.finished(1, "succeeded", None, pushed=False)
    s.receive(check("a" * 40, "build"))  # the same head again
    assert s.take(LIMITS) is None and "already worked on aaaaaaaaaaaa" in s.notes[-1]
    limits = Limits(quiet_s=0, max_ci_rounds=2, max_rounds=10)
    s.receive(check("b" * 40))
    assert s.take(limits).kind == "ci"
    s.finished(2, "failed", None, pushed=False)
    s.receive(check("c" * 40))
    assert s.take(limits) is None and "2 CI rounds of this pull request are spent" in s.notes[-1]


def test_a_fix_whose_own_ci_fails_does_not_loop():
    s = ConversationState()
    s.receive(check("a" * 40))
    s.take(LIMITS)
    s.finished(1, "succeeded", "f" * 40, pushed=True)
    s.receive(push("f" * 40, author="bosun-bot"))  # bosun's own push: not a person's
    s.receive(check("f" * 40))
    assert s.take(LIMITS) is None
    assert "bosun's own CI fix failing" in s.notes[-1] and not s.ci_paused_by


def test_a_persons_push_stops_ci_until_someone_asks_again():
    s = ConversationState()
    s.receive(push("d" * 40, author="bob"))
    s.receive(check("d" * 40))
    assert s.take(LIMITS) is None
    assert s.ci_paused_by == "bob" and "bob pushed dddddddddddd" in s.notes[0] and "bob pushed" in s.notes[1]
    # asked again (a review): the round takes the review and the check together, and CI counts again
    s.receive(review(4))
    s.receive(check("e" * 40))
    rnd = s.take(LIMITS)
    assert {e.kind for e in rnd.items} == {"review", "check_failed"} and not s.ci_paused_by


def test_a_check_failing_on_the_base_branch_too_says_so_even_after_a_persons_push():
    """A check that fails on the base branch is set aside for that reason first: a person's push since (it came
    while a round ran, and was judged with it) does not hide why."""
    s = ConversationState()
    late = check("a" * 40, "flaky")
    late.fails_on_base, late.base_branch = True, "main"
    s.receive(late)
    s.receive(push("b" * 40, author="bob"))
    assert s.take(LIMITS) is None and s.ci_paused_by == "bob"
    assert "'flaky' failed at aaaaaaaaaaaa: not acted on (it fails on the base branch main too" in s.notes[-1]


def test_rounds_are_bounded_and_the_closing_ends_it():
    s = ConversationState()
    limits = Limits(quiet_s=0, max_ci_rounds=3, max_rounds=1)
    s.receive(review(1))
    s.finished(s.take(limits).number, "succeeded", None, pushed=False)
    s.receive(review(2))
    assert s.take(limits) is None and "had its 1 rounds" in s.notes[-1]
    s.receive(PREvent(id="closed", kind="closed", merged=True))
    assert s.closed and s.merged


def test_a_huge_comment_is_cut_before_it_reaches_the_workflow():
    from infra.events.conversation import MAX_BODY

    ev = PREvent(id="note:1", kind="comment", body="x" * 1_000_000, actionable=True)
    assert len(ev.body) == MAX_BODY + len(" [cut]") and ev.body.endswith(" [cut]")
