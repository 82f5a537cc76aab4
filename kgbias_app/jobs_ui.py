"""Long work from the pages: submit a task under its key, and the one panel that polls its progress.

Jobs run on the process-wide registry (:func:`kgbias_core.jobs.default_registry`), which shares a
job between every session that submits the same task key. A page remembers its own tasks in
``st.session_state[TASKS_KEY]`` (so that a rerun or a page switch finds them again) and shows them
with :func:`progress_panel`, a fragment polled every second that reruns the app when a job ends.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from kgbias_app import reruns, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_core.jobs import FINISHED_STATES, JobState, JobStatus, Priority, default_registry, seconds_ahead
from kgbias_core.tasks import Task

#: Session state: task key -> (page group, task) of the tasks this session submitted.
TASKS_KEY = "jobs"
#: Session state: ids of the finished jobs this session has already rerun the app for.
SEEN_KEY = "jobs_seen"
#: Session state: ids of the stopped jobs whose notice this session dismissed.
DISMISSED_KEY = "jobs_dismissed"
#: Session state: ids of the jobs the queue panel listed at its last poll.
QUEUED_KEY = "jobs_listed"


def session_owner() -> str:
    """A per-browser-session id: the owner of this session's jobs in the registry."""
    return st.session_state.setdefault("session_id", uuid.uuid4().hex)


def submit(
    title: str, task: Task[Any], *, group: str | None = None, again: bool = False,
    priority: Priority = Priority.USER, estimate: float | None = None,
) -> str:
    """Submit ``task`` under its key (the same work queued or running for any session is shared).

    ``group`` files it among this session's tasks of a page (:func:`session_tasks`); ``again`` runs
    it anew even after a done job of its key (its output was removed since). ``priority``: USER for
    what the person waits for, BACKGROUND for follow-up work; ``estimate`` (seconds) is shown in the queue.
    """
    job_id = default_registry().submit(title, task.run, owner=session_owner(), key=task.key, again=again,
                                       priority=priority, estimate=estimate, kept=task.kept)
    if group is not None:
        st.session_state.setdefault(TASKS_KEY, {})[task.key] = (group, task)
    return job_id


def session_tasks(group: str) -> list[Task[Any]]:
    """This session's tasks of ``group``, newest first."""
    return [task for g, task in reversed(st.session_state.get(TASKS_KEY, {}).values()) if g == group]


def is_running(task: Task[Any]) -> bool:
    """Is a job of ``task``'s key queued or running (for any session)?"""
    status = default_registry().latest(task.key)
    return status is not None and status.state not in FINISHED_STATES


def offer_job(task: Task[Any], background: list, *, label: str, help: str, seconds: float | None, job: str) -> None:
    """``task`` listed in ``background`` while it runs in any session, else offered as a button with its estimate that
    submits it as background work of the lab (never offered twice)."""
    if is_running(task):
        background.append(task)
    elif st.button(texts.with_estimate(label, seconds), help=help):
        submit(job, task, group="lab", priority=Priority.BACKGROUND, estimate=seconds)
        st.rerun()


def stored_per_model(
    models: Sequence[ModelRef],
    *,
    title: str,
    load: Callable[[ModelRef], pd.DataFrame | None],
    task: Callable[[ModelRef], Task[Any]],
    pending: list[Task[Any]],
    priority: Priority = Priority.USER,
    estimate: Callable[[ModelRef], float | None] | None = None,
) -> dict[str, pd.DataFrame]:
    """Model name -> its stored result, for the models that have one.

    For each other model, the task computing the result is submitted (``title`` names the job,
    with ``{name}`` for the model) and appended to ``pending``, unless its last job failed or was
    cancelled: then it is only appended, and the progress panel offers to try again. ``priority``:
    USER where the page shows nothing without the result, BACKGROUND for results it adds to.
    """
    ready, registry = {}, default_registry()
    for model in models:
        frame = load(model)
        if frame is not None:
            ready[model.name] = frame
            continue
        job = task(model)
        status = registry.latest(job.key)
        if status is not None and status.state is JobState.DONE:
            st.error(texts.RESULT_MISSING.format(title=title.format(name=md(model.name))))
            continue
        if status is None or status.state not in (JobState.FAILED, JobState.CANCELLED):
            submit(title.format(name=model.name), job, priority=priority,
                   estimate=None if estimate is None else estimate(model))
        pending.append(job)
    return ready


