"""The dashboard's words: numbers, the reading of each measure's sign, job progress lines."""

from __future__ import annotations

import math

from kgbias_app import texts
from kgbias_core.influence.scale import Calibration, predict
from kgbias_core.jobs import JobState, JobStatus, ProgressSnapshot


def test_fmt_signs_numbers_and_names_nan_undefined() -> None:
    assert texts.fmt(0.12345) == "+0.123"
    assert texts.fmt(-0.5, 1) == "-0.5"
    assert texts.fmt(math.nan) == texts.fmt(None) == "undefined"


def test_sentence_reads_the_sign_as_male_or_female_leaning() -> None:
    for measure in texts.SENTENCES:
        assert "male-leaning" in texts.sentence(measure, 0.2) or "leans male" in texts.sentence(measure, 0.2)
        assert "female" in texts.sentence(measure, -0.2)
    assert texts.sentence("group_bias", math.nan) == texts.UNDEFINED_SENTENCE
    assert texts.sentence("group_bias", 0.0) == texts.ZERO_SENTENCE


def test_a_predicted_change_is_headlined_only_when_calibrated() -> None:
    bare = predict(-1.131, scale=None)
    assert texts.predicted_value(bare) == "uncalibrated" and "Σ δ_z = -1.131" in texts.predicted_range(bare)
    single = predict(-1.0, scale=0.3)
    assert texts.predicted_value(single) == "-0.300" and "no range" in texts.predicted_range(single)
    ranged = predict(-1.0, scale=0.3, calibration=Calibration(scale=0.3, low=0.25, high=0.35, occupations=("a", "b"),
                                                                per_occupation=(0.25, 0.35)))
    assert "Calibrated change: -0.350 to -0.250" in texts.predicted_range(ranged)
    assert "Calibrated B_gr after: +0.150 to +0.250" in texts.predicted_range(ranged, before=0.5)


def test_noise_sentence_compares_the_change_with_the_spread() -> None:
    assert texts.noise_sentence(0.05, None) == texts.NO_NOISE_BAND
    assert "larger than that noise" in texts.noise_sentence(-0.05, 0.01)
    assert "within that noise" in texts.noise_sentence(0.005, 0.01)


def status(state: JobState, *, loss: float | None = None, left: float | None = None) -> JobStatus:
    progress = ProgressSnapshot(stage="training", step=3, total=10, loss=loss, message="epoch 3/10", started=0.0,
                                elapsed=1.0, fraction=0.3, seconds_left=left, cancel_requested=False)
    return JobStatus(job_id="j", name="synthetic-transe", owners=("s",), key="k", state=state,
                     queue_position=2 if state is JobState.QUEUED else None, progress=progress, error=None,
                     has_result=False, submitted=0.0)


def test_job_progress_line() -> None:
    assert texts.job_progress(status(JobState.QUEUED)) == "synthetic-transe: queued (position 2)"
    assert texts.job_progress(status(JobState.RUNNING)) == (
        "synthetic-transe: training, epoch 3/10 (step 3/10; estimating…)")
    assert texts.job_progress(status(JobState.RUNNING, loss=0.12345, left=41.6)) == (
        "synthetic-transe: training, epoch 3/10 (step 3/10, loss 0.1235; about 42 s left)")
