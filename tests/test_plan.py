"""The planner (issue 29) on the tiny synthetic graph: its pieces against plain loops, its prediction against the
Newton-step estimator it reuses, and its plan against a masked retrain."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.results import RESULTS
from kgbias_core.embeddings.store import StoredModel, load_model, read_config
from kgbias_core.embeddings.training import train_model
from kgbias_core.errors import PLAN_BAD_INTERVAL, PLAN_CAPPED, PLAN_NO_TARGETS, PLAN_TARGET_NOT_PLANNED, MeasureError
from kgbias_core.influence.prediction import DISTANCE_NOTES, predict_removal
from kgbias_core.influence.retraining_check import masked_retrain_bias
from kgbias_core.jobs import Progress
from kgbias_core.tasks.plan import plan_run_dir, verify_plan_task
from kgbias_core.whatif.plan import (
    PlanConfig,
    Target,
    collateral_bands,
    greedy_order,
    group_facts,
    link_costs,
    newton_units,
    plan_removal,
    plan_summary,
    plan_triples,
    resolve_targets,
)
from kgbias_core.whatif.step_ratio import EDITS, PLANS, observed_step_ratio, saved_verifications

from .conftest import TINY_TRAINING

#: The target of the retrain tests: the tiny graph's journalists (18 men, 11 women in the seed-7 graph).
OCCUPATION = "journalist"
#: Wide enough for the estimator's spread (retrained/predicted 0.34-1.62 on this graph, prediction.py).
TOLERANCE = 0.3


@pytest.fixture(scope="module")
def analysis(tiny_model: StoredModel) -> ModelAnalysis:
    return ModelAnalysis(tiny_model)


@pytest.fixture(scope="module")
def plan(analysis: ModelAnalysis):
    config = PlanConfig(tolerance=TOLERANCE)
    return plan_removal(analysis, resolve_targets(analysis, [OCCUPATION], config=config), config=config)


def test_link_share_is_the_mean_removed_share_of_the_test_queries_entities(tiny_model: StoredModel) -> None:
    triples = tiny_model.triples.tolist()
    degree: dict[int, int] = {}
    for h, _, t in triples:
        degree[h] = degree.get(h, 0) + 1
        degree[t] = degree.get(t, 0) + 1
    removed = [0, 5, 17, 17 + len(triples) // 2]
    gone: dict[int, int] = {}
    for i in removed:
        h, _, t = triples[i]
        gone[h] = gone.get(h, 0) + 1
        gone[t] = gone.get(t, 0) + 1
    test = tiny_model.test_triples.tolist()
    shares = [(gone.get(h, 0) + gone.get(t, 0)) / (degree.get(h, 0) + degree.get(t, 0))
              for h, _, t in test if degree.get(h, 0) + degree.get(t, 0) > 0]
    expected = sum(shares) / len(test)
    assert expected > 0
    assert link_costs(tiny_model)[removed].sum() == pytest.approx(expected, rel=1e-9)


def test_greedy_order_keeps_every_prefix_within_the_budgets() -> None:
    rng = np.random.default_rng(0)
    collateral = rng.normal(0, 1, (4, 300)) * (rng.random((4, 300)) < 0.3)
    link = rng.random(300) * 0.01
    budget = np.array([2.0, 1.0, 3.0, 0.5])
    order = rng.permutation(300)
    taken = greedy_order(order, collateral, link, budget=budget, used=np.zeros(4), link_used=0.0, link_bound=0.5,
                         limit=120, block=7)
    # the oracle: the same rule, one candidate at a time
    expected, used, spent = [], np.zeros(4), 0.0
    for j in order:
        if len(expected) == 120:
            break
        if (np.abs(used + collateral[:, j]) <= budget).all() and spent + link[j] <= 0.5:
            expected.append(j)
            used, spent = used + collateral[:, j], spent + link[j]
    assert taken.tolist() == expected
    assert 0 < len(expected) <= 120
    running = np.cumsum(collateral[:, taken], axis=1)
    assert (np.abs(running) <= budget[:, None] + 1e-12).all()


def test_newton_units_is_the_median_closed_form_over_step_ratio_where_the_pass_was_bound() -> None:
    used = np.array([0.9, -2.0, 0.1, 1.0, 0.5])  # closed-form sums of the set on five occupations
    changes = np.array([0.1, 0.4, 0.0, -0.5, 0.0])  # the Newton step's change on them
    budget = np.ones(5)
    # bound (at least half the budget spent): 0.9, 2.0, 1.0 and 0.5 -> ratios 9, 5, 2 and 0.5 / 0 (huge)
    assert newton_units(used, changes, budget) == pytest.approx(7.0)  # their median
    assert newton_units(used, changes, budget, cap=4.0) == pytest.approx(4.0)
    assert newton_units(used, changes, budget * 10) == 1.0  # nothing bound the pass: the units as they were


def test_a_plan_the_closed_form_bands_stop_short_is_planned_again_in_the_steps_units(analysis: ModelAnalysis) -> None:
    """On the tiny graph the closed form overstates the step on the other occupations 2-5 fold (as on FB13), so
    tight bands stop the greedy pass while the step leaves them: planned again in the step's units, a plan gets
    nearer its target and breaks no more bounds (the planner's own ranking of rounds)."""
    def rank(plan) -> tuple[int, float]:
        (outcome,) = plan.targets
        t = outcome.target
        missed = max(t.low - outcome.after, outcome.after - t.high, 0.0)
        return int(missed > 0) + plan.n_outside, missed

    improved = 0
    for occupation in ("engineer", "film_director", "dancer", "footballer"):
        before = float(analysis.group_bias(occupation))
        target = [Target(occupation, -0.02 * abs(before), 0.02 * abs(before), "given")]
        closed = plan_removal(analysis, target, config=PlanConfig(tolerance=0.1, newton_units=False))
        if closed.targets[0].inside or closed.n_outside:
            continue  # only a plan stopped short with every band left is planned again
        steps = plan_removal(analysis, target, config=PlanConfig(tolerance=0.1))
        assert rank(steps) <= rank(closed), occupation
        improved += rank(steps) < rank(closed)
        if steps.band_units > 1:  # the plan says it, with the units
            assert f"each band was worth {steps.band_units:.1f} times" in "\n".join(plan_summary(steps))
    assert improved


def test_targets_use_the_noise_band_else_the_tolerance_and_refuse_bad_intervals(analysis: ModelAnalysis) -> None:
    bias = float(analysis.group_bias(OCCUPATION))
    config = PlanConfig(tolerance=0.2)
    (plain,) = resolve_targets(analysis, ["Journalist"], config=config)  # a readable name finds the label
    groups, biases = analysis.groups, analysis.group_bias().double().numpy()
    bounded = np.isfinite(biases) & (np.minimum(groups.n_male.numpy(), groups.n_female.numpy()) >= 5)
    half = 0.2 * max(abs(bias), float(np.median(np.abs(biases[bounded]))))  # floored at the median |B_gr|
    assert (plain.occupation, plain.low, plain.high) == (OCCUPATION, pytest.approx(-half), pytest.approx(half))
    noise = pd.DataFrame({"occupation": [OCCUPATION], "spread": [0.05]})
    (banded,) = resolve_targets(analysis, [OCCUPATION], noise=noise, config=config)
    assert (banded.low, banded.high) == (-0.05, 0.05) and "noise band" in banded.source
    (given,) = resolve_targets(analysis, [OCCUPATION], intervals={OCCUPATION: (0.1, 0.2)}, noise=noise)
    assert (given.low, given.high, given.source) == (0.1, 0.2, "given")
    with pytest.raises(MeasureError, match="needs finite low <= high"):
        resolve_targets(analysis, [OCCUPATION], intervals={OCCUPATION: (0.2, 0.1)})
    with pytest.raises(MeasureError) as error:
        resolve_targets(analysis, [OCCUPATION], intervals={"teacher": (0.0, 0.1)})
    assert str(error.value) == PLAN_TARGET_NOT_PLANNED.format(occupations="teacher")
    with pytest.raises(MeasureError, match=PLAN_NO_TARGETS):
        resolve_targets(analysis, [])
    assert PLAN_BAD_INTERVAL.startswith("plan:")


def test_collateral_bands_leave_out_small_groups_and_floor_at_the_median(analysis: ModelAnalysis) -> None:
    config = PlanConfig(tolerance=0.1, min_group_size=5)
    bands, source = collateral_bands(analysis, noise=None, config=config)
    groups, bias = analysis.groups, analysis.group_bias().double().numpy()
    size = np.minimum(groups.n_male.numpy(), groups.n_female.numpy())
    bounded = np.isfinite(bias) & (size >= 5)
    assert np.array_equal(np.isfinite(bands), bounded)
    median = np.median(np.abs(bias[bounded]))
    for i in np.nonzero(bounded)[0]:
        assert bands[i] == pytest.approx(0.1 * max(abs(bias[i]), median))
    assert "no noise band" in source


def test_the_plan_predicts_with_the_newton_estimator_and_removes_no_group_fact(analysis: ModelAnalysis, plan) -> None:
    assert plan.removed and len(plan.removed) == len(set(plan.removed))
    assert not group_facts(analysis)[list(plan.removed)].any()  # profession and gender facts stay
    (outcome,) = plan.targets
    newton = predict_removal(analysis, OCCUPATION, torch.tensor(plan.removed))
    assert outcome.prediction.point == pytest.approx(newton.point, rel=1e-3, abs=1e-5)
    assert (outcome.prediction.low, outcome.prediction.high) == pytest.approx((newton.low, newton.high), rel=1e-3)
    assert outcome.inside and plan.feasible and not plan.problems
    assert plan.link_share == pytest.approx(link_costs(analysis.model)[list(plan.removed)].sum())
    assert plan.link_share <= plan.config.max_link_share
    frame = plan.collateral
    assert not frame.loc[frame["bounded"], "outside"].any()
    assert (frame.loc[frame["bounded"], "change"].abs() <= frame.loc[frame["bounded"], "band"]).all()
    words = plan_triples(analysis, plan)
    assert words["row"].tolist() == list(plan.removed) and words["in words"].str.contains("—").all()
    assert any("meets its bounds" in line for line in plan_summary(plan))


def test_the_planned_removal_lands_in_the_target_after_a_masked_retrain(analysis: ModelAnalysis, plan) -> None:
    """Issue 29's check: the plan, retrained (masked, from the model's seed), reaches its target."""
    (outcome,) = plan.targets
    after = masked_retrain_bias(analysis.model, removed=torch.tensor(plan.removed), groups=analysis.groups)
    actual = float(after[analysis.groups.index(OCCUPATION)])
    print(f"\n{OCCUPATION}: before {outcome.before:+.4f}  predicted {outcome.after:+.4f} "
          f"[{outcome.after_low:+.4f}, {outcome.after_high:+.4f}]  actual {actual:+.4f}  "
          f"target [{outcome.target.low:+.4f}, {outcome.target.high:+.4f}]  k = {len(plan.removed)}")
    assert outcome.target.low <= actual <= outcome.target.high
    assert abs(actual) < abs(outcome.before) / 2  # it moved: the target is not where it started


def test_a_plan_that_cannot_meet_its_bounds_says_so_and_returns_the_closest(analysis: ModelAnalysis) -> None:
    before = float(analysis.group_bias(OCCUPATION))
    target = Target(OCCUPATION, -0.001, 0.001, "given")
    plan = plan_removal(analysis, [target], config=PlanConfig(max_triples=3))
    assert not plan.feasible
    assert any(p.startswith("Journalist: predicted B_gr") and "closest plan" in p for p in plan.problems)
    assert PLAN_CAPPED.format(name="Journalist", cap=3) in plan.problems  # what stopped it, and what to raise
    assert any("does NOT meet its bounds; the closest plan found" in line for line in plan_summary(plan))
    (outcome,) = plan.targets
    assert 0 < len(plan.removed) <= 3 and not outcome.inside
    # the closest of the prefixes searched: nearer 0 than B_gr now, and no nearer with fewer triples
    assert abs(outcome.after) < abs(before)
    for k in range(len(plan.removed)):
        fewer = predict_removal(analysis, OCCUPATION, torch.tensor(plan.removed[:k])) if k else None
        assert abs(before + (fewer.point if fewer else 0.0)) >= abs(outcome.after) - 1e-6


def test_a_target_past_every_removal_is_said_out_of_reach_with_the_reach_checked_by_autograd(
        analysis: ModelAnalysis) -> None:
    """``reach``: the Newton step's first-order change of removing every non-group triple that moves the target its
    way; against autograd's derivative of B_gr along the Newton step of that whole set (linearity of the adjoint),
    and the out-of-reach line exactly when the target lies past it."""
    from kgbias_core.errors import PLAN_OUT_OF_REACH
    from kgbias_core.influence.prediction import absolute_newton_step
    from kgbias_core.whatif.plan import _Newton

    index = analysis.groups.index(OCCUPATION)
    before = float(analysis.group_bias(OCCUPATION))
    sigma = -np.sign(before)  # towards 0
    linear = _Newton(analysis).linear(index)
    movers = np.nonzero((sigma * linear > 0) & ~group_facts(analysis))[0]
    model = analysis.model
    step = absolute_newton_step(model, torch.tensor(movers), tolerance=1e-10)
    c = torch.zeros((), dtype=torch.float64, requires_grad=True)
    moved = replace(model, weights={"entity_embeddings": model.entity_embeddings.double() + c * step[0].double(),
                                    "relation_embeddings": model.relation_embeddings.double() + c * step[1].double()})
    (derivative,) = torch.autograd.grad(ModelAnalysis(moved).group_bias(OCCUPATION), c)

    near = plan_removal(analysis, [Target(OCCUPATION, -0.001, 0.001, "given")], config=PlanConfig(max_triples=3))
    (outcome,) = near.targets
    assert outcome.reach == pytest.approx(float(derivative), rel=1e-3)
    assert sigma * outcome.reach > 0
    assert not any("out of reach" in p for p in near.problems)  # 0 lies within reach (3 triples do not get there)
    past = before + 3 * outcome.reach
    far = plan_removal(analysis, [Target(OCCUPATION, past - 0.001, past + 0.001, "given")])
    head = PLAN_OUT_OF_REACH.split("{reach")[0].format(name=far.targets[0].name)
    assert not far.feasible and any(p.startswith(head) for p in far.problems)


def test_verifying_appends_predicted_and_actual_to_the_models_record(tiny_store: Path, tmp_path: Path, plan) -> None:
    store = Path(shutil.copytree(tiny_store, tmp_path / "store"))
    base = store / "tiny-transe"
    record = verify_plan_task(base=base, plan=plan, evaluate=False).run(Progress())
    run = plan_run_dir(base, plan)
    assert load_model(run).edit["removed"] == sorted(plan.removed)  # the run is an ordinary what-if of the store
    assert len(record) == 1 and record["run"].iloc[0] == run.name
    (outcome,) = plan.targets
    assert record["predicted"].iloc[0] == pytest.approx(outcome.after)
    analysis = ModelAnalysis(load_model(base))
    retrained = masked_retrain_bias(analysis.model, removed=torch.tensor(plan.removed), groups=analysis.groups)
    assert record["actual"].iloc[0] == pytest.approx(float(retrained[analysis.groups.index(OCCUPATION)]), abs=1e-5)
    # verified again: the same edit of the same base is read back, not retrained, and its row replaces the first
    weights = run / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    progress, messages = Progress(), []
    update = progress.update
    progress.update = lambda **fields: (messages.append(fields.get("message", "")), update(**fields))[1]
    again = verify_plan_task(base=base, plan=plan, evaluate=False).run(progress)
    assert weights.stat().st_mtime_ns == stamp
    assert any("retrained before" in m for m in messages)
    assert len(again) == 1 and saved_verifications(base)["run"].tolist() == [run.name]
    assert again["actual"].iloc[0] == record["actual"].iloc[0]
    # another plan (one triple fewer) is another edit: retrained, and recorded beside the first
    fewer = replace(plan, removed=plan.removed[:-1])
    third = verify_plan_task(base=base, plan=fewer, evaluate=False).run(Progress())
    assert len(third) == 2 and third["run"].iloc[1] == plan_run_dir(base, fewer).name != run.name
    meta = json.loads((base / RESULTS / "plan_verifications.json").read_text())
    assert meta["data_hash"] == read_config(base)["data_hash"] and meta["model_config"]


def test_the_sparse_curvature_is_the_absolute_curvature_hvp_and_its_solve_inverts_it(tiny_model: StoredModel) -> None:
    from kgbias_core.influence.prediction import absolute_curvature_hvp
    from kgbias_core.whatif.plan import SparseCurvature

    curvature = SparseCurvature(tiny_model)
    generator = torch.Generator().manual_seed(0)
    E, R = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    v = (torch.randn(E.shape, generator=generator), torch.randn(R.shape, generator=generator))
    hv = absolute_curvature_hvp(tiny_model)(v)  # the oracle: autograd's Hessian-vector product
    stacked = torch.cat(v).double().numpy()
    product = stacked * curvature.shift
    product[curvature.coupled] = curvature.matrix @ stacked[curvature.coupled]
    np.testing.assert_allclose(product, torch.cat(hv).double().numpy(), rtol=1e-4, atol=1e-3)
    solution = curvature.solve(product)
    np.testing.assert_allclose(solution, stacked, rtol=1e-4, atol=1e-4)
    # CG in single precision, refined in double: the double residual reaches the tolerance (1e-6), as all in double
    coupled = curvature.coupled
    residual = product[coupled] - curvature.matrix @ solution[coupled]
    assert np.linalg.norm(residual) <= 1e-6 * np.linalg.norm(product[coupled])
    double = SparseCurvature(tiny_model, single=False).solve(product)
    assert np.linalg.norm(product[coupled] - curvature.matrix @ double[coupled]) <= 1e-6 * np.linalg.norm(
        product[coupled])
    np.testing.assert_allclose(double, stacked, rtol=1e-4, atol=1e-4)
    # Read from the what-if predictions' matrix (an analysis's memo), M is the same matrix
    shared = SparseCurvature(tiny_model, terms=absolute_curvature_hvp(tiny_model).terms)
    assert np.array_equal(shared.coupled, coupled)
    assert abs(shared.matrix - curvature.matrix).max() <= 1e-6 * abs(curvature.matrix).max()


def test_two_targets_are_planned_in_turn_and_predicted_together(analysis: ModelAnalysis) -> None:
    config = PlanConfig(tolerance=TOLERANCE)
    targets = resolve_targets(analysis, [OCCUPATION, "lawyer"], config=config)
    plan = plan_removal(analysis, targets, config=config)
    assert [o.target.occupation for o in plan.targets] == [OCCUPATION, "lawyer"]
    assert sum(o.n_chosen for o in plan.targets) == len(plan.removed) == len(set(plan.removed))
    for outcome in plan.targets:  # each target's prediction is the Newton step of the whole removal
        newton = predict_removal(analysis, outcome.target.occupation, torch.tensor(plan.removed))
        assert outcome.prediction.point == pytest.approx(newton.point, rel=1e-3, abs=1e-5)
    assert plan.feasible == (all(o.inside for o in plan.targets) and plan.n_outside == 0)


def test_the_observed_ratio_is_the_median_of_retrained_over_unscaled_predicted_changes_per_use() -> None:
    record = pd.DataFrame({
        "group_bias_before": [0.4, 0.2, -0.3, 0.1],
        "predicted": [0.0, 0.1, -0.1, 0.1],  # the last predicted no change: it says nothing of the ratio
        "actual": [0.3, 0.15, -0.25, 0.3],
        "step_scale": [1.0, 0.5, np.nan, 1.0],  # planned at 0.5: its unscaled change is twice; NaN: an old record
    })
    audit = pd.DataFrame({"predicted": [-0.2, 0.4], "retrained": [-0.1, 0.28]})
    # Plans read the verified plans only, edits the audit only: the two kinds of removal are not pooled.
    plans = observed_step_ratio(record, audit, use=PLANS)
    assert (plans.value, plans.n, plans.low, plans.high) == (pytest.approx(0.25), 3, pytest.approx(0.25),
                                                             pytest.approx(0.25))
    assert not plans.borrowed and "verified plans" in plans.describe()
    edits = observed_step_ratio(record, audit, use=EDITS)
    assert (edits.value, edits.n, edits.low, edits.high) == (pytest.approx(0.6), 2, pytest.approx(0.5),
                                                             pytest.approx(0.7))
    assert not edits.borrowed and "prediction audit" in edits.describe()
    # A use with no retrain of its own borrows the other's ratio, and says so.
    borrowed = observed_step_ratio(record, None, use=EDITS)
    assert borrowed.value == pytest.approx(0.25) and borrowed.borrowed and "borrowed" in borrowed.describe()
    assert observed_step_ratio(None, audit, use=PLANS).value == pytest.approx(0.6)
    assert observed_step_ratio(None, None, use=PLANS) is None
    assert observed_step_ratio(record.iloc[3:], None, use=EDITS) is None
    with pytest.raises(ValueError, match="edits"):
        observed_step_ratio(record, audit, use="everything")
    wild = pd.DataFrame({"predicted": [-0.01], "retrained": [-1.0]})
    assert observed_step_ratio(None, wild, use=PLANS).value == 2.0  # clipped: one odd retrain cannot run the planner
    # A plan's single target with a verified plan of its own reads its own latest ratio; one without, the model's.
    record = record.assign(occupation=["a", "a", "b", "b"])
    record.loc[0, "actual"] = 0.24  # a's first plan moved 0.4 of its step: a's ratios 0.4 and then 0.25
    own = observed_step_ratio(record, audit, use=PLANS, occupation="a")
    assert (own.value, own.n, own.source) == (pytest.approx(0.25), 2, "verified plans of this occupation")
    assert own.describe().startswith("the retrained/predicted ratio of the latest of 2 retrain(s)")
    assert observed_step_ratio(record.iloc[::-1], audit, use=PLANS, occupation="a").value == pytest.approx(0.4)
    assert observed_step_ratio(record, audit, use=PLANS, occupation="c").n == 3  # no plan of its own: the model's
    assert observed_step_ratio(record, audit, use=EDITS, occupation="a").value == pytest.approx(0.6)  # edits: audit
    # On L2, a plan verified before its step changed (its estimator without today's note) holds that step's ratio:
    # left out, as an audit of that time is; a squared-L2 model reads every row, named or not.
    note = DISTANCE_NOTES["l2"]
    named = record.assign(estimator=["Newton step, |H|, L2 distance", f"Newton step, |H|, {note}", np.nan,
                                     f"Newton step, |H|, {note} x 0.50"])
    l2 = observed_step_ratio(named, None, use=PLANS, distance="l2")
    assert (l2.n, l2.value) == (1, pytest.approx(0.25))  # the second row only: -0.05 / (-0.1 / 0.5)
    assert observed_step_ratio(named.iloc[[0, 2]], None, use=PLANS, distance="l2") is None
    assert observed_step_ratio(named, None, use=PLANS).n == 3


def test_a_scaled_step_predicts_a_proportionally_smaller_change_and_plans_more_triples(
        analysis: ModelAnalysis, plan) -> None:
    config = PlanConfig(tolerance=TOLERANCE, step_scale=0.5)
    scaled = plan_removal(analysis, resolve_targets(analysis, [OCCUPATION], config=config), config=config)
    (outcome,) = scaled.targets
    unscaled = predict_removal(analysis, OCCUPATION, torch.tensor(scaled.removed))
    # B_gr is smooth in the embedding: half the step moves it about half as far (the retrain's tolerance)
    assert outcome.prediction.point == pytest.approx(0.5 * unscaled.point, rel=0.15)
    assert len(scaled.removed) > len(plan.removed) and outcome.inside
    assert "x 0.50 (the retrained/predicted ratio" in outcome.prediction.estimator
    assert "ratio" not in plan.targets[0].prediction.estimator  # scale 1: the step as computed, named so


def test_the_collateral_is_checked_with_the_step_as_computed_and_the_targets_with_their_scale(
        analysis: ModelAnalysis) -> None:
    """A plan's other occupations are predicted by the unscaled Newton step (``collateral_scale`` 1), the target by
    the step times its ratio: each against an exact evaluation of B_gr at theta + c Delta theta."""
    from kgbias_core.influence.prediction import PREDICTION_TOLERANCE, absolute_newton_step

    config = PlanConfig(tolerance=TOLERANCE, step_scale=0.5)
    planned = plan_removal(analysis, resolve_targets(analysis, [OCCUPATION], config=config), config=config)
    model = analysis.model
    step = absolute_newton_step(model, torch.tensor(planned.removed), tolerance=PREDICTION_TOLERANCE * 1e-3)
    before = analysis.group_bias().double()

    def change_at(c: float) -> torch.Tensor:
        return ModelAnalysis(replace(model, weights={
            "entity_embeddings": model.entity_embeddings + c * step[0],
            "relation_embeddings": model.relation_embeddings + c * step[1]})).group_bias().double() - before

    frame = planned.collateral.set_index("occupation")
    labels = list(analysis.groups.labels)
    full, half = change_at(1.0), change_at(0.5)
    others = frame[~frame["target"]]
    expected = [float(full[labels.index(o)]) for o in others.index]
    assert others["change"].to_numpy() == pytest.approx(expected, rel=1e-3, abs=1e-6)
    assert float(frame.loc[analysis.groups.labels[analysis.groups.index(OCCUPATION)], "change"]) == pytest.approx(
        float(half[analysis.groups.index(OCCUPATION)]), rel=1e-3, abs=1e-6)


# --- a pseudo-Huber model (issue 24): |H| per coordinate, solved term by term -------------------------------------
#: The pseudo-Huber tiny model's target: lawyers (23 men, 14 women), B_gr -0.37 there (journalists': +0.01, inside
#: their own tolerance before any edit).
HUBER_OCCUPATION = "lawyer"

@pytest.fixture(scope="module")
def huber_analysis(tiny_graph) -> ModelAnalysis:
    model = train_model(tiny_graph, replace(TINY_TRAINING, distance="pseudo_huber"), name="huber-transe",
                        device=torch.device("cpu"))
    return ModelAnalysis(model)


def test_a_pseudo_huber_plans_curvature_inverts_the_predictions_operator(huber_analysis: ModelAnalysis) -> None:
    from kgbias_core.whatif.plan import TermCurvature, sparse_curvature

    curvature = sparse_curvature(huber_analysis)
    assert isinstance(curvature, TermCurvature)
    # the operator is the what-if predictions' own |H|: the pseudo-Huber curvature of every active term
    from kgbias_core.influence.prediction import absolute_curvature_hvp

    probe = (torch.ones_like(huber_analysis.model.entity_embeddings),
             torch.ones_like(huber_analysis.model.relation_embeddings))
    for ours, theirs in zip(curvature.hvp(probe), absolute_curvature_hvp(huber_analysis.model)(probe), strict=True):
        assert torch.allclose(ours, theirs)
    model = huber_analysis.model
    E, R = model.entity_embeddings, model.relation_embeddings
    generator = torch.Generator().manual_seed(0)
    v = (torch.randn(E.shape, generator=generator), torch.randn(R.shape, generator=generator))
    product = torch.cat(curvature.hvp(v)).double().numpy()
    solution = curvature.solve(product)
    np.testing.assert_allclose(solution, torch.cat(v).double().numpy(), rtol=1e-3, atol=1e-3)


def test_a_pseudo_huber_plan_predicts_as_the_lab_and_lands_after_a_masked_retrain(
        huber_analysis: ModelAnalysis) -> None:
    """As the lab plans: the step times the model's one-retrain audit ratio (prediction_audit; the unscaled step
    overshoots this 25-epoch model's retrain, predicted +0.36 against +0.24 at the same set)."""
    from kgbias_core.tasks.prediction_audit import prediction_audit

    analysis = huber_analysis
    audit = prediction_audit(analysis).iloc[0]
    config = PlanConfig(tolerance=TOLERANCE, step_scale=float(audit["retrained"] / audit["predicted"]))
    plan = plan_removal(analysis, resolve_targets(analysis, [HUBER_OCCUPATION], config=config), config=config)
    (outcome,) = plan.targets
    assert plan.removed and not group_facts(analysis)[list(plan.removed)].any()
    newton = predict_removal(analysis, HUBER_OCCUPATION, torch.tensor(plan.removed), scale=config.step_scale)
    assert outcome.prediction.point == pytest.approx(newton.point, rel=1e-3, abs=1e-5)
    assert outcome.prediction.estimator == newton.estimator and "pseudo-Huber" in newton.estimator
    after = masked_retrain_bias(analysis.model, removed=torch.tensor(plan.removed), groups=analysis.groups)
    actual = float(after[analysis.groups.index(HUBER_OCCUPATION)])
    print(f"\n{HUBER_OCCUPATION} (pseudo-Huber): before {outcome.before:+.4f} predicted {outcome.after:+.4f} "
          f"actual {actual:+.4f} target [{outcome.target.low:+.4f}, {outcome.target.high:+.4f}] k = "
          f"{len(plan.removed)}")
    assert outcome.inside
    # the retrain lands near the target's edge here (-0.109 against -0.112 on the 2-core CPU): checked with margin,
    # as a change within the step's band that takes B_gr most of the way, so that another CPU's model passes too
    assert outcome.after_low - 0.02 <= actual <= outcome.after_high + 0.02
    assert abs(actual) < abs(outcome.before) / 2


def test_a_plan_of_an_l1_model_is_refused_in_one_line(tiny_graph) -> None:
    model = train_model(tiny_graph, replace(TINY_TRAINING, distance="l1", epochs=3), name="l1-transe",
                        device=torch.device("cpu"))
    analysis = ModelAnalysis(model)
    config = PlanConfig(tolerance=TOLERANCE)
    with pytest.raises(MeasureError, match="l1"):
        plan_removal(analysis, resolve_targets(analysis, [OCCUPATION], config=config), config=config)