@st.fragment(run_every=1)
def progress_panel(tasks: Sequence[Task[Any]], *, heading: str | None = None, key: str = "jobs") -> None:
    """The latest job of each task: progress and Cancel, or how it ended (with Try again).

    Reruns the whole app the first time it sees a job finished, so that the page shows its result.
    ``key`` tells two panels of one page apart.
    """
    registry, seen = default_registry(), st.session_state.setdefault(SEEN_KEY, set())
    shown = [(task, status) for task in tasks if (status := registry.latest(task.key)) is not None]
    if shown and heading:
        st.subheader(heading)
    finished_now = False
    for task, status in shown:
        if is_for_this_session(status):
            _job_row(task, status, key=f"{key}:{status.job_id}")
        if status.state in FINISHED_STATES and status.job_id not in seen:
            seen.add(status.job_id)
            finished_now = True
    if finished_now:
        reruns.rerun_app()  # the whole app: the sidebar lists new models, the pages show new results


def is_for_this_session(status: JobStatus) -> bool:
    """Is ``status`` shown here? Running and done jobs are; a stopped one only to the session that cancelled
    it (else, failed or cancelled by nobody in particular, to its owners), until that session dismisses it."""
    if status.state not in (JobState.FAILED, JobState.CANCELLED):
        return True
    if status.job_id in st.session_state.get(DISMISSED_KEY, set()):
        return False
    me = session_owner()
    return status.cancelled_by == me if status.cancelled_by is not None else me in status.owners


def stopped_notice(status: JobStatus, *, key: str) -> None:
    """How a stopped job ended and what it kept, with Dismiss."""
    st.error(texts.job_stopped(status))
    if st.button("Dismiss", key=f"dismiss:{key}"):
        st.session_state.setdefault(DISMISSED_KEY, set()).add(status.job_id)
        st.rerun()


def _job_row(task: Task[Any], status: JobStatus, *, key: str) -> None:
    if status.state is JobState.DONE:
        st.success(texts.JOB_DONE.format(name=md(status.name)))
    elif status.state in FINISHED_STATES:
        stopped_notice(status, key=key)
        if st.button("Try again", key=f"retry:{key}"):
            submit(status.name, task, priority=status.priority, estimate=status.estimate)
            st.rerun()
    else:
        st.progress(status.progress.fraction or 0.0, text=texts.job_progress(status))
        if st.button("Cancel", key=f"cancel:{key}", disabled=status.progress.cancel_requested):
            default_registry().cancel(status.job_id, by=session_owner())


@st.fragment(run_every=2)
def queue_panel() -> None:
    """The one job queue, on every page (in the sidebar): running and waiting jobs of every session, each with
    its estimate and a Cancel, the total time ahead, and the jobs this session cancelled (with Dismiss).

    Reruns the app when a job has left the queue since the last poll, so the page shows its result."""
    registry, me = default_registry(), session_owner()
    queue = registry.queue()
    listed = {status.job_id for status in queue}
    before = st.session_state.get(QUEUED_KEY, set())
    st.session_state[QUEUED_KEY] = listed
    stopped = [s for s in registry.jobs(owner=me) if s.state in (JobState.FAILED, JobState.CANCELLED)]
    stopped += [s for s in registry.stopped_by(me) if me not in s.owners]
    stopped = [s for s in stopped if is_for_this_session(s)]
    # A bordered box, not an expander: always open, so a job is never hidden from the person waiting for it.
    with st.container(border=True, key="job_queue"):
        st.markdown(f"**{texts.queue_heading(queue)}**")
        if not queue:
            st.caption(texts.QUEUE_EMPTY)
        for status in queue:
            st.caption(texts.queue_row(status))
            if status.state is JobState.RUNNING:
                st.progress(status.progress.fraction or 0.0)
            if st.button("Cancel", key=f"queue-cancel:{status.job_id}", disabled=status.progress.cancel_requested,
                         help=texts.CANCEL_HELP):
                registry.cancel(status.job_id, by=me)
                st.rerun(scope="fragment")
        if queue:
            seconds, unknown = seconds_ahead(queue)
            st.caption(texts.queue_total(seconds, unknown))
        for status in stopped:
            stopped_notice(status, key=f"queue:{status.job_id}")
    if before - listed:
        reruns.rerun_app()  # a job ended: the whole app, so that the pages show what it made
