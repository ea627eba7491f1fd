"""What a failed instance or agent reports: the activity's own words, not the wrappers' (workflows/policies.py)."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, TerminatedError

from workflows.policies import failure


def _activity(cause: BaseException) -> ActivityError:
    e = ActivityError("Activity task failed", scheduled_event_id=5, started_event_id=6, identity="worker",
                      activity_type="eval_instance", activity_id="2", retry_state=None)
    e.__cause__ = cause
    return e


def _child(cause: BaseException) -> ChildWorkflowError:
    e = ChildWorkflowError("Child Workflow execution failed", namespace="default", workflow_id="eval-x/i",
                           run_id="r", workflow_type="EvalInstanceWorkflow", initiated_event_id=1,
                           started_event_id=2, retry_state=None)
    e.__cause__ = cause
    return e


def test_the_activitys_class_and_message_under_the_wrappers() -> None:
    said = ApplicationError("a sandbox with network needs the docker backend", type="ConfigError")
    assert failure(_child(_activity(said))) == ("ConfigError", "a sandbox with network needs the docker backend")
    assert failure(_activity(said)) == ("ConfigError", "a sandbox with network needs the docker backend")


def test_the_class_bosun_raised_wins_over_the_cause_it_chained() -> None:
    said = ApplicationError("the provider said 503", type="ProviderError")
    said.__cause__ = ApplicationError("connection reset", type="OSError")
    assert failure(_activity(said)) == ("ProviderError", "connection reset")


def test_a_terminated_child_says_so() -> None:
    assert failure(_child(TerminatedError("Terminated", ()))) == ("Terminated", "Terminated")
    assert failure(ValueError("plain")) == ("Value", "plain")
    assert failure(ApplicationError("no type")).kind == "Application"
