"""Job registry and progress: deterministic through events, never through timing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from kgbias_core.errors import CANCELLED, JOB_RESULT_EVICTED, CancelledError, DataError, JobError
from kgbias_core.jobs import JobRegistry, JobState, Progress, default_registry

WAIT = 5.0  # generous upper bound; the events fire in microseconds


@pytest.fixture
def registry() -> Iterator[JobRegistry]:
    reg = JobRegistry(max_results=2)
    yield reg
    reg.shutdown()


def _blocking(started: threading.Event, release: threading.Event, value: object = None) -> Callable[[Progress], object]:
    """A job that signals it runs, then waits for the test to release it (or to cancel it)."""

    def fn(progress: Progress) -> object:
        started.set()
        for epoch in range(1, 1000):
            if release.wait(0.01):
                return value
            progress.raise_if_cancelled(epoch=epoch)
        raise AssertionError("never released")

    return fn


def test_job_runs_and_returns(registry: JobRegistry) -> None:
    def train(progress: Progress) -> int:
        on_epoch = progress.as_callback()
        for epoch in range(1, 4):
            on_epoch(epoch, 3, 1.0 / epoch)
        return 42

    job_id = registry.submit("train", train, owner="a")
    status = registry.wait(job_id, timeout=WAIT)
    assert status.state is JobState.DONE
    assert status.has_result and status.error is None and status.queue_position is None
    assert registry.result(job_id) == 42
    assert status.progress.step == 3 and status.progress.total == 3
    assert status.progress.fraction == 1.0
    assert status.progress.loss == pytest.approx(1 / 3)


def test_fifo_queue_positions(registry: JobRegistry) -> None:
    started, release = threading.Event(), threading.Event()
    order: list[str] = []
    first = registry.submit("first", _blocking(started, release, "1"), owner="a")
    assert started.wait(WAIT)
    second = registry.submit("second", lambda p: order.append("second"), owner="a")
    third = registry.submit("third", lambda p: order.append("third"), owner="b")

    assert registry.status(first).state is JobState.RUNNING
    assert registry.status(first).queue_position is None
    assert (registry.status(second).state, registry.status(second).queue_position) == (JobState.QUEUED, 1)
    assert (registry.status(third).state, registry.status(third).queue_position) == (JobState.QUEUED, 2)
    with pytest.raises(JobError, match="is queued: it has no result"):
        registry.result(second)

    release.set()
    assert registry.wait(third, timeout=WAIT).state is JobState.DONE
    assert order == ["second", "third"]
    assert registry.status(first).state is JobState.DONE


def test_cancel_running_and_queued(registry: JobRegistry) -> None:
    started, release = threading.Event(), threading.Event()
    running = registry.submit("running", _blocking(started, release), owner="a")
    assert started.wait(WAIT)
    queued = registry.submit("queued", lambda p: "never", owner="a")
    after = registry.submit("after", lambda p: "ran", owner="a")

    assert registry.cancel(queued) is JobState.CANCELLED
    assert registry.status(after).queue_position == 1  # moved up
    assert registry.cancel(running) is JobState.RUNNING  # asked; it stops at its next check
    status = registry.wait(running, timeout=WAIT)
    assert status.state is JobState.CANCELLED
    assert status.error is not None and status.error.startswith("cancelled by the user after epoch")
    assert status.progress.cancel_requested
    assert registry.wait(after, timeout=WAIT).state is JobState.DONE
    assert registry.status(queued).state is JobState.CANCELLED
    with pytest.raises(JobError, match="is cancelled"):
        registry.result(queued)


def test_failing_job_reports_and_worker_survives(registry: JobRegistry) -> None:
    def bug(progress: Progress) -> None:
        raise ZeroDivisionError("division by zero")

    def user_error(progress: Progress) -> None:
        raise DataError("train.txt, line 3: bad")

    crashed = registry.submit("bug", bug, owner="a")
    refused = registry.submit("user", user_error, owner="a")
    fine = registry.submit("fine", lambda p: "ok", owner="a")
    assert registry.wait(fine, timeout=WAIT).state is JobState.DONE
    assert registry.status(crashed).state is JobState.FAILED
    assert registry.status(crashed).error == "failed: ZeroDivisionError: division by zero"
    assert registry.status(refused).error == "train.txt, line 3: bad"
    assert registry.result(fine) == "ok"
    with pytest.raises(JobError, match="ZeroDivisionError"):
        registry.result(crashed)


def test_owner_isolation(registry: JobRegistry) -> None:
    mine = [registry.submit(f"a{i}", lambda p: None, owner="session-a") for i in range(2)]
    theirs = registry.submit("b", lambda p: None, owner="session-b")
    registry.wait(theirs, timeout=WAIT)
    assert [s.job_id for s in registry.jobs(owner="session-a")] == mine
    assert [s.job_id for s in registry.jobs(owner="session-b")] == [theirs]
    assert registry.jobs(owner="nobody") == []


def test_results_are_evicted_statuses_kept(registry: JobRegistry) -> None:
    ids = [registry.submit(f"j{i}", lambda p, i=i: i, owner="a") for i in range(4)]
    registry.wait(ids[-1], timeout=WAIT)
    assert [registry.status(i).has_result for i in ids] == [False, False, True, True]
    assert [registry.status(i).state for i in ids] == [JobState.DONE] * 4
    assert registry.result(ids[3]) == 3
    with pytest.raises(JobError) as info:
        registry.result(ids[0])
    assert str(info.value) == JOB_RESULT_EVICTED.format(job_id=ids[0], name="j0", keep=2)


def test_one_key_submitted_by_many_sessions_at_once_is_one_job_run_once(registry: JobRegistry) -> None:
    runs, ids, release = [], [], threading.Event()
    barrier, lock = threading.Barrier(8), threading.Lock()

    def train(progress: Progress) -> str:
        runs.append(progress)
        release.wait(WAIT)
        return "model"

    def session(owner: str) -> None:
        barrier.wait()  # every thread submits at the same moment
        job_id = registry.submit("train", train, owner=owner, key="train|synthetic-transe")
        with lock:
            ids.append(job_id)

    owners = [f"session-{i}" for i in range(8)]
    threads = [threading.Thread(target=session, args=(owner,)) for owner in owners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    release.set()
    assert len(ids) == 8 and len(set(ids)) == 1
    assert registry.wait(ids[0], timeout=WAIT).state is JobState.DONE
    assert len(runs) == 1
    assert sorted(registry.status(ids[0]).owners) == owners
    for owner in owners:  # the shared job is visible to every session that asked for it
        assert [s.job_id for s in registry.jobs(owner=owner)] == [ids[0]]


def test_a_key_shares_a_held_result_but_not_a_failure_nor_an_evicted_result(registry: JobRegistry) -> None:
    first = registry.submit("a", lambda p: 1, owner="a", key="k")
    registry.wait(first, timeout=WAIT)
    assert registry.submit("a", lambda p: 2, owner="b", key="k") == first  # done, result held
    assert registry.result(first) == 1
    again = registry.submit("a", lambda p: 3, owner="b", key="k", again=True)
    assert again != first and registry.wait(again, timeout=WAIT).state is JobState.DONE
    assert registry.result(again) == 3 and registry.latest("k").job_id == again

    def bug(progress: Progress) -> None:
        raise ZeroDivisionError("division by zero")

    failed = registry.submit("f", bug, owner="a", key="f")
    assert registry.wait(failed, timeout=WAIT).state is JobState.FAILED
    assert registry.latest("f").error == "failed: ZeroDivisionError: division by zero"
    retried = registry.submit("f", lambda p: "ok", owner="a", key="f")
    assert retried != failed and registry.wait(retried, timeout=WAIT).state is JobState.DONE

    for i in range(2):  # max_results=2: the result of "k" is evicted
        registry.wait(registry.submit(f"other{i}", lambda p: None, owner="a"), timeout=WAIT)
    assert not registry.status(again).has_result
    assert registry.submit("a", lambda p: 4, owner="a", key="k") not in (first, again)
    assert registry.latest("never submitted") is None


def test_a_job_being_cancelled_is_not_shared(registry: JobRegistry) -> None:
    started, release = threading.Event(), threading.Event()
    running = registry.submit("running", _blocking(started, release), owner="a", key="k")
    assert started.wait(WAIT)
    assert registry.submit("running", lambda p: None, owner="b", key="k") == running
    registry.cancel(running)
    fresh = registry.submit("running", lambda p: "fresh", owner="b", key="k")
    assert fresh != running
    assert registry.wait(running, timeout=WAIT).state is JobState.CANCELLED
    assert registry.wait(fresh, timeout=WAIT).state is JobState.DONE and registry.result(fresh) == "fresh"


def test_unknown_job_and_closed_registry() -> None:
    reg = JobRegistry()
    with pytest.raises(JobError, match="unknown job 'nope'"):
        reg.status("nope")
    reg.shutdown()
    with pytest.raises(JobError, match="shut down"):
        reg.submit("late", lambda p: None, owner="a")


def test_progress_snapshot_estimates_time_left() -> None:
    now = [100.0]
    progress = Progress(clock=lambda: now[0])
    progress.start(stage="training")
    progress.update(total=10)
    snap = progress.snapshot()
    assert snap.fraction == 0.0 and snap.seconds_left is None
    now[0] = 104.0
    progress.update(step=4, loss=0.5, message="epoch 4/10")
    snap = progress.snapshot()
    assert snap.fraction == pytest.approx(0.4)
    assert snap.seconds_left == pytest.approx(6.0)  # 4 s for 40 % -> 6 s for the other 60 %
    assert snap.elapsed == pytest.approx(4.0)
    assert (snap.stage, snap.loss, snap.message) == ("training", 0.5, "epoch 4/10")
    progress.update(loss=None)
    assert progress.loss is None and progress.step == 4


def test_progress_cancel_hooks() -> None:
    progress = Progress()
    assert not progress.should_stop() and not progress.cancelled
    progress.raise_if_cancelled(epoch=1)  # no-op
    progress.cancel_event.set()
    assert progress.should_stop() and progress.cancelled
    with pytest.raises(CancelledError) as info:
        progress.raise_if_cancelled(epoch=7)
    assert str(info.value) == CANCELLED.format(epoch=7)


def test_default_registry_is_a_singleton() -> None:
    assert default_registry() is default_registry()


def test_the_worker_sets_its_own_torch_threads_and_leaves_the_callers_alone() -> None:
    import torch

    before = torch.get_num_threads()
    registry = JobRegistry(torch_threads=1)
    try:
        job = registry.submit("threads", lambda progress: torch.get_num_threads(), owner="a")
        assert registry.wait(job, timeout=30).state is JobState.DONE
        assert registry.result(job) == 1
        assert torch.get_num_threads() == before
    finally:
        registry.shutdown()


def test_kgbias_threads_sets_the_background_workers_threads(monkeypatch, capsys) -> None:
    """$KGBIAS_THREADS: a positive integer is the worker's thread count; anything else is named on stderr and every
    core used; unset, every core."""
    import os

    from kgbias_core.jobs import THREADS_ENV, job_threads

    monkeypatch.setenv(THREADS_ENV, "3")
    assert job_threads() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_ENV, bad)
        assert job_threads() == (os.cpu_count() or 1)
        assert f"{THREADS_ENV}={bad!r} is not a positive integer" in capsys.readouterr().err
    monkeypatch.delenv(THREADS_ENV)
    assert job_threads() == (os.cpu_count() or 1) and capsys.readouterr().err == ""


# --- priorities, the queue, estimates, who cancelled (issue 26) ---------------------------------------
def test_a_user_job_submitted_after_queued_background_jobs_runs_before_them(registry: JobRegistry) -> None:
    from kgbias_core.jobs import Priority

    started, release = threading.Event(), threading.Event()
    order: list[str] = []
    running = registry.submit("training", _blocking(started, release), owner="a")
    assert started.wait(WAIT)
    calibration = registry.submit("calibration", lambda p: order.append("calibration"), owner="a",
                                  priority=Priority.BACKGROUND, estimate=120.0)
    noise = registry.submit("noise band", lambda p: order.append("noise band"), owner="a",
                            priority=Priority.BACKGROUND, estimate=30.0)
    whatif = registry.submit("what-if", lambda p: order.append("what-if"), owner="b", estimate=10.0)
    assert [registry.status(j).queue_position for j in (whatif, calibration, noise)] == [1, 2, 3]
    queue = registry.queue()  # every session's, in the order they run
    assert [s.name for s in queue] == ["training", "what-if", "calibration", "noise band"]
    assert queue[0].state is JobState.RUNNING and queue[2].priority is Priority.BACKGROUND
    release.set()
    for job in (running, calibration, noise, whatif):
        registry.wait(job, timeout=WAIT)
    assert order == ["what-if", "calibration", "noise band"]
    assert registry.queue() == []


def test_a_queued_background_job_asked_for_by_a_person_is_promoted_not_duplicated(registry: JobRegistry) -> None:
    from kgbias_core.jobs import Priority

    started, release = threading.Event(), threading.Event()
    registry.submit("running", _blocking(started, release), owner="a")
    assert started.wait(WAIT)
    first = registry.submit("user job", lambda p: None, owner="a")
    audit = registry.submit("audit", lambda p: None, owner="a", key="audit", priority=Priority.BACKGROUND)
    assert registry.status(audit).queue_position == 2
    again = registry.submit("audit", lambda p: None, owner="b", key="audit")  # a person now waits for it
    assert again == audit and [s.name for s in registry.queue()].count("audit") == 1
    status = registry.status(audit)
    assert status.priority is Priority.USER and status.queue_position == 2  # after the earlier user job
    assert set(status.owners) == {"a", "b"}
    release.set()
    registry.wait(audit, timeout=WAIT)
    registry.wait(first, timeout=WAIT)


def test_seconds_ahead_sums_the_estimates_and_counts_the_unknown(registry: JobRegistry) -> None:
    from kgbias_core.jobs import seconds_ahead

    started, release = threading.Event(), threading.Event()
    running = registry.submit("running", _blocking(started, release), owner="a", estimate=1000.0)
    assert started.wait(WAIT)
    registry.submit("a", lambda p: None, owner="a", estimate=60.0)
    registry.submit("b", lambda p: None, owner="a")
    seconds, unknown = seconds_ahead(registry.queue())
    elapsed = registry.status(running).progress.elapsed
    assert unknown == 1
    assert 60.0 + 1000.0 - elapsed - 1.0 <= seconds <= 1060.0  # the running job counts what it has left
    release.set()
    registry.wait(running, timeout=WAIT)


def test_a_cancelled_job_says_who_cancelled_it_and_what_it_kept(registry: JobRegistry) -> None:
    from kgbias_core.jobs import NOT_STARTED

    started, release = threading.Event(), threading.Event()
    running = registry.submit("calibration", _blocking(started, release), owner="a", kept="The model stays.")
    assert started.wait(WAIT)
    queued = registry.submit("what-if", lambda p: None, owner="a", kept="Nothing saved.")
    registry.cancel(queued, by="b")
    registry.cancel(running, by="c")
    registry.cancel(running, by="d")  # the first canceller is the one told
    done = registry.wait(running, timeout=WAIT)
    assert done.state is JobState.CANCELLED and done.cancelled_by == "c" and done.kept == "The model stays."
    assert done.error.startswith(CANCELLED.split("{")[0])
    status = registry.status(queued)
    assert status.error == NOT_STARTED and status.cancelled_by == "b" and status.kept == "Nothing saved."
    assert [s.job_id for s in registry.stopped_by("b")] == [queued] and registry.stopped_by("a") == []


def test_a_user_job_runs_at_the_running_background_jobs_next_pause_point(registry: JobRegistry) -> None:
    """With a 13-retrain calibration running, a what-if waits for one retrain, not for all of them."""
    from kgbias_core.jobs import Priority

    started, pausing, release = threading.Event(), threading.Event(), threading.Event()
    events: list[str] = []

    def calibration(progress: Progress) -> str:
        started.set()
        for run in range(1, 14):
            events.append(f"retrain {run}")
            progress.pause_point()
            if run == 2:
                pausing.set()
                assert release.wait(WAIT)
        return "calibrated"

    background = registry.submit("calibration", calibration, owner="a", priority=Priority.BACKGROUND)
    assert started.wait(WAIT) and pausing.wait(WAIT)
    whatif = registry.submit("what-if", lambda p: events.append("what-if"), owner="b")
    release.set()
    assert registry.wait(whatif, timeout=WAIT).state is JobState.DONE
    assert registry.wait(background, timeout=WAIT).state is JobState.DONE
    assert events.index("what-if") == events.index("retrain 3") + 1  # right after the retrain that was running
    assert registry.result(background) == "calibrated" and len(events) == 14


def test_a_user_jobs_pause_points_run_nothing(registry: JobRegistry) -> None:
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def user(progress: Progress) -> None:
        started.set()
        assert release.wait(WAIT)
        progress.pause_point()  # a person's job is never interrupted by another
        order.append("first")

    first = registry.submit("first", user, owner="a")
    assert started.wait(WAIT)
    second = registry.submit("second", lambda p: order.append("second"), owner="a")
    release.set()
    registry.wait(second, timeout=WAIT)
    registry.wait(first, timeout=WAIT)
    assert order == ["first", "second"]
