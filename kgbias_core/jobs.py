"""Long work (training, retraining, evaluation) off the UI thread: progress objects and a job queue.

A page submits ``fn(progress)`` to a :class:`JobRegistry` and polls :meth:`JobRegistry.status`
(e.g. from ``st.fragment(run_every=...)``); the work reports through its :class:`Progress` and
checks :meth:`Progress.should_stop` between epochs. One worker thread runs the jobs one after
another, because they all compete for the same CPU/GPU: running two trainings at once would only
make both slower. The queue is ordered by :class:`Priority`, then by submission: what a person
waits for (a what-if, a page's link prediction, a training asked for) runs before background work
(calibration, noise bands, an audit started by opening a page), whenever it was submitted.

Work submitted under a key is shared: while a job of that key is queued or running, or done with
its result still held, submitting the same key again returns that job, so two sessions asking for
the same training get one job, which both see.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Generic, TypeVar

from kgbias_core.errors import (
    CANCELLED,
    JOB_BAD_KEEP,
    JOB_FAILED,
    JOB_NO_RESULT,
    JOB_REGISTRY_CLOSED,
    JOB_RESULT_EVICTED,
    JOB_UNKNOWN,
    CancelledError,
    JobError,
    KGBiasError,
)

T = TypeVar("T")

#: Sentinel for "leave this field as it is" in Progress.update (None is a valid loss).
_KEEP: Any = object()


@dataclass(frozen=True)
class ProgressSnapshot:
    """A consistent copy of a :class:`Progress`, safe to read on the UI thread."""

    stage: str  # what the job is doing now ("queued", "training", "evaluating", ...)
    step: int  # steps done in this stage (epochs, batches, triples)
    total: int  # steps of this stage; 0 when unknown
    loss: float | None  # latest training loss, None before the first epoch
    message: str  # free text for the UI
    started: float  # time.monotonic() when the job started running
    elapsed: float  # seconds since ``started``
    fraction: float | None  # step / total in [0, 1]; None when total is unknown
    seconds_left: float | None  # linear estimate for this stage; None until a step is done
    cancel_requested: bool  # the user asked the job to stop


class Progress:
    """Thread-safe progress of one job: the worker writes, the UI reads snapshots.

    ``seconds_left`` extrapolates linearly within the current stage,
    ``stage_elapsed * (1 - f) / f`` with ``f = step / total``; the stage clock restarts when the
    stage changes, so a fast setup stage does not distort the estimate for training.
    """

    def __init__(self, *, stage: str = "queued", total: int = 0, clock: Callable[[], float] = time.monotonic):
        self._lock = threading.Lock()
        self._clock = clock
        self._stage = stage
        self._step = 0
        self._total = total
        self._loss: float | None = None
        self._message = ""
        self._started = clock()
        self._stage_started = self._started
        self.cancel_event = threading.Event()
        self._pause_hook: Callable[[], None] | None = None  # set by the registry for background jobs

    # --- fields (each read under the lock) ---------------------------------------------------
    @property
    def stage(self) -> str:
        with self._lock:
            return self._stage

    @property
    def step(self) -> int:
        with self._lock:
            return self._step

    @property
    def total(self) -> int:
        with self._lock:
            return self._total

    @property
    def loss(self) -> float | None:
        with self._lock:
            return self._loss

    @property
    def started(self) -> float:
        with self._lock:
            return self._started

    @property
    def message(self) -> str:
        with self._lock:
            return self._message

    @property
    def cancelled(self) -> bool:
        """True once cancellation was requested (the job may still be winding down)."""
        return self.cancel_event.is_set()

    # --- writing -------------------------------------------------------------------------------
    def start(self, *, stage: str = "running") -> None:
        """Restart the clock: called by the registry when the job leaves the queue."""
        with self._lock:
            self._started = self._stage_started = self._clock()
            self._stage, self._step, self._total = stage, 0, 0

    def update(
        self,
        *,
        stage: str = _KEEP,
        step: int = _KEEP,
        total: int = _KEEP,
        loss: float | None = _KEEP,
        message: str = _KEEP,
    ) -> None:
        """Set the given fields, leave the others; a new stage restarts the stage clock."""
        with self._lock:
            if stage is not _KEEP and stage != self._stage:
                self._stage, self._stage_started = stage, self._clock()
            if step is not _KEEP:
                self._step = step
            if total is not _KEEP:
                self._total = total
            if loss is not _KEEP:
                self._loss = None if loss is None else float(loss)
            if message is not _KEEP:
                self._message = message

    def cancel(self) -> None:
        """Ask the job to stop at its next check of :meth:`should_stop`."""
        self.cancel_event.set()

    def pause_point(self) -> None:
        """Called by background work where it may be interrupted without changing its result (between
        retrains, each seeded on its own): the registry runs the person-facing jobs waiting meanwhile."""
        hook = self._pause_hook
        if hook is not None:
            hook()

    # --- hooks for training loops --------------------------------------------------------------
    def should_stop(self) -> bool:
        """Polled by a training loop between epochs; True once the user cancelled."""
        return self.cancel_event.is_set()

    def raise_if_cancelled(self, *, epoch: int) -> None:
        """Raise :class:`CancelledError` (message ``CANCELLED``) if cancellation was requested."""
        if self.cancel_event.is_set():
            raise CancelledError(CANCELLED.format(epoch=epoch))

    def as_callback(self, *, stage: str = "training") -> Callable[[int, int, float], None]:
        """An ``on_epoch(epoch, n_epochs, loss)`` callback (epoch counted from 1) that records progress."""

        def on_epoch(epoch: int, n_epochs: int, loss: float) -> None:
            self.update(stage=stage, step=epoch, total=n_epochs, loss=loss, message=f"epoch {epoch}/{n_epochs}")

        return on_epoch

    # --- reading -------------------------------------------------------------------------------
    def snapshot(self) -> ProgressSnapshot:
        with self._lock:
            now = self._clock()
            fraction = min(max(self._step / self._total, 0.0), 1.0) if self._total > 0 else None
            seconds_left = None
            if fraction is not None and fraction > 0:
                seconds_left = (now - self._stage_started) * (1.0 - fraction) / fraction
            return ProgressSnapshot(
                stage=self._stage,
                step=self._step,
                total=self._total,
                loss=self._loss,
                message=self._message,
                started=self._started,
                elapsed=now - self._started,
                fraction=fraction,
                seconds_left=seconds_left,
                cancel_requested=self.cancel_event.is_set(),
            )


class Priority(IntEnum):
    """Order of the queue: lower runs first; equal priorities run in submission order."""

    USER = 0  # a person is waiting for it
    BACKGROUND = 1  # started by the app (or offered and accepted) as follow-up work


#: What a cancelled queued job did: nothing.
NOT_STARTED = "cancelled before it started"


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: States a job never leaves.
FINISHED_STATES = frozenset({JobState.DONE, JobState.FAILED, JobState.CANCELLED})


@dataclass(frozen=True)
class JobStatus:
    """What the UI needs to draw one job."""

    job_id: str
    name: str
    owners: tuple[str, ...]  # the browser sessions that submitted it (several for shared work)
    key: str | None  # what the job computes, when submitted under a key
    state: JobState
    queue_position: int | None  # 1 = runs next; None unless queued
    progress: ProgressSnapshot
    error: str | None  # message of a failed or cancelled job
    has_result: bool  # result() will return (False once evicted)
    submitted: float  # time.monotonic() at submit
    priority: Priority = Priority.USER
    estimate: float | None = None  # seconds the work is expected to take, where known
    kept: str | None = None  # what stays when the job is cancelled or fails (said after its error)
    cancelled_by: str | None = None  # the session that cancelled it


@dataclass
class _Job(Generic[T]):
    """Mutable record of one job; only touched under the registry lock."""

    job_id: str
    name: str
    owners: list[str]
    key: str | None
    fn: Callable[[Progress], T]
    progress: Progress
    submitted: float
    priority: Priority = Priority.USER
    estimate: float | None = None
    kept: str | None = None
    cancelled_by: str | None = None
    seq: int = 0  # submission order, for FIFO within a priority
    state: JobState = JobState.QUEUED
    result: T | None = None
    has_result: bool = False
    evicted: bool = False
    error: str | None = None


def _error_message(exc: Exception) -> str:
    """A KGBiasError speaks to the user as it is; anything else is a bug: name its type."""
    if isinstance(exc, KGBiasError):
        return str(exc)
    return JOB_FAILED.format(exc_type=type(exc).__name__, message=exc)


class JobRegistry:
    """FIFO queue of jobs run by one daemon worker thread, visible per owner, shared per key.

    Memory is bounded: only the results of the ``max_results`` most recently finished jobs are
    kept (a result can be a whole trained model); older results are dropped, their status stays.
    """

    def __init__(self, *, max_results: int = 4, torch_threads: int | None = None):
        if max_results < 1:
            raise ValueError(JOB_BAD_KEEP.format(keep=max_results))
        self._max_results = max_results
        # Torch's thread count is per calling thread here (OpenMP): the worker sets its own, so a
        # retrain gets every core while page threads keep the one each that they set for themselves.
        self._torch_threads = torch_threads
        self._jobs: dict[str, _Job[Any]] = {}
        self._queue: deque[str] = deque()
        self._with_result: deque[str] = deque()  # done jobs holding a result, oldest first
        self._by_key: dict[str, str] = {}  # key -> id of the latest job submitted under it
        self._cond = threading.Condition()
        self._closed = False
        self._worker: threading.Thread | None = None
        self._seq = 0

    # --- submitting and cancelling -----------------------------------------------------------
    def submit(
        self, name: str, fn: Callable[[Progress], T], *, owner: str, key: str | None = None, again: bool = False,
        priority: Priority = Priority.USER, estimate: float | None = None, kept: str | None = None,
    ) -> str:
        """Queue ``fn(progress)`` and return its job id (random: ids cannot be guessed across sessions).

        With a ``key``, the check and the submission are one step under the registry's lock: while
        the latest job of that key is queued or running (and not being cancelled), or done with its
        result still held, its id is returned, ``owner`` joins its owners, and ``fn`` is dropped;
        a queued background job asked for again at :attr:`Priority.USER` is promoted (a person now
        waits for it). ``again`` runs the work anew even after such a done job (its output was removed
        since). ``estimate`` (seconds) is shown in the queue; ``kept`` says what stays if it is cancelled.
        """
        with self._cond:
            if self._closed:
                raise JobError(JOB_REGISTRY_CLOSED.format(name=name))
            shared = self._jobs[self._by_key[key]] if key in self._by_key else None
            if shared is not None and self._shares(shared, again=again):
                if owner not in shared.owners:
                    shared.owners.append(owner)
                shared.priority = min(shared.priority, Priority(priority))
                return shared.job_id
            job_id = uuid.uuid4().hex
            self._seq += 1
            self._jobs[job_id] = _Job(
                job_id=job_id, name=name, owners=[owner], key=key, fn=fn, progress=Progress(),
                submitted=time.monotonic(), priority=Priority(priority), estimate=estimate, kept=kept,
                seq=self._seq,
            )
            if key is not None:
                self._by_key[key] = job_id
            self._queue.append(job_id)
            if self._worker is None:
                # Started lazily so that importing the module or building a registry costs nothing.
                self._worker = threading.Thread(target=self._run, name="kgbias-jobs", daemon=True)
                self._worker.start()
            self._cond.notify_all()
            return job_id

    @staticmethod
    def _shares(job: _Job[Any], *, again: bool) -> bool:
        """Does a new submission of ``job``'s key get ``job`` itself?"""
        if job.state is JobState.QUEUED or (job.state is JobState.RUNNING and not job.progress.cancelled):
            return True
        return job.state is JobState.DONE and job.has_result and not again

    def cancel(self, job_id: str, *, by: str | None = None) -> JobState:
        """Cancel a job: a queued one leaves the queue, a running one is asked to stop.

        A running job stays ``running`` until its function notices :meth:`Progress.should_stop`
        and raises :class:`CancelledError`. ``by`` (a session) is recorded, so that only the session
        that cancelled hears how it ended. Returns the state after the request.
        """
        with self._cond:
            job = self._get(job_id)
            if job.state not in FINISHED_STATES and job.cancelled_by is None:
                job.cancelled_by = by
            if job.state is JobState.QUEUED:
                self._queue.remove(job_id)
                job.state = JobState.CANCELLED
                job.error = NOT_STARTED
                job.progress.cancel()
                job.progress.update(stage="cancelled")
                self._cond.notify_all()
            elif job.state is JobState.RUNNING:
                job.progress.cancel()
            return job.state

    # --- reading -----------------------------------------------------------------------------
    def status(self, job_id: str) -> JobStatus:
        with self._cond:
            return self._status(self._get(job_id))

    def jobs(self, *, owner: str) -> list[JobStatus]:
        """Status of ``owner``'s jobs in submission order; other sessions' jobs stay invisible."""
        with self._cond:
            return [self._status(job) for job in self._jobs.values() if owner in job.owners]

    def queue(self) -> list[JobStatus]:
        """Every running and waiting job of every session, in the order they run (the running one first).

        Unlike :meth:`jobs`, this shows other sessions' work: it is what stands before a new job."""
        with self._cond:
            running = [self._status(j) for j in self._jobs.values() if j.state is JobState.RUNNING]
            return running + [self._status(self._jobs[i]) for i in self._ordered()]

    def stopped_by(self, session: str) -> list[JobStatus]:
        """The finished jobs ``session`` cancelled, in submission order."""
        with self._cond:
            return [self._status(j) for j in self._jobs.values()
                    if j.cancelled_by == session and j.state in FINISHED_STATES]

    def latest(self, key: str) -> JobStatus | None:
        """Status of the latest job submitted under ``key``, whatever its state and owners; None if none was."""
        with self._cond:
            return self._status(self._jobs[self._by_key[key]]) if key in self._by_key else None

    def result(self, job_id: str) -> Any:
        """The return value of a finished job; :class:`JobError` if there is none (yet)."""
        with self._cond:
            job = self._get(job_id)
            if job.has_result:
                return job.result
            if job.evicted:
                raise JobError(JOB_RESULT_EVICTED.format(job_id=job_id, name=job.name, keep=self._max_results))
            detail = f": {job.error}" if job.error else ""
            raise JobError(JOB_NO_RESULT.format(job_id=job_id, name=job.name, state=job.state, detail=detail))

    def wait(self, job_id: str, *, timeout: float | None = None) -> JobStatus:
        """Block until the job has finished (or ``timeout`` passed); for scripts and tests."""
        with self._cond:
            self._cond.wait_for(lambda: self._get(job_id).state in FINISHED_STATES, timeout=timeout)
            return self._status(self._get(job_id))

    def shutdown(self, *, timeout: float | None = 5.0) -> None:
        """Cancel queued jobs, ask the running one to stop, and join the worker."""
        with self._cond:
            self._closed = True
            for job_id in list(self._queue):
                self.cancel(job_id)
            for job in self._jobs.values():
                if job.state is JobState.RUNNING:
                    job.progress.cancel()
            self._cond.notify_all()
            worker = self._worker
        if worker is not None:
            worker.join(timeout=timeout)

    # --- internals ---------------------------------------------------------------------------
    def _get(self, job_id: str) -> _Job[Any]:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise JobError(JOB_UNKNOWN.format(job_id=job_id)) from None

    def _ordered(self) -> list[str]:
        """The queued job ids in the order they will run: priority, then submission."""
        return sorted(self._queue, key=lambda i: (self._jobs[i].priority, self._jobs[i].seq))

    def _status(self, job: _Job[Any]) -> JobStatus:
        position = self._ordered().index(job.job_id) + 1 if job.state is JobState.QUEUED else None
        return JobStatus(
            job_id=job.job_id,
            name=job.name,
            owners=tuple(job.owners),
            key=job.key,
            state=job.state,
            queue_position=position,
            progress=job.progress.snapshot(),
            error=job.error,
            has_result=job.has_result,
            submitted=job.submitted,
            priority=job.priority,
            estimate=job.estimate,
            kept=job.kept,
            cancelled_by=job.cancelled_by,
        )

    def _run(self) -> None:
        if self._torch_threads is not None:
            import torch

            torch.set_num_threads(self._torch_threads)
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed)
                if not self._queue:
                    return  # closed and nothing left
                job = self._take(self._ordered()[0])
            self._execute(job)

    def _take(self, job_id: str) -> _Job[Any]:
        """Move a queued job to running (under the lock)."""
        self._queue.remove(job_id)
        job = self._jobs[job_id]
        job.state = JobState.RUNNING
        job.progress.start()
        if job.priority > Priority.USER:
            job.progress._pause_hook = lambda: self._run_waiting(job)
        self._cond.notify_all()
        return job

    def _run_waiting(self, current: _Job[Any]) -> None:
        """Run, here and now, every queued job of a higher priority than ``current`` (a background job at one of
        its pause points, between retrains): a person's what-if waits for one retrain, not for 13."""
        while True:
            with self._cond:
                waiting = [i for i in self._ordered() if self._jobs[i].priority < current.priority]
                if not waiting or self._closed:
                    return
                job = self._take(waiting[0])
            current.progress.update(message=f"paused while {job.name} runs")
            self._execute(job)

    def _execute(self, job: _Job[Any]) -> None:
        # The job runs without the lock so that the UI can poll it meanwhile.
        try:
            value = job.fn(job.progress)
        except CancelledError as exc:
            self._finish(job, JobState.CANCELLED, error=str(exc))
        except Exception as exc:  # a failing job must not kill the worker
            self._finish(job, JobState.FAILED, error=_error_message(exc))
        else:
            self._finish(job, JobState.DONE, value=value)

    def _finish(self, job: _Job[Any], state: JobState, *, value: Any = None, error: str | None = None) -> None:
        with self._cond:
            job.state, job.error = state, error
            job.progress.update(stage=state.value)
            if state is JobState.DONE:
                job.result, job.has_result = value, True
                self._with_result.append(job.job_id)
                while len(self._with_result) > self._max_results:
                    old = self._jobs[self._with_result.popleft()]
                    old.result, old.has_result, old.evicted = None, False, True
            job.fn = _finished_fn  # drop the closure: it may hold large inputs
            self._cond.notify_all()


