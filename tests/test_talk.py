"""Ready for a talk (issue 26), in AppTest: the first start opens when its model is saved and its calibration
follows as background work; the one job queue lists and cancels jobs, and tells only the session that cancelled
what was kept; a graph with data but no model is offered for training with its estimate."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kgbias_app.escape import md
from kgbias_core import tasks
from kgbias_core.jobs import FINISHED_STATES, JobState, Priority, Progress, default_registry
from tests.conftest import PAGE_TIMEOUT, TINY_TRAINING, button, metric, page, texts, use_store

#: Lets the queue test's job finish; cancelled, it stops at its next check.
GATE = threading.Event()
#: The name of the queue test's job (fresh per test: the registry is the process's).
NAME = ["job"]


def _gate(progress: Progress) -> str:
    from kgbias_core.errors import CANCELLED, CancelledError

    while not GATE.wait(0.02):
        if progress.should_stop():
            raise CancelledError(CANCELLED.format(epoch=2))
    return "done"


def queue_script() -> None:
    import streamlit as st

    from kgbias_app import jobs_ui
    from kgbias_core.jobs import default_registry
    from tests import test_talk as here

    if st.button("Submit"):
        default_registry().submit(here.NAME[0], here._gate, owner=jobs_ui.session_owner(), key=here.NAME[0],
                                  estimate=60.0, kept="The model stays in the store, in use.")
    with st.sidebar:
        jobs_ui.queue_panel()


def _wait(predicate, what: str, timeout: float = PAGE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.05)


def test_the_queue_lists_every_sessions_job_cancels_one_and_tells_only_the_canceller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    GATE.clear()
    NAME[0] = f"test job {uuid.uuid4().hex[:8]}"
    mine = AppTest.from_function(queue_script, default_timeout=PAGE_TIMEOUT).run()
    other = AppTest.from_function(queue_script, default_timeout=PAGE_TIMEOUT).run()
    try:
        button(mine, "Submit").click().run()
        other.run()
        for app in (mine, other):  # listed with its estimate in both sessions, with a total
            assert any(NAME[0] in c.value and "about 60 s" in c.value for c in app.caption), texts(app.caption)
            assert "Total ahead" in texts(app.caption)
        status = default_registry().latest(NAME[0])
        cancel = next(b for b in other.button if b.key == f"queue-cancel:{status.job_id}")
        cancel.click().run()  # the other session cancels it
        _wait(lambda: default_registry().latest(NAME[0]).state in FINISHED_STATES, "the cancel")
        mine.run()
        other.run()
        assert NAME[0] not in texts(mine.caption) and NAME[0] not in texts(other.caption)  # left the queue
        (notice,) = [e.value for e in other.error if NAME[0] in e.value]
        assert "cancelled" in notice and notice.endswith(md("The model stays in the store, in use."))  # as Markdown
        assert not [e for e in mine.error if NAME[0] in e.value]  # the session that did not cancel hears nothing
        button(other, "Dismiss").click().run()
        other.run()
        assert not [e for e in other.error if NAME[0] in e.value]  # dismissed: gone for good
    finally:
        GATE.set()


def test_the_first_start_opens_when_the_model_is_saved_and_audits_in_the_background(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_graph
) -> None:
    store = use_store(tmp_path / "store", monkeypatch, tmp_path)
    monkeypatch.setattr(tasks.training, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: replace(TINY_TRAINING, epochs=4))
    waiting = page("overview").run()
    second = page("overview").run()  # another session, open while the first model trains
    assert "Training a first model" in texts(waiting.info)
    # The second session waits too, unless the tiny training (a second or so) already ended before it ran.
    assert "Training a first model" in texts(second.info) or (store / "synthetic-transe" / "config.json").is_file()
    training = default_registry().latest(tasks.train_task("synthetic", out=store / "synthetic-transe").key)
    assert training is not None and training.estimate is not None
    done = default_registry().wait(training.job_id, timeout=PAGE_TIMEOUT)
    assert done.state is JobState.DONE  # the job ends with the save: nothing runs after it in the same job
    assert (store / "synthetic-transe" / "config.json").is_file()
    for app in (waiting, second):
        app.run()
        assert not app.exception
        assert metric(app, "Persons with a gender") == "600"
    # Issue 25: the 13-retrain calibration is never started unasked; the one-retrain audit follows instead.
    assert default_registry().latest(tasks.calibration_task(store / "synthetic-transe").key) is None
    audits = [default_registry().latest(make(store / "synthetic-transe").key)
              for make in (tasks.prediction_audit_task, tasks.add_audit_task)]  # a removal's and an addition's
    try:
        for audit in audits:
            assert audit is not None and audit.priority is Priority.BACKGROUND
            assert audit.estimate is not None and audit.estimate <= tasks.AUTO_BACKGROUND_SECONDS
        # trained: no button for the model (the seed family's panel offers its siblings)
        assert not [b for b in waiting.button if b.label.startswith("Train") and b.key != "train_family"]
    finally:
        for audit in audits:
            if audit is not None:
                default_registry().cancel(audit.job_id)
                default_registry().wait(audit.job_id, timeout=PAGE_TIMEOUT)


def test_a_graph_with_data_and_no_model_is_offered_with_its_estimate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, writable_store: Path, tiny_graph
) -> None:
    """FB13's button, on a small slice of triples in FB13's place (never FB13 itself in the tests)."""
    # a copy: a two-epoch training that ends before the cancel below would leave a model in the read-only store
    store = writable_store
    data = tmp_path / "data"
    (data / "fb13").mkdir(parents=True)
    lines = [f"/m/p{i}\tgender\t/m/{'male' if i % 2 else 'female'}" for i in range(300)]
    (data / "fb13" / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("KGBIAS_DATA_DIR", str(data))
    monkeypatch.setattr(tasks.training, "load_graph", lambda dataset, data_dir, **_: tiny_graph)
    monkeypatch.setattr(tasks.training, "train_config", lambda dataset: replace(TINY_TRAINING, epochs=2))
    expected = tasks.training_seconds("fb13", data)
    app = page("overview").run()
    app.selectbox(key="graph").set_value("fb13").run()
    assert not app.exception
    from kgbias_app import texts as app_texts

    label = app_texts.TRAIN_BUTTON.format(name="fb13-transe", estimate=app_texts.duration(expected))
    assert [b.label for b in app.button if b.label.startswith("Train fb13")] == [label]
    assert "takes about" in texts(app.caption)
    button(app, "Train fb13").click().run()
    assert not [b for b in app.button if b.label.startswith("Train fb13")]  # running: not offered again
    training = default_registry().latest(tasks.train_task("fb13", out=store / "fb13-transe", data_dir=data).key)
    try:
        assert training is not None and training.priority is Priority.USER and training.estimate == expected
    finally:
        default_registry().cancel(training.job_id)
        default_registry().wait(training.job_id, timeout=PAGE_TIMEOUT)


def test_presenter_mode_from_the_url_the_environment_or_the_toggle(
    app_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgbias_app.presenter import CSS, PRESENTER_ENV

    def styled(app: AppTest) -> bool:
        return any(CSS in str(m.value) for m in app.markdown)

    plain = page("overview").run()
    assert not plain.exception and not styled(plain) and plain.sidebar.toggle(key="presenter").value is False
    plain.sidebar.toggle(key="presenter").set_value(True).run()
    assert styled(plain)
    linked = page("overview")
    linked.query_params["presenter"] = "1"
    assert styled(linked.run())
    monkeypatch.setenv(PRESENTER_ENV, "1")
    everyone = page("overview").run()
    assert styled(everyone) and everyone.sidebar.toggle(key="presenter").value is True
    assert "display: none" in CSS and "stCaptionContainer" in CSS  # fewer paragraphs: the captions go


def test_the_explorers_disagreement_is_explained_in_one_line_where_it_appears(app_store: Path) -> None:
    from kgbias_app import texts as app_texts

    app = page("occupation_explorer").run()
    app.selectbox(key="occupation").set_value("actor").run()  # the measures disagree in direction (tiny graph)
    assert not app.exception
    values = [m.value for m in app.markdown]
    first = next(i for i, v in enumerate(values) if v.startswith("**The measures disagree in direction:**"))
    assert values[first + 1] == app_texts.DISAGREE_ONE_LINE  # right under the headline
    app.selectbox(key="occupation").set_value("politician").run()
    values = [m.value for m in app.markdown]
    if not any(v.startswith("**The measures disagree") for v in values):
        assert app_texts.DISAGREE_ONE_LINE not in values  # only where the measures disagree


def test_a_queued_calibration_is_not_offered_again_in_the_lab(quick_store: Path) -> None:
    """While the model's calibration waits in the queue (for any session), the lab offers no second one."""
    from kgbias_core.embeddings.store import read_config

    assert read_config(quick_store / "quick-transe").get("calibration") is None  # else the lab offers it anyway
    GATE.clear()
    registry = default_registry()
    blocker = registry.submit(f"blocker {uuid.uuid4().hex[:6]}", _gate, owner="someone")
    calibration = tasks.calibration_task(quick_store / "quick-transe")
    queued = registry.submit("quick-transe: calibration", calibration.run, owner="someone", key=calibration.key,
                             priority=Priority.BACKGROUND)
    try:
        app = page("debiasing_lab").run()
        assert not app.exception
        assert not [b for b in app.button if b.label.startswith("Calibrate")]
        assert registry.latest(calibration.key).job_id == queued  # the page submitted no second one
    finally:
        for status in registry.queue():
            if status.job_id != blocker and status.state is JobState.QUEUED:
                registry.cancel(status.job_id)  # what the page queued behind the blocker (its noise band)
        GATE.set()
        registry.wait(blocker, timeout=PAGE_TIMEOUT)
