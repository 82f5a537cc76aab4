"""Du et al.'s claims measured on a model: each computation against a brute-force loop on the tiny
graph, the retrain-based claims against an actual Add what-if, and the command end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from kgbias_core import findings, tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.jobs import Progress
from kgbias_core.tables import measures_table
from kgbias_core.tasks import add_runs, findings_inputs, findings_task, saved_curves, saved_findings
from kgbias_core.whatif.runs import noise_spread
from tests.conftest import naive_groups


@pytest.fixture(scope="module")
def analysis(tiny_model) -> ModelAnalysis:
    return ModelAnalysis(tiny_model)


@pytest.fixture(scope="module")
def measures(analysis) -> pd.DataFrame:
    return measures_table(analysis, n_resamples=50)


def test_verdicts_follow_the_interval() -> None:
    assert findings.direction_verdict(0.1, 0.5, expected=+1) == findings.REPRODUCES
    assert findings.direction_verdict(-0.5, -0.1, expected=+1) == findings.CONTRADICTS
    assert findings.direction_verdict(-0.5, -0.1, expected=-1) == findings.REPRODUCES
    assert findings.direction_verdict(-0.1, 0.2, expected=+1) == findings.INCONCLUSIVE
    assert findings.direction_verdict(math.nan, 0.2, expected=+1) == findings.NOT_MEASURED
    assert findings.majority_verdict(0.55, 0.9) == findings.REPRODUCES
    assert findings.majority_verdict(0.1, 0.45) == findings.CONTRADICTS
    assert findings.majority_verdict(0.4, 0.6) == findings.INCONCLUSIVE


def test_gender_ratio_finding_is_pearson_over_the_balanced_occupations(measures) -> None:
    rows = [row for row in measures.itertuples() if row.n_male >= 5 and row.n_female >= 5]
    assert len(rows) >= 3
    x = [math.log(row.n_male / row.n_female) for row in rows]
    y = [row.group_bias for row in rows]
    expected = stats.pearsonr(x, y)
    found = findings.gender_ratio_finding(measures)
    assert found.n == len(rows)
    assert found.value == pytest.approx(expected.statistic)
    assert found.p_value == pytest.approx(expected.pvalue)
    assert found.low <= found.value <= found.high


def test_bootstrap_interval_of_a_mean_covers_it_and_is_reproducible() -> None:
    values = np.random.default_rng(1).normal(0.3, 1.0, 200)
    interval = findings.bootstrap_interval(lambda i: float(values[i].mean()), len(values))
    assert interval == findings.bootstrap_interval(lambda i: float(values[i].mean()), len(values))
    half = 1.96 * values.std(ddof=1) / math.sqrt(len(values))  # the normal interval, for comparison
    assert interval[0] == pytest.approx(values.mean() - half, abs=0.04)
    assert interval[1] == pytest.approx(values.mean() + half, abs=0.04)


def test_aggregation_difference_is_the_difference_of_the_two_correlations(measures) -> None:
    weighted, vanilla, difference = findings.aggregation_findings(measures)
    frame = findings.balanced_occupations(measures)
    assert weighted.value == pytest.approx(stats.pearsonr(frame.individual_bias_weighted, frame.group_bias)[0])
    assert vanilla.value == pytest.approx(stats.pearsonr(frame.individual_bias_vanilla, frame.group_bias)[0])
    assert difference.value == pytest.approx(weighted.value - vanilla.value)


def test_top_triple_counts_match_a_loop_over_the_triples(tiny_model, analysis, measures) -> None:
    occupation = findings.balanced_occupations(measures)["occupation"].iloc[0]
    counts = findings.top_triple_counts(analysis, occupation, fraction=0.05)
    influence = analysis.influence(occupation).tolist()
    (men, women), genders = naive_groups(tiny_model)[0][occupation], {}
    labels, relations = tiny_model.entity_labels, tiny_model.relation_labels
    for sign, key in (("positive", lambda v: v), ("negative", lambda v: -v)):
        moving = [i for i, v in enumerate(influence) if key(v) > 0]
        top = sorted(moving, key=lambda i: -key(influence[i]))[:max(1, math.ceil(0.05 * len(moving)))]
        persons = [labels[e] for i in top for e in (int(tiny_model.triples[i, 0]), int(tiny_model.triples[i, 2]))
                   if labels[e] in men | women]
        assert counts[f"n_{sign}"] == len(top)
        assert counts[f"occupation_{sign}"] == sum(relations[int(tiny_model.triples[i, 1])] == "occupation"
                                                  for i in top)
        assert counts[f"persons_{sign}"] == len(persons)
        assert counts[f"women_{sign}"] == sum(p in women for p in persons)
        assert counts[f"men_{sign}"] == sum(p in men for p in persons)
        genders[sign] = persons
    degree = {}
    for h, _, t in tiny_model.triples.tolist():
        degree[h] = degree.get(h, 0) + 1
        degree[t] = degree.get(t, 0) + 1
    pairs = []
    for i, v in enumerate(influence):
        h, _, t = tiny_model.triples[i].tolist()
        held = [degree[e] for e in (h, t) if labels[e] in men | women]
        if v != 0 and held:
            pairs.append((max(held), abs(v)))
    assert counts["rho_degree"] == pytest.approx(stats.spearmanr(*zip(*pairs, strict=True)).statistic)


def test_pooled_top_shares_sum_the_counts_over_occupations() -> None:
    counts = pd.DataFrame({"n_positive": [10, 30, 5], "occupation_positive": [9, 12, 5],
                           "n_negative": [4, 4, 4], "occupation_negative": [1, 2, 3],
                           "persons_positive": [10, 10, 10], "women_positive": [10, 9, 8],
                           "persons_negative": [5, 5, 5], "men_negative": [0, 1, 2],
                           "rho_degree": [-0.2, -0.4, math.nan]})
    share = {f.key: f for f in findings.top_triple_findings(counts)}
    assert share["occupation_share_positive"].value == pytest.approx(26 / 45)
    assert share["occupation_share_negative"].value == pytest.approx(6 / 12)
    assert share["women_in_top_positive"].value == pytest.approx(27 / 30)
    assert share["men_in_top_negative"].value == pytest.approx(3 / 15)
    assert share["rho_degree_influence"].value == pytest.approx(-0.3)
    assert share["rho_degree_influence"].n == 2


def test_removal_finding_compares_the_strategies_at_the_largest_matched_k() -> None:
    curve = pd.DataFrame({"strategy": ["IF-REMOVE", "Random-REMOVE", "IF-REMOVE", "Random-REMOVE", "IF-REMOVE"],
                          "k": [0, 0, 10, 10, 20], "group_bias": [0.5, 0.5, -0.1, 0.45, -0.05]})
    found = findings.removal_finding(curve, occupation_name="Nurse", spread=0.1)
    assert found.scope == "Nurse, k = 10"
    assert found.value == pytest.approx(0.45 - (-0.1))
    assert (found.low, found.high) == pytest.approx((0.45, 0.65))
    assert found.verdict == findings.REPRODUCES and "(past zero)" in found.detail
    assert findings.removal_finding(curve, occupation_name="Nurse", spread=None).verdict == findings.INCONCLUSIVE
    assert findings.removal_finding(curve, occupation_name="Nurse", spread=0.6).verdict == findings.INCONCLUSIVE
    female_leaning = curve.assign(group_bias=-curve["group_bias"])  # B_gr < 0: towards zero is upwards
    assert findings.removal_finding(female_leaning, occupation_name="Nurse", spread=0.1).value == pytest.approx(0.55)


def test_census_findings_carry_the_fisher_z_interval() -> None:
    correlations = pd.DataFrame({"measure": ["group_bias"], "r": [0.5], "p_value": [0.01], "n": [28]})
    (found,) = findings.census_findings(correlations)
    half = 1.959964 / math.sqrt(25)
    assert (found.low, found.high) == pytest.approx((math.tanh(math.atanh(0.5) - half),
                                                     math.tanh(math.atanh(0.5) + half)))
    assert found.paper == "0.668"
    assert found.verdict == findings.REPRODUCES


def _naive_bias(model, occupation: str, persons: set[str]) -> float:
    """B_gr over the given persons only, by a loop (METHODS §1)."""
    (men, women), _ = naive_groups(model)[0][occupation], None
    e, r = model.entity_embeddings, model.relation_embeddings
    o, r_p = model.entity_id(occupation), model.relation_id(model.schema.occupation_relation)

    def psi(label: str) -> float:
        return float((e[model.entity_id(label)] + r[r_p] - e[o]).pow(2).sum())

    female = [psi(p) for p in women & persons]
    male = [psi(p) for p in men & persons]
    return sum(female) / len(female) - sum(male) / len(male)


@pytest.fixture(scope="module")
def findings_store(tmp_path_factory, quick_model) -> Path:
    """A store holding the quick model, with the retrains of claims 4-5 run by the command for one
    occupation (3 noise seeds + IF/Random-REMOVE + Add: six 6-epoch retrains of the tiny graph)."""
    store = tmp_path_factory.mktemp("findings-store")
    save_model(quick_model, store)
    analysis = ModelAnalysis(quick_model)
    measures = measures_table(analysis, n_resamples=20)
    occupation = findings.balanced_occupations(measures).sort_values("n_male")["occupation"].iloc[-1]
    out = store.parent / "findings.json"
    no_census = tmp_path_factory.mktemp("no-data")  # whatever KGBIAS_DATA_DIR says: no census file, claim 6 unmeasured
    assert main(["findings", "--model", str(store / quick_model.name), "--retrain", occupation, "--k", "20",
                 "--data-dir", str(no_census), "--out", str(out)]) == 0
    return store


def test_findings_command_runs_the_retrains_and_writes_every_claim(findings_store: Path, quick_model) -> None:
    document = json.loads((findings_store.parent / "findings.json").read_text())
    assert document["model"] == quick_model.name and len(document["data_hash"]) == 64
    claims = {row["claim"]: row for row in document["findings"]}
    assert set(claims) == {"1", "2", "3a", "3b", "3c", "4", "5", "6"}
    assert claims["4"]["verdict"] != findings.NOT_MEASURED and claims["4"]["scope"].endswith("k = 20")
    assert claims["6"]["verdict"] == findings.NOT_MEASURED  # a synthetic graph has no census pairing
    keys = {row["key"] for row in document["findings"]}
    assert {"add_all", "add_original", "if_minus_random"} <= keys


def test_the_retrain_findings_state_the_newton_prediction_with_its_estimator(findings_store: Path,
                                                                             quick_model) -> None:
    """Issue 25: claims 4 and 5 say what the Newton step predicted before the retrain, named and with its interval
    (the curve's IF-REMOVE prediction, the Add run's edit predicted on the base)."""
    from kgbias_core.influence.prediction import ADD_ESTIMATOR, ESTIMATOR
    from kgbias_core.whatif.edits import edit_of_record, predict_edit

    document = json.loads((findings_store.parent / "findings.json").read_text())
    by_key = {row["key"]: row for row in document["findings"]}
    assert "; predicted IF-REMOVE B_gr after " in by_key["if_minus_random"]["detail"]
    assert f"({ESTIMATOR}" in by_key["if_minus_random"]["detail"]
    base_dir = findings_store / quick_model.name
    (run_dir,) = add_runs(base_dir)
    base = ModelAnalysis(load_model(base_dir))
    edit = edit_of_record(base.model, load_model(run_dir).edit)
    assert edit is not None and len(edit.added_entities) == load_model(run_dir).edit["n_added_entities"]
    predicted = predict_edit(base, edit, spread=noise_spread(tasks.saved_noise_band(base_dir), edit.occupation))
    before = float(base.group_bias(edit.occupation))
    assert (f"predicted B_gr after {before + predicted.point:+.3f} [{before + predicted.low:+.3f}, "
            f"{before + predicted.high:+.3f}] ({ADD_ESTIMATOR})") in by_key["add_all"]["detail"]


def test_claim_5_scales_the_add_prediction_by_the_add_audit(findings_store: Path, quick_model,
                                                             tmp_path: Path) -> None:
    """Issue 25: once the model has its Add audit, claim 5's prediction is the lab's, times the audit's ratio; the
    findings made before it are not read back (their inputs lacked the ratio)."""
    import shutil

    from kgbias_core.whatif.edits import edit_of_record, predict_edit
    from kgbias_core.whatif.step_ratio import ADDITIONS

    store = Path(shutil.copytree(findings_store, tmp_path / "store"))
    base_dir = store / quick_model.name
    before_audit = findings_inputs(base_dir)
    tasks.add_audit_task(base_dir).run(Progress())
    ratio = tasks.model_step_ratio(base_dir, use=ADDITIONS)
    assert ratio is not None and findings_inputs(base_dir) != before_audit
    assert saved_findings(base_dir) is None  # made without the ratio: computed again
    frame = findings_task(base_dir).run(Progress())
    detail = frame.loc[frame["key"] == "add_all", "detail"].iloc[0]
    (run_dir,) = add_runs(base_dir)
    base = ModelAnalysis(load_model(base_dir))
    edit = edit_of_record(base.model, load_model(run_dir).edit)
    predicted = predict_edit(base, edit, spread=noise_spread(tasks.saved_noise_band(base_dir), edit.occupation),
                             scale=ratio.value)
    before = float(base.group_bias(edit.occupation))
    assert f"predicted B_gr after {before + predicted.point:+.3f}" in detail and f"x {ratio.value:.2f}" in detail


def test_add_finding_over_the_original_persons_matches_a_loop(findings_store: Path, quick_model) -> None:
    base_dir = findings_store / quick_model.name
    (run_dir,) = add_runs(base_dir)
    what_if, base = load_model(run_dir), ModelAnalysis(load_model(base_dir))
    occupation = what_if.edit["occupation"]
    original = {label for label in what_if.entity_labels if not label.startswith(findings.DUMMY_PREFIX)}
    everyone = set(what_if.entity_labels)
    all_persons, original_persons = findings.add_findings(base, ModelAnalysis(what_if), occupation=occupation,
                                                          spread=0.01)
    before = abs(_naive_bias(base.model, occupation, set(base.model.entity_labels)))
    assert original_persons.value == pytest.approx(before - abs(_naive_bias(what_if, occupation, original)), abs=1e-5)
    assert all_persons.value == pytest.approx(before - abs(_naive_bias(what_if, occupation, everyone)), abs=1e-5)
    assert all_persons.value != pytest.approx(original_persons.value)


def test_findings_are_cached_with_their_inputs_and_recomputed_when_those_change(findings_store: Path,
                                                                               quick_model) -> None:
    base_dir = findings_store / quick_model.name
    cached = saved_findings(base_dir)
    assert cached is not None and len(cached) >= 10
    inputs = findings_inputs(base_dir)
    assert inputs["noise_band"] and len(inputs["curves"]) == 1 and len(inputs["add_runs"]) == 1
    (occupation,) = saved_curves(base_dir)
    floored = saved_curves(base_dir)[occupation]
    (findings_store / quick_model.name / "results" / "noise_band.csv").unlink()
    assert saved_findings(base_dir) is None  # made with a noise band that is gone
    frame = findings_task(base_dir).run(Progress())
    by_key = frame.set_index("key")
    assert by_key.loc["if_minus_random", "verdict"] == findings.INCONCLUSIVE  # no band: cannot be told from noise
    # Claim 4 reads the lab's prediction of now: the curve was predicted again without the floor, its retrains kept.
    curve = saved_curves(base_dir)[occupation]
    assert floored["floor"].iloc[0] > 0 and curve["floor"].isna().all()
    assert curve["group_bias"].equals(floored["group_bias"])
    row = curve[(curve.strategy == "IF-REMOVE") & (curve.k == 20)].iloc[0]
    assert row.predicted_high - row.predicted_low < float(floored.loc[row.name, "predicted_high"]
                                                          - floored.loc[row.name, "predicted_low"])
    assert f"[{row.predicted_low:+.3f}, {row.predicted_high:+.3f}]" in by_key.loc["if_minus_random", "detail"]
    assert saved_findings(base_dir) is not None
    assert occupation in findings_inputs(base_dir)["curves"]


def test_a_correlation_claims_a_direction_only_when_the_test_agrees() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    strong = findings.correlation_finding(x, x + rng.normal(scale=0.5, size=40), claim="1", key="k", statement="",
                                          paper="", scope="")
    assert strong.p_value < 0.05 and strong.verdict == findings.REPRODUCES
    flat = findings.correlation_finding(x, rng.normal(size=40), claim="1", key="k", statement="", paper="", scope="")
    assert flat.verdict == findings.INCONCLUSIVE


def test_side_by_side_puts_each_models_figure_in_its_column() -> None:
    measured = findings.removal_finding(
        pd.DataFrame({"strategy": ["IF-REMOVE", "Random-REMOVE"] * 2, "k": [0, 0, 5, 5],
                      "group_bias": [0.3, 0.3, 0.0, 0.29]}), occupation_name="Actor", spread=0.05)
    ratio = findings.Finding(claim="1", key="r_bgr_log_ratio", statement="s", paper="positive", scope="9",
                             value=0.4, low=0.1, high=0.6, p_value=0.01, n=9, verdict=findings.REPRODUCES, detail="")
    missing = findings._not_measured("4", "if_minus_random", "", "no removal curve")
    table = findings.side_by_side({"a": findings.findings_frame([ratio, measured]),
                                   "b": findings.findings_frame([ratio, missing])})
    assert list(table.columns) == ["claim", "statement", "paper", "a", "b"]
    assert table["claim"].tolist() == ["1", "4"]
    assert table.loc[0, "a"] == table.loc[0, "b"] == "+0.400 [+0.100, +0.600], p 0.01: reproduces"
    assert table.loc[1, "a"].startswith("Actor, k = 5: +0.290") and table.loc[1, "b"].startswith("not measured")


def test_claim_5_is_never_computed_from_an_add_run_of_another_c(tiny_store, tmp_path: Path) -> None:
    """The issue: findings computed claim 5 from an extreme `--c 1e9` Add run. Only Du's c = 0.5 counts; the
    finding says why the other run was not used."""
    import shutil

    from kgbias_core.cli import main
    from kgbias_core.embeddings.store import config_fingerprint, read_config

    store = tmp_path / "store"
    shutil.copytree(tiny_store / "tiny-transe", store / "base")
    shutil.copytree(tiny_store / "tiny-transe", store / "base-add-extreme")
    run_config = read_config(store / "base-add-extreme")
    run_config.update(base_model="base", edit={"kind": "add", "occupation": "nurse", "base": config_fingerprint(
        read_config(store / "base")), "strategy": "add c=50.0 (1150 male dummies)", "n_added_entities": 1150})
    (store / "base-add-extreme" / "config.json").write_text(json.dumps(run_config))
    out = tmp_path / "findings.json"
    assert main(["findings", "--model", str(store / "base"), "--out", str(out)]) == 0
    claim_5 = [f for f in json.loads(out.read_text())["findings"] if f["claim"] == "5"]
    assert len(claim_5) == 1 and claim_5[0]["verdict"] == "not measured"
    assert "base-add-extreme (c = 50.0)" in claim_5[0]["detail"] and "c = 0.5" in claim_5[0]["detail"]