def _finished_fn(progress: Progress) -> None:  # pragma: no cover - never called
    raise AssertionError("a finished job is not run again")


def seconds_ahead(statuses: list[JobStatus]) -> tuple[float, int]:
    """Estimated seconds until ``statuses`` (a :meth:`JobRegistry.queue`) are all done, and how many of
    them have no estimate: a running job counts its time left (its progress's, else its estimate less
    the time it has run), a waiting one its estimate."""
    total, unknown = 0.0, 0
    for status in statuses:
        if status.state is JobState.RUNNING and status.progress.seconds_left is not None:
            total += status.progress.seconds_left
        elif status.estimate is not None:
            elapsed = status.progress.elapsed if status.state is JobState.RUNNING else 0.0
            total += max(status.estimate - elapsed, 0.0)
        else:
            unknown += 1
    return total, unknown


_default: JobRegistry | None = None
_default_lock = threading.Lock()


#: Torch threads of the background worker, where set (a positive integer): a dashboard beside other work on a
#: shared machine, or each of the test suite's workers (one per core), leaves the other cores alone. Default: all.
THREADS_ENV = "KGBIAS_THREADS"


def job_threads() -> int:
    """The background worker's torch threads: ``$KGBIAS_THREADS`` where it is a positive integer, else every core
    (a value that is not one is named on stderr, and every core used)."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if value:
        print(f"{THREADS_ENV}={value!r} is not a positive integer: background jobs use every core", file=sys.stderr)
    return os.cpu_count() or 1


def default_registry() -> JobRegistry:
    """The process-wide registry (one worker for the one CPU/GPU, all cores for it unless ``$KGBIAS_THREADS`` says
    fewer), created on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = JobRegistry(torch_threads=job_threads())
            # A process (a server, a test run) must not end while the worker is inside torch: the
            # daemon thread would be killed mid-op and the process abort ("terminate called ...").
            atexit.register(_default.shutdown)
        return _default
