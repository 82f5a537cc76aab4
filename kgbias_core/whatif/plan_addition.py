"""Plan an addition (issue 29): the fewest dummies of Du's Add whose predicted B_gr lands in a target interval.

Du's Add (§4.3, METHODS §5) has one free number: how many dummy persons of the rarer gender join the occupation,
c x (|M_o| - |F_o|). The planner searches that count as the removal planner searches its k
(:func:`~kgbias_core.whatif.plan.search_k`): the largest count first, then a secant-guided bisection whose first
guess is the straight line through 0 and that prediction. Each prediction is the lab's Add prediction
(:func:`~kgbias_core.influence.prediction.addition_step`: the dummies replayed through training, then one Newton step
of the trained rows), which moves every occupation at once, so an Add plan has a collateral check like a removal's:

- the target's change is scaled by the model's Add ratio (``config.step_scale``, read by the callers from
  :data:`~kgbias_core.whatif.step_ratio.ADDITIONS`: the Add audit and the verified Add plans), its interval is the
  Add prediction's (``ADD_BAND_BASE``), and B_gr after counts the dummies (as a retrained Add is measured);
- every other occupation's change is taken as computed (``config.collateral_scale``) against the bands of
  :func:`~kgbias_core.whatif.plan.collateral_bands` (seed band, noise band or tolerance, as a removal plan);
- an Add removes nothing, so the link-prediction proxy is 0.

Counts go up to ``c_max`` x | |M_o| - |F_o| | (c = 1: as many dummies as make the groups equal), at most
:data:`~kgbias_core.whatif.edits.MAX_DUMMIES`. Each prediction replays the dummies' training: 4-6 s on FB15k-237's
eight-negative default at one thread, so a plan costs up to ``config.max_solves`` + 1 of them (about half a minute)
where a removal plan costs seconds; the lab runs it as a job.

An Add can move B_gr away from 0: on FB15k-237's eight-negative default five of six Add retrains at c = 0.5 raised it
(docs/results/whatif.md). Where the largest Add moves B_gr away from the target, the plan says so
(:data:`~kgbias_core.errors.PLAN_ADD_AWAY`) and plans no dummy: the prediction moves by jumps between counts (each
count draws its dummies' negatives afresh, as the retrain does); the largest count's direction is taken as the
Add's, and smaller counts are not searched then.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.errors import (
    NEWTON_NEEDS_SQUARED_L2,
    PLAN_ADD_AWAY,
    PLAN_ADD_EQUAL,
    PLAN_ADD_SHORT,
    MeasureError,
)
from kgbias_core.influence.prediction import (
    ADD_BAND_BASE,
    ADD_ESTIMATOR,
    REDRAWN,
    WhatIfPrediction,
    addition_step,
    band_ends,
    band_factor,
    scaled_estimator,
)
from kgbias_core.whatif.edits import MAX_DUMMIES, Edit, add_edit, addition
from kgbias_core.whatif.plan import (
    Plan,
    PlanConfig,
    Target,
    TargetOutcome,
    collateral_bands,
    collateral_frame,
    collateral_problem,
    search_k,
)

#: The largest c an Add plan tries by default: as many dummies as make the target's two groups equal.
C_MAX = 1.0


def dummies_c(count: int, gap: int) -> float:
    """The shortest c with round(c x gap) = count: Add's strategy records c, and a run's record rebuilds its
    dummies from c and their count (:func:`~kgbias_core.whatif.edits.edit_of_record`)."""
    for digits in range(2, 17):
        c = float(f"{count / gap:.{digits}g}")
        if int(round(c * gap)) == count:
            return c
    return count / gap


def addition_estimator(analysis: ModelAnalysis, scale: float) -> str:
    """The estimator of an Add plan's prediction, in words (as the lab's Add prediction names it)."""
    exact = analysis.negatives.exact
    return scaled_estimator(ADD_ESTIMATOR if exact else f"{ADD_ESTIMATOR}, {REDRAWN}", scale)


def plan_addition(analysis: ModelAnalysis, target: Target, *, noise: pd.DataFrame | None = None,
                  seed_band: pd.DataFrame | None = None, config: PlanConfig | None = None,
                  c_max: float = C_MAX) -> Plan:
    """The fewest dummies found whose predicted B_gr of ``target`` lands in its interval (module docstring): a
    :class:`~kgbias_core.whatif.plan.Plan` of kind "add", ``added`` its edit (None when no dummy is planned);
    ``solves`` counts the Add predictions made. Bands as :func:`~kgbias_core.whatif.plan.plan_removal`."""
    started = time.perf_counter()
    config = config or PlanConfig()
    model, groups = analysis.model, analysis.groups
    if model.config.distance != "squared_l2":
        raise MeasureError(NEWTON_NEEDS_SQUARED_L2.format(model=model.name, distance=model.config.distance))
    index = groups.index(target.occupation)
    n_male, n_female = int(groups.n_male[index]), int(groups.n_female[index])
    gap = abs(n_male - n_female)
    largest = min(int(math.floor(c_max * gap + 0.5)), MAX_DUMMIES)
    bands, band_source = collateral_bands(analysis, noise=noise, config=config, seed_band=seed_band)
    bounded = np.isfinite(bands)
    bounded[index] = False  # the target has its interval instead
    before = analysis.group_bias().double().cpu().numpy()
    start = float(before[index])
    negatives = None if analysis.negatives.exact else analysis.negatives.negatives
    predicted: dict[int, tuple[Edit, np.ndarray]] = {}

    def changes_at(count: int) -> np.ndarray:
        """The change [O] of every occupation with ``count`` dummies: the target's scaled, the others' at the
        collateral scale (memoised: the search may ask twice)."""
        if count not in predicted:
            edit = add_edit(model, target.occupation, c=dummies_c(count, gap), cap=count)
            step = addition_step(model, addition(model, edit), negatives=negatives, active=analysis.active_terms,
                                 hvp=analysis.absolute_hvp)
            after = step.after.double().cpu().numpy()
            order = [step.groups_after.index(label) for label in groups.labels]  # the base's order
            change = after[order] - before
            scaled = config.collateral_scale * change
            scaled[index] = config.step_scale * change[index]
            predicted[count] = (edit, scaled)
        return predicted[count][1]

    def after_at(count: int) -> float:
        return start + float(changes_at(count)[index]) if count else start

    problems: list[str] = []
    name = groups.names[index]
    sigma = 1.0 if target.center >= start else -1.0
    if target.low <= start <= target.high:
        count = 0  # already inside: nothing to add
    elif largest <= 0:
        count = 0
        problems.append(PLAN_ADD_EQUAL.format(name=name, n_male=n_male, n_female=n_female))
    else:
        furthest = after_at(largest)
        # the largest Add pushes B_gr the other way: read as the Add's direction (smaller counts are not searched)
        if sigma * (furthest - start) <= 0:
            count = 0
            problems.append(PLAN_ADD_AWAY.format(name=name, count=largest, after=furthest, before=start,
                                                 c_max=c_max, low=target.low, high=target.high))
        else:
            linear = np.linspace(0.0, furthest - start, largest + 1)
            count, _ = search_k(after_at, linear, start=start, target=target, aim=config.aim,
                                max_solves=config.max_solves, known={largest: furthest})
    changes = changes_at(count) if count else np.zeros_like(before)
    edit = predicted[count][0] if count else None
    rarer_is_female = n_male > n_female
    added = (0, count) if rarer_is_female else (count, 0)
    frame = collateral_frame(analysis, before=before, changes=changes, bands=bands, bounded=bounded,
                             target_index=[index], added=added)
    point = float(changes[index])
    f = band_factor(min(n_male + added[0], n_female + added[1]), base=ADD_BAND_BASE)
    low, high = map(float, band_ends(point, f))
    outcome = TargetOutcome(target=target, name=name, before=start,
                            prediction=WhatIfPrediction(point=point, low=low, high=high,
                                                        estimator=addition_estimator(analysis, config.step_scale),
                                                        redrawn=not analysis.negatives.exact),
                            n_candidates=max(largest, 0), n_chosen=count)
    if not outcome.inside and not problems:
        problems.append(PLAN_ADD_SHORT.format(name=name, after=outcome.after, low=target.low, high=target.high,
                                              count=count, largest=largest, c_max=c_max))
    problems += collateral_problem(frame)
    return Plan(removed=(), targets=(outcome,), collateral=frame, link_share=0.0, feasible=not problems,
                problems=tuple(problems), bands=band_source, solves=len(predicted),
                seconds=time.perf_counter() - started, config=config, kind="add", added=edit)
