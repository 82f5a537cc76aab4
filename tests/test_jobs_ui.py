"""The one progress panel (AppTest of a small script): progress, Cancel, Try again, done; keyed submits."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from kgbias_core.errors import CANCELLED, CancelledError
from kgbias_core.jobs import JobState, Progress, default_registry
from kgbias_core.tasks import Task
from tests.conftest import PAGE_TIMEOUT, button, texts

#: Lets the running job finish (a job cancelled before that raises CancelledError).
GATE = threading.Event()
#: The task the script below submits (a fresh key per test: the registry remembers keys).
TASK: Task[str] = Task(key="", run=lambda progress: "")


def wait_at_the_gate(progress: Progress) -> str:
    progress.update(stage="working", step=1, total=4, message="step one")
    while not GATE.wait(0.02):
        if progress.should_stop():
            raise CancelledError(CANCELLED.format(epoch=1))
    return "done"


def panel_script() -> None:
    import streamlit as st

    from kgbias_app import jobs_ui
    from tests import test_jobs_ui as here

    if st.button("Submit"):
        jobs_ui.submit("slow job", here.TASK, group="tests")
        jobs_ui.submit("slow job", here.TASK, group="tests")  # the same key again: one job
    jobs_ui.progress_panel(jobs_ui.session_tasks("tests"), heading="Jobs of the test")


def until(state: JobState) -> None:
    deadline = time.monotonic() + PAGE_TIMEOUT
    while default_registry().latest(TASK.key).state is not state:
        assert time.monotonic() < deadline, f"the job never became {state}"
        time.sleep(0.02)


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Iterator[AppTest]:
    GATE.clear()
    monkeypatch.setattr(f"{__name__}.TASK", Task(key=f"test-jobs-ui-{uuid.uuid4().hex}", run=wait_at_the_gate))
    yield AppTest.from_function(panel_script, default_timeout=PAGE_TIMEOUT).run()
    GATE.set()


def test_the_panel_shows_progress_and_cancel_stops_the_job(app: AppTest) -> None:
    assert not texts(app.subheader)  # nothing submitted, nothing shown
    button(app, "Submit").click().run()
    until(JobState.RUNNING)
    app.run()
    assert not app.exception
    assert len(default_registry().jobs(owner=app.session_state["session_id"])) == 1
    assert texts(app.subheader) == "Jobs of the test"
    (bar,) = app.get("progress")
    assert "slow job: working, step one (step 1/4" in bar.proto.text
    button(app, "Cancel").click().run()
    until(JobState.CANCELLED)
    app.run()
    assert not app.exception
    assert "slow job cancelled: cancelled" in texts(app.error)
    assert "Nothing was saved" in texts(app.error)


def test_try_again_runs_a_failed_job_anew_and_the_panel_says_done(app: AppTest) -> None:
    button(app, "Submit").click().run()
    until(JobState.RUNNING)
    default_registry().cancel(default_registry().latest(TASK.key).job_id)
    until(JobState.CANCELLED)
    first = default_registry().latest(TASK.key).job_id
    app.run()
    button(app, "Try again").click().run()
    assert default_registry().latest(TASK.key).job_id != first
    GATE.set()
    until(JobState.DONE)
    app.run()
    assert not app.exception
    assert "slow job: done." in texts(app.success)
    assert not app.error


def page_script() -> None:
    """A page as the dashboard draws it: the queue (sidebar) above, a button of the page body below it."""
    import streamlit as st

    from kgbias_app import jobs_ui, reruns
    from tests import test_jobs_ui as here

    st.session_state["runs"] = st.session_state.get("runs", 0) + 1
    jobs_ui.queue_panel()
    if st.button("Submit"):
        jobs_ui.submit("slow job", here.TASK, group="tests")
    if st.button("Count"):
        st.session_state["clicks"] = st.session_state.get("clicks", 0) + 1
    jobs_ui.progress_panel(jobs_ui.session_tasks("tests"), heading="Jobs of the test")
    reruns.rerun_if_asked()  # as the router does


def test_a_click_in_the_run_that_sees_a_job_end_is_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CI failure of 2026-12-07 (the L2 audit offered again, clicked, never run): a job left the queue between
    two polls, and the click's run was the first to see it. The queue panel, drawn above the page, reran the app
    at once, and a rerun the script asks for resets every button: the click was lost. It is not now: the panels
    ask for the rerun and the router makes it after the page has handled its clicks."""
    GATE.clear()
    monkeypatch.setattr(f"{__name__}.TASK", Task(key=f"test-jobs-ui-{uuid.uuid4().hex}", run=wait_at_the_gate))
    app = AppTest.from_function(page_script, default_timeout=PAGE_TIMEOUT).run()
    button(app, "Submit").click().run()
    until(JobState.RUNNING)
    app.run()  # the queue lists the job
    GATE.set()
    until(JobState.DONE)  # it ends between two polls
    runs = app.session_state["runs"]
    button(app, "Count").click().run()
    assert not app.exception
    assert app.session_state["clicks"] == 1
    assert app.session_state["runs"] == runs + 2  # the click's run, then the rerun that the job's end asked for
    assert "slow job: done." in texts(app.success)
