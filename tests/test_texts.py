"""The dashboard's words: numbers, the reading of each measure's sign, job progress lines."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from kgbias_app import texts
from kgbias_core.influence.scale import Calibration, predict
from kgbias_core.jobs import JobState, JobStatus, ProgressSnapshot
from kgbias_core.subpopulations import SubpopulationComparison


def test_fmt_signs_numbers_and_names_nan_undefined() -> None:
    assert texts.fmt(0.12345) == "+0.123"
    assert texts.fmt(-0.5, 1) == "-0.5"
    assert texts.fmt(math.nan) == texts.fmt(None) == "undefined"


def test_a_tiny_negative_prints_as_zero_without_a_sign() -> None:
    assert texts.fmt(-0.00004) == texts.fmt(0.00004) == "0.000"
    assert texts.number(-0.00004) == "0.000" and texts.number(-0.0004, 4) == "-0.0004"
    assert texts.number(None) == texts.number(math.nan) == "undefined"


def test_a_sentence_states_a_direction_only_when_the_interval_excludes_zero() -> None:
    assert "leans male" in texts.sentence("group_bias", 0.3, 0.1, 0.5)
    assert "excludes 0" in texts.sentence("group_bias", 0.3, 0.1, 0.5)
    assert "female-leaning" in texts.sentence("individual_bias_weighted", -0.3, -0.5, -0.1)
    straddles = texts.sentence("group_bias", 0.3, -0.1, 0.5)
    assert straddles.startswith("No clear lean (interval includes 0)") and "male" not in straddles
    assert texts.sentence("group_bias", 0.3, 0.3, 0.3) == texts.NO_INTERVAL_LEAN  # one man, one woman
    assert texts.sentence("group_bias", 0.3, math.nan, math.nan) == texts.NO_INTERVAL_LEAN
    assert texts.sentence("projection_bias", -0.2).endswith(texts.PROJECTION_NO_INTERVAL)  # B_wo has none


def test_the_agreement_line_names_which_measures_lean_which_way() -> None:
    row = {"group_bias": 0.5, "group_bias_low": 0.2, "group_bias_high": 0.8, "projection_bias": -0.1,
           "fisher_bp": 0.03, "fisher_bp_low": 0.02, "fisher_bp_high": 0.04, "individual_bias_vanilla": 0.1,
           "individual_bias_vanilla_low": -0.1, "individual_bias_vanilla_high": 0.2,
           "individual_bias_weighted": math.nan, "individual_bias_weighted_low": math.nan,
           "individual_bias_weighted_high": math.nan}
    assert texts.agreement(row) == (
        "**The measures disagree in direction:** B_gr, Fisher's b_p lean male; B_wo leans female; "
        "B_in (all persons) shows no clear lean. Undefined: B_in (women + men).")
    assert texts.agreement(row | {"projection_bias": 0.1}).startswith("**The measures agree in direction:**")


def test_sentence_reads_the_sign_as_male_or_female_leaning() -> None:
    for measure in texts.SENTENCES:
        male = texts.sentence(measure, 0.2, 0.1, 0.3)
        assert "male-leaning" in male or "leans male" in male
        assert "female" in texts.sentence(measure, -0.2, -0.3, -0.1)
    assert texts.sentence("group_bias", math.nan) == texts.UNDEFINED_SENTENCE
    assert texts.sentence("group_bias", 0.0) == texts.ZERO_SENTENCE


def test_a_prediction_names_its_estimator_and_interval_and_the_old_one_is_labelled() -> None:
    from kgbias_core.influence.prediction import ESTIMATOR, OLD_ESTIMATOR, WhatIfPrediction, with_noise_floor
    from kgbias_core.readings import old_estimate_sentence, prediction_sentence

    bare = WhatIfPrediction(point=-0.3, low=-0.45, high=-0.2, estimator=ESTIMATOR)
    assert prediction_sentence(bare) == (f"Estimator: {ESTIMATOR}. Predicted change: -0.450 to -0.200; no noise band "
                                         "yet, so retraining noise comes on top.")
    floored = with_noise_floor(bare, 0.05)
    assert (floored.low, floored.high, floored.floor) == pytest.approx((-0.5, -0.15, 0.05))
    assert prediction_sentence(floored, before=0.6) == (f"Estimator: {ESTIMATOR}. Predicted B_gr after: +0.100 to "
                                                        "+0.450, the retraining noise band (±0.050) included.")
    assert with_noise_floor(bare, None) == bare and with_noise_floor(bare, math.nan) == bare
    # an import's floor is named a prior: read from the prediction's field, whatever its estimator's words
    imported = with_noise_floor(replace(bare, redrawn=True), 0.05)
    assert imported.redrawn and "an import has no noise band" in prediction_sentence(imported)
    assert "an import" not in prediction_sentence(floored)
    assert "an import is not retrained here" in prediction_sentence(replace(bare, redrawn=True))
    assert "ranks the triples" in old_estimate_sentence(predict(-1.131, scale=None))
    ranged = predict(-1.0, scale=0.3, calibration=Calibration(scale=0.3, low=0.25, high=0.35, occupations=("a", "b"),
                                                                per_occupation=(0.25, 0.35)))
    assert old_estimate_sentence(ranged) == f"Beside it, {OLD_ESTIMATOR}: {ranged.summary(3)}."


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


def test_the_permutation_test_reads_as_one_sentence_with_its_verdict() -> None:
    test = SubpopulationComparison("us", "uk", "US", "UK", 0.41234, 0.012, 2000, note="")
    line = texts.comparison_sentence("Actor", "nationality", test)
    assert line.startswith("Among Actor's persons, B_gr within US minus within UK is +0.412.")
    assert "2,000 times gives p = 0.012: a difference this large rarely arises by chance" in line
    assert "could well arise by chance" in texts.comparison_sentence(
        "Actor", "nationality", SubpopulationComparison("us", "uk", "US", "UK", -0.1, 0.4, 2000, note=""))
    none = SubpopulationComparison("", "", "", "", math.nan, math.nan, 2000, note="fewer than two values")
    assert texts.comparison_sentence("Actor", "nationality", none) == (
        "No test of the difference: fewer than two values.")


def test_a_b_wo_below_its_floor_is_no_lean() -> None:
    """Issue 28: B_wo = -0.011 was "female-leaning"; below the floor it reads as no clear lean, and says why."""
    from kgbias_core.readings import NO_INTERVAL_FLOORS

    floor = NO_INTERVAL_FLOORS["projection_bias"]
    said = texts.sentence("projection_bias", -0.011)
    assert "female" not in said and "No clear lean" in said and str(floor) in said
    assert "female-leaning" in texts.sentence("projection_bias", -2 * floor)
    row = {"group_bias": 0.5, "group_bias_low": 0.2, "group_bias_high": 0.8, "projection_bias": -0.011,
           "fisher_bp": 0.01, "fisher_bp_low": 0.005, "fisher_bp_high": 0.02,
           "individual_bias_vanilla": 0.1, "individual_bias_vanilla_low": 0.05, "individual_bias_vanilla_high": 0.2,
           "individual_bias_weighted": 0.1, "individual_bias_weighted_low": 0.05,
           "individual_bias_weighted_high": 0.2}
    assert "B_wo shows no clear lean" in texts.agreement(row)


def test_the_census_caption_counts_what_its_table_shows() -> None:
    """Issue 28: "62 paired occupations" above a table of 61; the count is now the table's n."""
    said = texts.census_table_caption(n_paired=62, n_used=[61, 61, 60])
    assert "across the 61 paired occupations" in said and "2 of the 62 paired occupations" in said
    assert texts.census_table_caption(n_paired=5, n_used=[5, 5]) == texts.CENSUS_TABLE.format(n=5)
