"""Planning Du's Add (issue 29): the fewest dummies whose predicted B_gr lands in the target, on the tiny graph, in
the core (against the lab's own Add prediction and a retrain), on the command line and in the lab."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kgbias_app.sections import plan as section
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.cli import main
from kgbias_core.embeddings.store import StoredModel, list_models, load_model, read_config
from kgbias_core.errors import PLAN_ADD_ONE_TARGET, PLAN_EMPTY, MeasureError
from kgbias_core.influence.prediction import addition_step
from kgbias_core.jobs import Progress
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.tasks.plan import plan_edit, verify_plan_task
from kgbias_core.whatif.edits import add_edit, addition, edit_of_record, predict_edit
from kgbias_core.whatif.plan import (
    LINK_PROXY,
    PlanConfig,
    collateral_bands,
    plan_headline,
    plan_summary,
    plan_triples,
    resolve_targets,
)
from kgbias_core.whatif.plan_addition import dummies_c, plan_addition
from kgbias_core.whatif.step_ratio import ADDITIONS, PLANS, observed_step_ratio
from tests.conftest import button, page, texts

#: Journalists (18 men, 11 women): a few female dummies bring B_gr (+0.17) inside 0 +- 0.3 x |B_gr| floor.
OCCUPATION = "journalist"
#: Nurses (5 men, 28 women): male dummies move B_gr further from 0 on this model (+0.52 -> about +0.9).
AWAY = "nurse"
CONFIG = PlanConfig(tolerance=0.3)
#: Politicians (48 men, 11 women): B_gr +0.72 is beyond its noise band (0 +- 0.66), and female dummies bring it in.
LAB_OCCUPATION = "politician"


@pytest.fixture(scope="module")
def analysis(tiny_model: StoredModel) -> ModelAnalysis:
    return ModelAnalysis(tiny_model)


@pytest.fixture(scope="module")
def plan(analysis: ModelAnalysis):
    return plan_addition(analysis, resolve_targets(analysis, [OCCUPATION], config=CONFIG)[0], config=CONFIG)


def test_dummies_c_rebuilds_the_count() -> None:
    for count, gap in [(36, 242), (1, 9999), (5000, 9999), (7, 7), (3, 10), (2, 7)]:
        c = dummies_c(count, gap)
        assert int(round(c * gap)) == count and len(repr(c)) <= 18


def test_the_add_plan_predicts_what_the_lab_predicts_for_its_dummies(analysis: ModelAnalysis, plan) -> None:
    assert plan.kind == "add" and not plan.removed and plan.added is not None and plan.feasible
    (outcome,) = plan.targets
    groups = analysis.groups
    index = groups.index(OCCUPATION)
    gap = int(groups.n_male[index] - groups.n_female[index])
    assert 0 < outcome.n_chosen <= outcome.n_candidates == gap
    # female dummies, as Du's Add adds the rarer gender, two triples each
    assert len(plan.added.added_entities) == outcome.n_chosen and len(plan.added.added_triples) == 2 * outcome.n_chosen
    assert all(":female:" in label for label in plan.added.added_entities)
    # the target's prediction is the lab's Add prediction of the same edit
    lab = predict_edit(analysis, plan.added)
    assert outcome.prediction.point == pytest.approx(lab.point, abs=1e-6)
    assert outcome.target.low <= outcome.after <= outcome.target.high
    # every other occupation's change is B_gr at the moved rows, recomputed here from the step's rows
    step = addition_step(analysis.model, addition(analysis.model, plan.added), hvp=analysis.absolute_hvp)
    changes = plan.collateral.set_index("occupation")["change"]
    for label in changes.index:
        expected = float(step.after[step.groups_after.index(label)] - step.before[step.groups_before.index(label)])
        assert changes[label] == pytest.approx(expected, abs=1e-6)
    row = plan.collateral.set_index("occupation").loc[OCCUPATION]
    assert row["n_female_after"] == row["n_female"] + outcome.n_chosen and row["n_male_after"] == row["n_male"]
    bands, _ = collateral_bands(analysis, noise=None, config=CONFIG)
    assert int(plan.collateral["bounded"].sum()) == int(np.isfinite(bands).sum()) - 1  # the target has its interval
    assert plan.link_share == 0.0
    assert plan_summary(plan)[0] == f"plan: {plan_headline(plan)} — meets its bounds"
    words = plan_triples(analysis, plan)
    assert len(words) == 2 * outcome.n_chosen and words["in words"].str.startswith("dummy ").all()
    assert words["row"].isna().all()


def test_the_planned_add_lands_in_the_target_after_a_retrain(tiny_store: Path, tmp_path: Path, plan) -> None:
    store = Path(shutil.copytree(tiny_store, tmp_path / "store"))
    base = store / "tiny-transe"
    record = verify_plan_task(base=base, plan=plan, evaluate=False).run(Progress())
    row = record.iloc[-1]
    assert row["edit"] == "add" and row["k"] == plan.targets[0].n_chosen
    run = load_model(store / row["run"])
    # B_gr of the retrained graph over its own groups, the dummies counted (as the prediction counts them)
    groups = occupation_groups(run)
    actual = float(group_bias(entity_embeddings=run.entity_embeddings, relation_embeddings=run.relation_embeddings,
                              groups=groups)[groups.index(OCCUPATION)])
    assert row["actual"] == pytest.approx(actual, abs=1e-6)
    assert bool(row["inside_actual"]) and row["target_low"] <= actual <= row["target_high"]
    assert row["predicted_low"] <= actual <= row["predicted_high"]
    # the run's record rebuilds the plan's dummies
    assert edit_of_record(load_model(base), read_config(store / row["run"])["edit"]) == plan.added


def test_an_add_that_moves_b_gr_away_plans_nothing_and_says_so(analysis: ModelAnalysis) -> None:
    target = resolve_targets(analysis, [AWAY], config=CONFIG)[0]
    plan = plan_addition(analysis, target, config=CONFIG)
    assert plan.added is None and not plan.feasible and plan.targets[0].n_chosen == 0
    assert "moves B_gr away from the target" in plan.problems[0]
    # independently: the largest Add (c = 1) predicts B_gr further from the target than now
    groups = analysis.groups
    before = float(analysis.group_bias(AWAY))
    gap = abs(int(groups.n_male[groups.index(AWAY)] - groups.n_female[groups.index(AWAY)]))
    largest = predict_edit(analysis, add_edit(analysis.model, AWAY, c=1.0, cap=gap))
    assert abs(before + largest.point - target.center) > abs(before - target.center)
    assert plan_headline(plan) == "add no dummy (Du's Add)"
    with pytest.raises(MeasureError, match="nothing to verify"):
        plan_edit(plan)
    assert PLAN_EMPTY.startswith("plan: the plan edits nothing")


def test_add_plans_and_removal_plans_read_their_own_ratios() -> None:
    record = pd.DataFrame({"occupation": ["a", "b", "c"], "edit": ["remove", "add", np.nan],
                           "group_bias_before": [1.0, 1.0, 1.0], "predicted": [0.5, 0.0, 0.0],
                           "actual": [0.75, 0.2, 0.6], "step_scale": [1.0, 0.5, 1.0]})
    plans = observed_step_ratio(record, use=PLANS)
    assert plans.n == 2 and plans.value == pytest.approx(np.median([0.5, 0.4]))  # "c": recorded before Add plans
    audit = pd.DataFrame({"predicted": [0.1], "retrained": [0.07]})
    additions = observed_step_ratio(record, use=ADDITIONS, add_audit=audit)
    assert additions.n == 2 and additions.value == pytest.approx(np.median([0.7, 0.4]))
    assert "verified Add plans" in additions.describe()


def test_plan_add_on_the_command_line(tiny_store: Path, tmp_path: Path, capsys, plan) -> None:
    store = Path(shutil.copytree(tiny_store, tmp_path / "store"))
    base = store / "tiny-transe"
    out = tmp_path / "add.csv"
    argv = ["plan", "--model", str(base), "--occupations", "Journalist", "--tolerance", "0.3", "--add",
            "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"plan: {plan_headline(plan)} — meets its bounds" in printed
    assert "step scale 1: no retrain of this model" in printed
    written = pd.read_csv(out)
    assert len(written) == len(plan.added.added_triples) and written.iloc[0]["in words"] + "   (added)" in printed
    assert list_models(store) == ["tiny-transe"]
    assert main(["plan", "--model", str(base), "--occupations", "journalist", "nurse", "--add"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {PLAN_ADD_ONE_TARGET.format(n=2)}"]


def test_the_lab_plans_an_add(writable_store: Path) -> None:
    base = writable_store / "tiny-transe"
    # The noise band first: the lab starts it on opening, and a band arriving mid-test would change the target.
    noise = tasks.noise_band_task(base).run(Progress())
    app = page("debiasing_lab").run()
    app.selectbox(key="lab_occupation").set_value(LAB_OCCUPATION).run()
    app.radio(key="plan_kind").set_value(section.KIND_ADD).run()
    assert section.NO_ADD_SCALE in texts(app.caption)
    assert not [n for n in app.number_input if n.key == "plan_max_triples"]  # an Add removes nothing
    button(app, section.BUILD_BUTTON).click().run()
    assert not app.exception
    analysis = ModelAnalysis(load_model(base))
    expected = plan_addition(analysis, resolve_targets(analysis, [LAB_OCCUPATION], noise=noise)[0], noise=noise)
    assert expected.added is not None  # the noise band's target is beyond B_gr now: dummies are needed
    said = texts(app.success) if expected.feasible else texts(app.warning)
    assert (section.FEASIBLE if expected.feasible else section.INFEASIBLE).format(what=plan_headline(expected)) in said
    (outcome,) = expected.targets
    assert f"{outcome.n_chosen} dummies, of at most {outcome.n_candidates}." in texts(app.caption)
    assert f"{LINK_PROXY}: " not in texts(app.caption)  # an Add removes nothing
    table = next(t.value for t in app.dataframe if "in words" in t.value.columns)
    assert table["in words"].tolist() == plan_triples(analysis, expected)["in words"].tolist()
    assert button(app, section.VERIFY_BUTTON) is not None
    # two targets: an Add plans one, and the lab says so and offers no build
    app.multiselect(key=section.target_key(LAB_OCCUPATION)).set_value([LAB_OCCUPATION, AWAY]).run()
    assert section.ADD_ONE_TARGET in texts(app.caption)
    assert button(app, section.BUILD_BUTTON).disabled
