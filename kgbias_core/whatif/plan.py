"""Plan a debiasing edit (issue 29): the smallest removal whose predicted B_gr lands in a target interval.

Given target occupations and an interval for each, the planner chooses training triples to remove so that

- every target's predicted B_gr (Du Eq. 2, METHODS §1) lands inside its interval,
- every other occupation's predicted change stays inside its band; occupations with fewer than
  ``min_group_size`` men or women are left out of the bound, as the Overview leaves them out of its ranking,
- the link-prediction proxy (:func:`link_costs`) stays under ``max_link_share``,

with as few triples as it can. Two estimators, each where it is good, and the units that join them:

1. **Choice and order** (Du Eq. 3, METHODS §4): the closed-form influence delta_z B_gr of each triple on
   every occupation at once (:func:`~kgbias_core.influence.closed_form.triple_influence`). The candidates
   move the target towards its interval; they are ranked by gain x (gain / (gain + D x used)), D the
   distance still to go and ``used`` the share of every other occupation's band (and of the link bound)
   the triple spends, and taken greedily: a triple that would push an occupation's running sum past its
   band (or the proxy past its bound) is skipped, so every prefix of the order keeps the bounds.
2. **Magnitude**: the closed form's sum overshoots what a retrain does (Actor +0.049 -> -0.195 at
   k = 800 on FB15k-237), so the prefix length k is found with the Newton-step estimator of
   :mod:`kgbias_core.influence.prediction` (|H|^{-1} sum grad L, B_gr exact at theta + Delta theta, the
   groups fixed), by a secant-guided bisection on k. Its first guess comes from the same Newton step's
   linear part, grad B_gr^T |H|^{-1} sum grad L(z) = sum s . grad L(z) with s = |H|^{-1} grad B_gr (one
   solve per target gives every prefix). One forward step predicts every occupation at once, so the
   collateral of the final plan is the Newton step's too, taken as computed (``collateral_scale``), not times the
   targets' ratio; where it still leaves a band, that band is tightened and the plan redone (``repairs`` times).
3. **Bands in the step's units**: where the closed form overstates the step on the other occupations too, the greedy
   pass runs out of band while the Newton step leaves every band unspent (FB13: 211 of Novelist's 403 candidates
   taken). A plan that stops short of a target while the step leaves every band is planned once more with every
   budget times :func:`newton_units`, the closed form's sum over the step's change on the occupations that bound
   the pass (the repairs of 2. follow it where needed). Not a third estimator: the step still judges the plan.

What counts as noise sets both the default target interval and the other occupations' bands, in this order:

- **the seed band** (``seed_band``: the model's seed family, :func:`~kgbias_core.families.family_group_bias_band`,
  issue 24): the spread of B_gr over seeds, each with its own initialisation, batch order and negatives. The
  target is the band moved to hold 0, [B_gr - max, B_gr - min] (min, max over the seeds): after the edit the
  family's band would hold 0 and the pages state no lean. An other occupation's band is its seed range
  max - min: a change inside it is one the seeds already make.
- **the noise band** (``noise``: :func:`~kgbias_core.whatif.runs.noise_band`): retrains of the unedited graph
  under seeds 1-3 with the negatives kept; target 0 +- its spread, bands its spread. On the eight-negative
  FB15k-237 default it is about a twentieth of the seed band (median spread 0.013 against a seed range of 0.23).
- **the tolerance**: 0 +- ``tolerance`` x max(|B_gr|, median |B_gr|), and the same for the bands.

The search aims at the middle ``aim`` share of the target interval (the estimator's band is wide: its
retrained/predicted ratio spreads 0.34-1.62 on the synthetic graph) and takes the smallest k whose
prediction falls there, else the smallest inside the interval, else the closest one: a plan that
cannot meet its bounds says which and is returned as the closest plan found.

Choices stated once: by default the plan never removes a profession or gender fact (``keep_groups``),
so it changes the evidence about the persons, not who is counted in M_o and F_o, and its prediction
(over fixed groups) and Du's measurement of the retrained graph (over its groups) agree. Additions are planned
apart (:mod:`kgbias_core.whatif.plan_addition`): an Add has one free number, the count of dummies, searched with the
Add prediction (4-6 s each on FB15k-237's eight-negative default), and a plan is either kind (``Plan.kind``).
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.objective import negatives_count
from kgbias_core.embeddings.results import save_result
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import (
    PLAN_BAD_INTERVAL,
    PLAN_CAPPED,
    PLAN_COLLATERAL,
    PLAN_LINK_BOUND,
    PLAN_NEEDS_DISTANCE,
    PLAN_NO_TARGETS,
    PLAN_OUT_OF_REACH,
    PLAN_TARGET_MISSED,
    PLAN_TARGET_NOT_PLANNED,
    PLAN_UNDEFINED_TARGET,
    MeasureError,
)
from kgbias_core.influence.iterative import group_bias_rhs, influence_from_solution
from kgbias_core.influence.prediction import (
    CONDITION_EPS,
    ESTIMATOR,
    WhatIfPrediction,
    _damping,
    absolute_curvature_hvp,
    active_terms,
    band_ends,
    distance_estimator,
    preconditioned_cg,
    removal_band_factor,
    removal_gradient,
    scaled_estimator,
    squared_l2_curvature_entries,
)
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.tables import MIN_GROUP_SIZE, entity_name, occupations_frame, triples_frame, triples_in_words
from kgbias_core.whatif.edits import Edit
from kgbias_core.whatif.runs import judged_columns
from kgbias_core.whatif.step_ratio import VERIFICATIONS, saved_verifications

#: What the link-prediction bound bounds, in words (a proxy: no ranking is computed when planning).
LINK_PROXY = (
    "link-prediction proxy: the mean, over the test queries, of the share of their head's and tail's training "
    "triples that the plan removes (0 = no test query loses evidence, 1 = every one loses all of it)"
)
#: Said of a plan whose bands were spent in the Newton step's units (:func:`newton_units`).
BAND_UNITS = ("bands spent in the Newton step's units: the closed form stopped the first pass short while the step "
              "left every band, so each band was worth {units:.1f} times its closed-form sum (the step still judged "
              "the plan)")
#: The most a band is widened by in the step's units (:func:`newton_units`): past it the closed form is no guide.
MAX_NEWTON_UNITS = 50.0
_RECORD_LOCK = threading.Lock()  # appends from two jobs of one process never interleave their read and write


@dataclass(frozen=True)
class PlanConfig:
    """How a plan is searched for; the defaults are the lab's and the command line's."""

    max_triples: int = 2000  # the largest removal set proposed (over all targets)
    max_link_share: float = 0.01  # bound on the link-prediction proxy (LINK_PROXY), a share of evidence
    # without a noise band: targets 0 +- and the others' bands of tolerance x max(|B_gr|, median |B_gr|)
    tolerance: float = 0.1
    aim: float = 0.2  # the k search aims at this middle share of the target interval (the estimator's error)
    min_group_size: int = MIN_GROUP_SIZE  # other occupations with fewer men or women are not bounded (as the Overview)
    keep_groups: bool = True  # never remove a profession or gender fact: M_o and F_o stay as they are
    max_solves: int = 6  # Newton steps (conjugate-gradient solves) per target in the k search
    repairs: int = 2  # re-plans with the bands the Newton step found exceeded, tightened
    block: int = 64  # candidates checked per vectorised step of the greedy pass
    # The Newton step is multiplied by this: the ratio of retrained to predicted change that this model's own
    # retrains showed (observed_step_ratio); 1: the step as computed. On the FB15k-237 default a retrain moves
    # about a quarter as far as the step (docs/results/plans.md): planned at 1, every plan falls short.
    step_scale: float = 1.0
    # The other occupations' predicted change (the collateral check) takes the step times this, not step_scale:
    # step_scale is the targets' own ratio, and the collateral of 13 verified plans on the eight-negative default
    # moved 0.6-10 times the unscaled step (median per plan; docs/results/plans.md), never the targets' 0.3-0.6.
    collateral_scale: float = 1.0
    # A plan that stops short of a target with every band left by the Newton step is planned once more with the bands
    # in the step's units (newton_units): FB13's closed form overstates the step several-fold, so the greedy pass ran
    # out of band first (Actor, Singer, Novelist: docs/results/plans.md).
    newton_units: bool = True


@dataclass(frozen=True)
class Target:
    """A target occupation and the interval its B_gr should land in."""

    occupation: str  # the label
    low: float
    high: float
    source: str  # where the interval comes from, in words

    @property
    def center(self) -> float:
        return (self.low + self.high) / 2


@dataclass(frozen=True)
class TargetOutcome:
    """A target's predicted B_gr under the plan."""

    target: Target
    name: str  # readable name
    before: float  # B_gr now
    prediction: WhatIfPrediction  # the predicted change of B_gr, with its interval
    n_candidates: int  # triples that move it towards the target and keep the bounds (closed form)
    n_chosen: int  # of which the plan removes this many for it
    # a removal plan: the Newton step's first-order change (times the step scale) of removing every triple that moves
    # the target its way, bounds or not (group facts kept): what no removal plan gets past; None for an Add
    reach: float | None = None

    @property
    def after(self) -> float:
        return self.before + self.prediction.point

    @property
    def after_low(self) -> float:
        return self.before + self.prediction.low

    @property
    def after_high(self) -> float:
        return self.before + self.prediction.high

    @property
    def inside(self) -> bool:
        return self.target.low <= self.after <= self.target.high


@dataclass(frozen=True)
class Plan:
    """A removal set (or an Add's dummies), what it is predicted to do, and whether it meets its bounds."""

    removed: tuple[int, ...]  # training-row indices, in the order the planner took them
    targets: tuple[TargetOutcome, ...]
    collateral: pd.DataFrame = field(repr=False)  # one row per occupation with a defined B_gr (see plan_removal)
    link_share: float  # the LINK_PROXY of the removal
    feasible: bool
    problems: tuple[str, ...]  # why it is not feasible (empty when it is)
    bands: str  # where the other occupations' bands come from, in words
    solves: int  # Newton solves spent (an Add plan: Add predictions made)
    seconds: float
    config: PlanConfig
    # "add": an Add plan (:mod:`kgbias_core.whatif.plan_addition`), ``removed`` empty and ``added`` its dummies (None
    # where it plans none)
    kind: Literal["remove", "add"] = "remove"
    added: Edit | None = None
    # the greedy pass spent the bands at this many closed-form units per band (newton_units; 1: the closed form's own)
    band_units: float = 1.0

    @property
    def n_outside(self) -> int:
        """Bounded occupations whose predicted change leaves their band."""
        return int(self.collateral["outside"].sum())

    @property
    def n_bounded(self) -> int:
        return int(self.collateral["bounded"].sum())


# --- targets and bands -----------------------------------------------------------------------------
def _spreads(noise: pd.DataFrame | None) -> dict[str, float]:
    if noise is None:
        return {}
    return {o: float(s) for o, s in zip(noise["occupation"], noise["spread"], strict=True) if np.isfinite(s)}


def _seed_ranges(seed_band: pd.DataFrame | None) -> dict[str, tuple[float, float]]:
    """(min, max) of B_gr over the family's seeds per occupation, where at least two seeds define it."""
    if seed_band is None:
        return {}
    low, high = seed_band["group_bias_seed_min"], seed_band["group_bias_seed_max"]
    return {o: (float(a), float(b)) for o, n, a, b in zip(seed_band["occupation"], seed_band["n_seeds"], low, high,
                                                          strict=True)
            if n >= 2 and np.isfinite(a) and np.isfinite(b)}


#: Where a target interval and the bands come from, in words.
SEED_TARGET = ("the family's seed band moved to hold 0 (B_gr − its max, B_gr − its min, over {n} seeds): the pages "
               "would state no lean")
NOISE_TARGET = "0 ± the noise band's spread (retrains under other seeds, negatives kept)"
SEED_BANDS = "the family's seed range (B_gr's max − min over its seeds, each with its own negatives)"
NOISE_BANDS = "the noise band's spread (retrains under other seeds, negatives kept)"


def resolve_targets(
    analysis: ModelAnalysis, occupations: Sequence[str], *, intervals: Mapping[str, tuple[float, float]] | None = None,
    noise: pd.DataFrame | None = None, seed_band: pd.DataFrame | None = None, config: PlanConfig = PlanConfig(),
) -> tuple[Target, ...]:
    """The targets of ``occupations`` (labels or names): the interval given in ``intervals`` (keyed by label or
    name), else the seed band moved to hold 0 (``seed_band``: :func:`~kgbias_core.families.family_group_bias_band`, or a
    measures table with its columns), else 0 +- the noise band's spread (``noise``:
    :func:`~kgbias_core.whatif.runs.noise_band`), else 0 +- ``config.tolerance`` x max(|B_gr|, median |B_gr|)
    (:func:`_median_bias`); the module docstring says why each."""
    if not occupations:
        raise MeasureError(PLAN_NO_TARGETS)
    groups = analysis.groups
    given = {groups.labels[groups.index(k)]: v for k, v in (intervals or {}).items()}
    spreads, ranges = _spreads(noise), _seed_ranges(seed_band)
    seeds = int(seed_band["n_seeds"].max()) if ranges else 0
    floor = _median_bias(analysis, config)
    targets, seen = [], set()
    for occupation in occupations:
        label = groups.labels[groups.index(occupation)]
        if label in seen:
            continue
        seen.add(label)
        bias = float(analysis.group_bias(label))
        if not math.isfinite(bias):
            raise MeasureError(PLAN_UNDEFINED_TARGET.format(occupation=label, n_male=int(groups.n_male[
                groups.index(label)]), n_female=int(groups.n_female[groups.index(label)])))
        if label in given:
            low, high = given.pop(label)
            if not (math.isfinite(low) and math.isfinite(high)) or low > high:
                raise MeasureError(PLAN_BAD_INTERVAL.format(occupation=label, low=low, high=high))
            targets.append(Target(label, float(low), float(high), "given"))
        elif label in ranges:
            low, high = ranges[label]
            targets.append(Target(label, bias - high, bias - low, SEED_TARGET.format(n=seeds)))
        elif label in spreads:
            half = spreads[label]
            targets.append(Target(label, -half, half, NOISE_TARGET))
        else:
            half = config.tolerance * max(abs(bias), floor)
            targets.append(Target(label, -half, half, f"0 ± {config.tolerance:g} × max(|B_gr|, median |B_gr| = "
                                                      f"{floor:.3g}) (no noise band yet)"))
    if given:  # an interval for an occupation that is not a target: a typo, never silently dropped
        raise MeasureError(PLAN_TARGET_NOT_PLANNED.format(occupations=", ".join(sorted(given))))
    return tuple(targets)


def _median_bias(analysis: ModelAnalysis, config: PlanConfig) -> float:
    """The median |B_gr| over the occupations with at least ``min_group_size`` men and women: the floor of the
    tolerance bands, so that an occupation already near 0 is not asked to land within a hair of it."""
    groups = analysis.groups
    before = analysis.group_bias().double().cpu().numpy()
    size = torch.minimum(groups.n_male, groups.n_female).cpu().numpy()
    bounded = np.isfinite(before) & (size >= max(1, config.min_group_size))
    return float(np.median(np.abs(before[bounded]))) if bounded.any() else 0.0


def collateral_bands(analysis: ModelAnalysis, *, noise: pd.DataFrame | None, config: PlanConfig,
                     seed_band: pd.DataFrame | None = None) -> tuple[np.ndarray, str]:
    """(band [O] of every occupation, NaN where it is not bounded; where the bands come from, in words).

    Bounded: B_gr defined and at least ``config.min_group_size`` men and women. The band is the family's seed
    range where ``seed_band`` gives one, else the noise band's spread where the model has one, else ``tolerance``
    x max(|B_gr(o)|, the median |B_gr|): the floor keeps an occupation near 0 from having no room at all.
    """
    groups = analysis.groups
    before = analysis.group_bias().double().cpu().numpy()
    size = torch.minimum(groups.n_male, groups.n_female).cpu().numpy()
    bounded = np.isfinite(before) & (size >= max(1, config.min_group_size))
    spreads, ranges = _spreads(noise), _seed_ranges(seed_band)
    if ranges:
        bands = np.array([ranges[label][1] - ranges[label][0] if label in ranges else np.nan
                          for label in groups.labels], dtype=np.float64)
        source = SEED_BANDS
    elif spreads:
        bands = np.array([spreads.get(label, np.nan) for label in groups.labels], dtype=np.float64)
        source = NOISE_BANDS
    else:
        floor = _median_bias(analysis, config)
        bands = config.tolerance * np.maximum(np.abs(before), floor)
        source = f"{config.tolerance:g} × max(|B_gr|, median |B_gr| = {floor:.3g}) (no noise band yet)"
    return np.where(bounded, bands, np.nan), source


def link_costs(model: StoredModel) -> np.ndarray:
    """Each training triple's share of the link-prediction proxy (:data:`LINK_PROXY`). [|G|], float64.

    proxy(S) = mean over test queries q = (h, r, t) of (removed_deg(h) + removed_deg(t)) / (deg(h) + deg(t)),
    degrees over the training triples. It is linear in S: removed_deg(e) counts the triples of S with e as
    head or tail, so triple z = (a, ., b) adds w(a) + w(b), w(e) the summed 1 / (n_test (deg(h)+deg(t))) of the
    queries with e as head or tail. Zero without a test split.
    """
    triples = model.triples.cpu()
    n_entities = model.n_entities
    test = model.test_triples
    if test is None or test.shape[0] == 0:
        return np.zeros(triples.shape[0])
    test = test.cpu()
    degree = (torch.bincount(triples[:, 0], minlength=n_entities)
              + torch.bincount(triples[:, 2], minlength=n_entities)).double()
    total = degree[test[:, 0]] + degree[test[:, 2]]  # [n_test]
    weight = torch.where(total > 0, 1.0 / total.clamp_min(1.0), torch.zeros_like(total)) / test.shape[0]
    per_entity = (torch.bincount(test[:, 0], weights=weight, minlength=n_entities)
                  + torch.bincount(test[:, 2], weights=weight, minlength=n_entities))
    return (per_entity[triples[:, 0]] + per_entity[triples[:, 2]]).numpy()


def group_facts(analysis: ModelAnalysis) -> np.ndarray:
    """Training triples whose removal can change who is in M_o or F_o: profession and gender facts. [|G|] bool."""
    relation = analysis.model.triples[:, 1]
    groups = analysis.groups
    return ((relation == groups.occupation_relation) | (relation == groups.gender_relation)).cpu().numpy()


# --- the Newton step, on |H| as the sparse matrix it is ---------------------------------------------------
#: Relative residual at which the solves stop: conjugate_gradients' default in prediction.py.
SOLVE_TOLERANCE = 1e-6
#: The k search's solves stop earlier: they only tell whether a prefix reaches the target; the plan's own
#: prediction is solved again to SOLVE_TOLERANCE, from the search's step.
SEARCH_TOLERANCE = 1e-3
#: The most preconditioned CG iterations of one solve (FB15k-237 needs about 30 to 1e-6).
SOLVE_ITERATIONS = 1000
#: CG runs in single precision, where M's products take half the time (FB15k-237 with eight negatives: 32 ms against
#: 71 ms at one thread), and is refined in double: each pass solves the double residual to at most this relative
#: residual, safely above what single-precision CG can reach; a tolerance at or above it is one pass.
SINGLE_TOLERANCE = 1e-4
#: The most refinement passes of one solve (1e-6 takes two).
REFINEMENTS = 6


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """sum(a * b) without a temporary, and without BLAS: numpy's BLAS threads spin against a loaded CPU (a dot of
    10 MB took 100x longer through np.vdot on the shared 2-core machine)."""
    return float(np.einsum("ij,ij->", a, b))


class SparseCurvature:
    """|H| of :func:`~kgbias_core.influence.prediction.absolute_curvature_hvp` as a sparse matrix, and its solves.

    psi(z) = ||h + r - t||^2 = ||c_z^T theta||^2 per embedding dimension, c_z = +1 at h, +1 at r, -1 at t, so
    d^2 psi(z) = 2 c_z c_z^T (x) I_d and

        |H| = (l2 I + 2 sum_{z active} (c_z c_z^T + c_z' c_z'^T)) (x) I_d = M (x) I_d,

    M one sparse (E + R) x (E + R) matrix shared by the d dimensions (the same active test as the HVP's, the same
    damping as :func:`~kgbias_core.influence.prediction.newton_removal_prediction`). A solve |H|^{-1} G is then
    M^{-1} G for G [E + R, d], by conjugate gradients preconditioned with M's diagonal (the hubs' degrees spread
    it over orders of magnitude). Why not the HVP: on FB15k-237 one autograd HVP took 190 ms and a solve ~95 of
    them (18 s, loaded 2-core CPU); M @ G is one sparse product and Jacobi needs ~35 iterations.
    """

    def __init__(self, model: StoredModel, *, single: bool = True, terms: torch.Tensor | None = None) -> None:
        """``single``: CG in single precision, refined in double (:data:`SINGLE_TOLERANCE`); False: all in double
        (bench/bench_plan.py's baseline). ``terms``: the sum of the active terms' 2 c c^T / K as the sparse CSR
        (E + R) x (E + R) matrix the what-if predictions apply (``absolute_curvature_hvp(...).terms``, an
        analysis's memo), when already built; else built here from the same formula."""
        from scipy import sparse

        self.n_entities, n = model.n_entities, model.n_entities + model.n_relations
        if terms is None:
            negatives = model.frozen_negatives
            k = negatives_count(negatives, model.triples.shape[0])  # K negatives: pairs (z, z'_j), each weighted 1/K
            pairs = model.triples if k == 1 else model.triples.repeat(k, 1)
            active = active_terms(model)  # the active test of absolute_curvature_hvp
            both = torch.cat([pairs[active], negatives[active]]).cpu()
            # 2 c c^T / K, 9 entries per term: the matrix absolute_curvature_hvp applies, from the same formula
            rows, cols, values = (t.numpy() for t in squared_l2_curvature_entries(both, n_entities=self.n_entities,
                                                                                  weight=2.0 / k))
            full = sparse.csr_matrix((values, (rows, cols)), shape=(n, n))
        else:
            terms = terms.cpu()
            full = sparse.csr_matrix((terms.values().double().numpy(), terms.col_indices().numpy(),
                                      terms.crow_indices().numpy()), shape=(n, n))
        # Only the rows an active term touches are coupled; every other row of M is l2 alone, solved by a division.
        self.coupled = np.nonzero(np.diff(full.indptr) > 0)[0]
        self.shift = model.config.l2 + (0.0 if model.config.l2 > 0 else CONDITION_EPS)  # newton_removal_prediction's
        m = self.coupled.shape[0]
        self.matrix = full[self.coupled][:, self.coupled] + self.shift * sparse.identity(m, format="csr")
        self.single = self.matrix.astype(np.float32) if single else self.matrix  # the CG's products
        self.diagonal = self.matrix.diagonal()[:, None].astype(self.single.dtype)  # [m, 1]
        self.floor = SINGLE_TOLERANCE if single else 0.0  # the smallest relative residual one CG pass aims at

    def solve(self, rhs: np.ndarray, *, start: np.ndarray | None = None,
              tolerance: float = SOLVE_TOLERANCE) -> np.ndarray:
        """M^{-1} rhs for rhs [E + R, d], from ``start`` (a nearby solution) or 0; stops at a residual of
        ``tolerance`` x ||rhs||."""
        x = rhs / self.shift  # exact on the uncoupled rows
        b = rhs[self.coupled]
        x[self.coupled] = self._refined(b, None if start is None else start[self.coupled], tolerance)
        return x

    def _refined(self, b: np.ndarray, start: np.ndarray | None, tolerance: float) -> np.ndarray:
        """Iterative refinement: x += CG_single(b - M x) until ||b - M x|| <= tolerance ||b|| in double precision.
        A tolerance at or above :data:`SINGLE_TOLERANCE` from 0 is one single pass, its own residual trusted."""
        target = tolerance * math.sqrt(_dot(b, b))
        x = np.zeros_like(b) if start is None else start.copy()
        r = b.copy() if start is None else b - self.matrix @ x
        for _ in range(REFINEMENTS):
            norm = math.sqrt(_dot(r, r))
            if norm <= target:
                break
            relative = target / norm
            x += self._pcg(r.astype(self.single.dtype), max(relative, self.floor))
            if relative >= self.floor:
                break  # this pass reached the tolerance itself: its single-precision residual is trusted
            r = b - self.matrix @ x
        return x

    def _pcg(self, b: np.ndarray, tolerance: float) -> np.ndarray:
        """Jacobi-preconditioned conjugate gradients with ``self.single`` (single precision unless the bench's
        baseline) from 0, to a residual of ``tolerance`` x ||b|| (in place: [m, d] temporaries are 6 MB)."""
        x = np.zeros_like(b)
        r = b.copy()
        target = tolerance**2 * _dot(b, b)
        z = r / self.diagonal
        p, rz, scratch = z.copy(), _dot(r, z), np.empty_like(b)
        for _ in range(SOLVE_ITERATIONS):
            q = self.single @ p
            step = b.dtype.type(rz / _dot(p, q))
            x += np.multiply(p, step, out=scratch)
            r -= np.multiply(q, step, out=scratch)
            if _dot(r, r) <= target:
                break
            np.divide(r, self.diagonal, out=z)
            rz, previous = _dot(r, z), rz
            p *= b.dtype.type(rz / previous)
            p += z
        return x

    def split(self, x: np.ndarray, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(entity part [E, d], relation part [R, d]) of a stacked solution, as tensors like ``like``."""
        tensor = torch.from_numpy(x).to(dtype=like.dtype, device=like.device)
        return tensor[: self.n_entities], tensor[self.n_entities:]


class TermCurvature:
    """|H| of :func:`~kgbias_core.influence.prediction.absolute_curvature_hvp` for a distance other than squared L2,
    and its solves, with :class:`SparseCurvature`'s interface (``solve``, ``split``).

    For pseudo-Huber each active term's curvature is per coordinate, d^2 psi = diag(delta^2 / (x_i^2 +
    delta^2)^1.5) in its residual x, so |H| is no M (x) I_d: one matrix per coordinate would cost d times
    SparseCurvature's memory (the squared-L2 default's 1.9M entries, times 100 coordinates). The solve applies the
    predictions' own operator instead, term by term (gathers and scatters), by the same Jacobi-preconditioned CG as
    :func:`~kgbias_core.influence.prediction.absolute_newton_step`, so a plan's prediction of its set is the
    lab's prediction of that set. ``start`` is not used: that CG starts from 0."""

    def __init__(self, model: StoredModel, hvp) -> None:
        self.n_entities = model.n_entities
        self.hvp = hvp
        self.like = model.entity_embeddings
        self.damping = _damping(model)  # newton_removal_prediction's

    def solve(self, rhs: np.ndarray, *, start: np.ndarray | None = None,
              tolerance: float = SOLVE_TOLERANCE) -> np.ndarray:
        """|H|^{-1} rhs for rhs [E + R, d] (stacked as SparseCurvature's), to a residual of ``tolerance`` x ||rhs||."""
        del start  # the CG of the predictions starts from 0
        entities, relations = self.split(rhs, self.like)
        x = preconditioned_cg(self.hvp, (entities, relations), diagonal=self.hvp.diagonal, damping=self.damping,
                              iterations=SOLVE_ITERATIONS, tolerance=tolerance)
        return torch.cat([x[0], x[1]]).double().cpu().numpy()

    split = SparseCurvature.split


_CURVATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CURVATURE_LOCK = threading.Lock()


def sparse_curvature(analysis: ModelAnalysis) -> SparseCurvature | TermCurvature:
    """The model's :class:`SparseCurvature` (squared L2), built once per analysis (the lab's analysis is shared: a
    second plan reuses it) from the analysis's |H| of the what-if predictions (``absolute_hvp``: one matrix for
    both, and a lab that has predicted an edit has it built already); for the other distances its
    :class:`TermCurvature` (the analysis's |H| too)."""
    if analysis.model.config.distance != "squared_l2":
        # the analysis's |H| where its negatives are the model's frozen ones (the planner's); an import's is built
        # here with its frozen negatives, a curvature per term and coordinate (FB15k-237's pseudo-Huber model:
        # 413,183 x 100; 1.5 s)
        return TermCurvature(analysis.model, analysis.absolute_hvp if analysis.negatives.exact else
                             absolute_curvature_hvp(analysis.model, active=analysis.active_terms))
    with _CURVATURE_LOCK:
        curvature = _CURVATURES.get(analysis)
        if curvature is None:
            hvp = analysis.absolute_hvp if analysis.negatives.exact else None  # the planner's negatives: frozen
            curvature = _CURVATURES[analysis] = SparseCurvature(analysis.model, terms=getattr(hvp, "terms", None))
        return curvature


class _Newton:
    """The two uses the planner makes of the Newton step on |H|: the exact predicted change of every occupation
    for a removal set (forward, as :func:`~kgbias_core.influence.prediction.newton_change` makes it for one), and
    the linear Newton influence of every triple on one occupation (adjoint)."""

    def __init__(self, analysis: ModelAnalysis, *, scale: float = 1.0, collateral_scale: float | None = None,
                 targets: Sequence[int] = ()) -> None:
        self.analysis = analysis
        self.scale = scale  # PlanConfig.step_scale: the targets' step is multiplied by it
        # PlanConfig.collateral_scale: every other occupation's (None: the targets' scale for all)
        self.collateral_scale = scale if collateral_scale is None else collateral_scale
        self.targets = list(targets)
        self.model = analysis.model
        self.curvature = sparse_curvature(analysis)
        self.before = self._bias(self.model.entity_embeddings, self.model.relation_embeddings)
        self.solves = 0

    def _bias(self, entities: torch.Tensor, relations: torch.Tensor) -> torch.Tensor:
        groups = self.analysis.groups
        here = groups.occupations.device
        return group_bias(entity_embeddings=entities.to(here), relation_embeddings=relations.to(here), groups=groups,
                          distance=self.model.config.distance)

    def _solve(self, rhs: tuple[torch.Tensor, torch.Tensor], start: np.ndarray | None = None,
               tolerance: float = SOLVE_TOLERANCE) -> np.ndarray:
        self.solves += 1
        stacked = torch.cat([rhs[0], rhs[1]]).detach().double().cpu().numpy()
        return self.curvature.solve(stacked, start=start, tolerance=tolerance)

    def change(self, removed: Sequence[int], *, start: np.ndarray | None = None,
               tolerance: float = SOLVE_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
        """(B_gr(theta + c Delta theta) - B_gr(theta) of every occupation [O], Delta theta stacked [E + R, d]),
        Delta theta = |H|^{-1} sum_S grad L (prediction.py's removal sign), c the step scale for the targets and the
        collateral scale for every other occupation; ``start``: a nearby set's (unscaled) step."""
        E, R = self.model.entity_embeddings, self.model.relation_embeddings
        if not len(removed):
            return np.zeros(self.before.shape[0]), np.zeros((E.shape[0] + R.shape[0], E.shape[1]))
        rows = torch.as_tensor(np.asarray(removed, dtype=np.int64), device=self.model.triples.device)
        step = self._solve(removal_gradient(self.model, rows), start=start, tolerance=tolerance)
        moved = self.curvature.split(step, E)
        after = self._bias(E + self.collateral_scale * moved[0], R + self.collateral_scale * moved[1])
        if self.targets and self.collateral_scale != self.scale:
            after[self.targets] = self._bias(E + self.scale * moved[0], R + self.scale * moved[1])[self.targets]
        return (after - self.before).double().cpu().numpy(), step

    def linear(self, occupation_index: int) -> np.ndarray:
        """s . grad L(z) for every training triple, s = |H|^{-1} grad B_gr: the Newton step's first order. [|G|]."""
        context = self.analysis.context
        # only the first guess of the k search: the search's tolerance is enough
        solution = self.curvature.split(self._solve(group_bias_rhs(context, occupation_index),
                                                    tolerance=SEARCH_TOLERANCE), context.entity_embeddings)
        return self.scale * influence_from_solution(context, self.model, solution).double().cpu().numpy()


#: The distances a removal is planned for: the models trained here whose |H| is exact (squared L2, pseudo-Huber;
#: imported L1 / L2 models have re-drawn negatives and an approximate |H|).
PLAN_DISTANCES = ("squared_l2", "pseudo_huber")


def plan_estimator(config: PlanConfig, distance: str = "squared_l2") -> str:
    """The estimator a plan's predictions come from, in words: the Newton step, the model's distance where it is
    not squared L2, and its scale when not 1."""
    return scaled_estimator(distance_estimator(ESTIMATOR, distance), config.step_scale)


# --- the greedy order and the k search ----------------------------------------------------------------
def greedy_order(order: np.ndarray, collateral: np.ndarray, link: np.ndarray, *, budget: np.ndarray,
                 used: np.ndarray, link_used: float, link_bound: float, limit: int,
                 block: int = 64) -> np.ndarray:
    """The candidates of ``order`` taken in turn, skipping each that would push an occupation's running sum
    |used + collateral| past its ``budget`` or the link proxy past ``link_bound``; at most ``limit``.

    Shapes: order [C] (positions into the columns of collateral), collateral [O', C], link [C], budget and used
    [O']. Vectorised by blocks: the running sums of a block are one cumsum, and everything before its first
    violation is taken at once. -> positions (into order's values) taken, in order.
    """
    taken: list[np.ndarray] = []
    n_taken, i, used = 0, 0, used.copy()
    while i < order.shape[0] and n_taken < limit:
        chunk = order[i:i + block]
        running = used[:, None] + np.cumsum(collateral[:, chunk], axis=1)  # [O', b]
        links = link_used + np.cumsum(link[chunk])  # [b]
        ok = (np.abs(running) <= budget[:, None]).all(axis=0) & (links <= link_bound)
        first_bad = int(np.argmin(ok)) if not ok.all() else chunk.shape[0]
        good = min(first_bad, limit - n_taken)
        if good:
            taken.append(chunk[:good])
            used = running[:, good - 1].copy()
            link_used = float(links[good - 1])
            n_taken += good
        violated = first_bad < chunk.shape[0] and good == first_bad
        i += good + 1 if violated else good  # the violating candidate is skipped for good
    return np.concatenate(taken) if taken else np.empty(0, dtype=np.int64)


def search_k(evaluate, linear: np.ndarray, *, start: float, target: Target, aim: float, max_solves: int,
             known: Mapping[int, float] | None = None) -> tuple[int, dict[int, float]]:
    """The prefix length k of the greedy order (secant-guided bisection, :func:`evaluate` k -> B_gr after).

    ``linear`` [n + 1]: the Newton step's linear prediction of the change for each prefix (0 at k = 0), which
    gives the first guess and is rescaled by what the exact evaluations find. ``known``: B_gr after at some k
    evaluated already (an Add plan's largest count): they bound the search. -> (k, the evaluations).
    """
    n = linear.shape[0] - 1
    half = aim * (target.high - target.low) / 2
    sigma = 1.0 if target.center >= start else -1.0
    evaluations: dict[int, float] = {0: start}

    def distance(value: float) -> float:  # < -half: not far enough, > half: past the aim
        return sigma * (value - target.center)

    def guess(scale: float, low: int, high: int) -> int:
        predicted = start + scale * linear[low + 1:high + 1]
        inside = np.nonzero(np.abs(predicted - target.center) <= half)[0]
        if inside.size:
            return low + 1 + int(inside[0])
        return low + 1 + int(np.argmin(np.abs(predicted - target.center)))

    lo, hi, scale = 0, None, 1.0
    for k in sorted(known or {}):  # what is known already brackets the search
        value = evaluations[k] = float(known[k])
        if linear[k] != 0 and (value - start) / linear[k] > 0:
            scale = (value - start) / linear[k]
        if distance(value) >= -half:
            hi = k
            break
        lo = k
    for _ in range(max_solves):
        upper = n if hi is None else hi - 1
        if upper <= lo:
            break
        k = guess(scale, lo, upper)
        if hi is not None and k in (lo + 1, upper) and upper - lo > 2:  # a secant stuck at an end: bisect
            k = (lo + hi) // 2
        value = evaluations[k] = evaluate(k)
        if linear[k] != 0 and (value - start) / linear[k] > 0:
            scale = (value - start) / linear[k]
        if distance(value) < -half:
            lo = k
        else:
            hi = k
        if hi is not None and hi - lo <= max(1, hi // 20):  # k to 5%: the estimator itself is not finer
            break
    return _best(evaluations, target=target, half=half), evaluations


def _best(evaluations: dict[int, float], *, target: Target, half: float) -> int:
    """The smallest k inside the aim, else the smallest inside the target interval, else the closest."""
    aimed = [k for k, v in evaluations.items() if abs(v - target.center) <= half]
    if aimed:
        return min(aimed)
    inside = [k for k, v in evaluations.items() if target.low <= v <= target.high]
    if inside:
        return min(inside)
    return min(evaluations, key=lambda k: (max(target.low - evaluations[k], evaluations[k] - target.high), k))


# --- the plan ------------------------------------------------------------------------------------------
def plan_removal(analysis: ModelAnalysis, targets: Sequence[Target], *, noise: pd.DataFrame | None = None,
                 seed_band: pd.DataFrame | None = None, config: PlanConfig = PlanConfig()) -> Plan:
    """The smallest removal set found whose predicted B_gr of every target lands in its interval (module docstring).

    ``seed_band``: the model's family's (:func:`~kgbias_core.families.family_group_bias_band`), else ``noise``: the
    model's :func:`~kgbias_core.whatif.runs.noise_band` (both None: the tolerance bands) set the other
    occupations' bands (:func:`collateral_bands`).
    Targets are planned in turn, each with the triples the earlier ones left. ``Plan.collateral``: one row per
    occupation with a defined B_gr: ``occupation, name, n_male, n_female, n_male_after, n_female_after`` (the
    groups are kept), ``group_bias_before, change`` (predicted), ``band``, ``bounded``, ``outside``, ``target``.
    """
    started = time.perf_counter()
    model = analysis.model
    if not targets:
        raise MeasureError(PLAN_NO_TARGETS)
    if model.config.distance not in PLAN_DISTANCES:
        raise MeasureError(PLAN_NEEDS_DISTANCE.format(model=model.name, distance=model.config.distance))
    groups = analysis.groups
    target_index = [groups.index(t.occupation) for t in targets]
    bands, band_source = collateral_bands(analysis, noise=noise, config=config, seed_band=seed_band)
    bounded = np.isfinite(bands)
    bounded[target_index] = False  # a target has its interval instead
    newton = _Newton(analysis, scale=config.step_scale, collateral_scale=config.collateral_scale,
                     targets=target_index)
    costs = link_costs(model)
    excluded = group_facts(analysis) if config.keep_groups else np.zeros(model.triples.shape[0], dtype=bool)
    others = np.nonzero(bounded)[0]
    # closed form on every bounded occupation (memoised by the analysis: a re-plan costs gathers only)
    influence = {int(o): analysis.influence(groups.labels[int(o)]).double().cpu().numpy() for o in others}
    targeted = {i: analysis.influence(groups.labels[i]).double().cpu().numpy() for i in target_index}
    linear = {i: newton.linear(i) for i in target_index}
    budget = bands[others].copy()
    rounds, loosened, repairs, units = [], not config.newton_units, 0, 1.0
    while True:
        chosen, changes, counts, used = _plan_targets(targets, target_index, newton=newton, linear=linear,
                                                      targeted=targeted, influence=influence, others=others,
                                                      budget=budget, costs=costs, excluded=excluded, config=config)
        outside = np.abs(changes[others]) > bands[others]
        missed = [max(t.low - (newton.before[i] + changes[i]), (newton.before[i] + changes[i]) - t.high, 0.0)
                  / max(t.high - t.low, 1e-12) for t, i in zip(targets, target_index, strict=True)]
        rounds.append(((sum(m > 0 for m in missed) + int(outside.sum()), float(sum(missed)), len(chosen)),
                       (chosen, changes, counts, units)))
        if outside.any() and repairs < config.repairs:
            # the Newton step found these bands left: give them less room in closed-form units, and plan again
            room = np.clip(bands[others] / np.maximum(np.abs(changes[others]), 1e-12), 0.1, 0.9)
            budget = np.where(outside, budget * room, budget)
            repairs += 1
            continue
        if not outside.any() and any(m > 0 for m in missed) and not loosened:
            # the bands stopped a target short while the Newton step left every one of them: spend them in its units
            loosened = True
            factor = newton_units(used, changes[others], budget)
            if factor > 1:
                budget, units = budget * factor, factor
                continue
        break
    # the closest round: fewest bounds broken, then nearest the targets, then fewest triples
    chosen, changes, counts, units = min(rounds, key=lambda r: r[0])[1]
    plan = _assemble(analysis, targets, target_index, chosen=chosen, changes=changes, counts=counts, bands=bands,
                     bounded=bounded, band_source=band_source, costs=costs, newton=newton, config=config,
                     started=started)
    return replace(plan, band_units=units)


def _plan_targets(targets, target_index, *, newton, linear, targeted, influence, others, budget, costs, excluded,
                  config):
    """One pass over the targets: the greedy order and the k search of each. -> (removed, changes [O], counts)."""
    chosen: list[int] = []
    taken = np.zeros(costs.shape[0], dtype=bool)
    used = np.zeros(others.shape[0])
    changes, step = np.zeros(newton.before.shape[0]), None
    counts = []
    for target, index in zip(targets, target_index, strict=True):
        start = float(newton.before[index]) + float(changes[index])
        delta = targeted[index]
        sigma = 1.0 if target.center >= start else -1.0
        candidates = np.nonzero((sigma * delta > 0) & ~excluded & ~taken)[0]
        movers = linear[index][(sigma * linear[index] > 0) & ~excluded]
        reach = float(movers.sum())  # the first-order change of removing every triple that moves it its way
        already = target.low <= start <= target.high
        if already or not candidates.size or len(chosen) >= config.max_triples:
            counts.append((int(candidates.size), 0, reach))
            continue
        collateral = np.stack([influence[int(o)][candidates] for o in others]) if others.size else np.zeros(
            (0, candidates.size))
        gain = sigma * delta[candidates]
        spent = (np.abs(collateral) / np.maximum(budget, 1e-12)[:, None]).sum(axis=0) \
            + costs[candidates] / max(config.max_link_share, 1e-12)
        distance = abs(target.center - start)
        score = gain * gain / (gain + distance * spent)
        order = np.argsort(-score, kind="stable")
        link_used = float(costs[chosen].sum()) if chosen else 0.0
        picked = greedy_order(order, collateral, costs[candidates], budget=budget, used=used, link_used=link_used,
                              link_bound=config.max_link_share, limit=config.max_triples - len(chosen),
                              block=config.block)
        rows = candidates[picked]
        prefix = np.concatenate([[0.0], np.cumsum(linear[index][rows])])
        evaluated: dict[int, tuple[np.ndarray, np.ndarray | None]] = {0: (changes, step)}

        def evaluate(k: int, rows=rows, evaluated=evaluated, index=index, earlier=tuple(chosen)) -> float:
            nearest = min(evaluated, key=lambda done: abs(done - k))  # its step starts the solve: fewer iterations
            evaluated[k] = newton.change(list(earlier) + rows[:k].tolist(), start=evaluated[nearest][1],
                                         tolerance=SEARCH_TOLERANCE)
            return float(newton.before[index] + evaluated[k][0][index])

        k, _ = search_k(evaluate, prefix, start=start, target=target, aim=config.aim,
                        max_solves=config.max_solves) if rows.size else (0, None)
        chosen += rows[:k].tolist()
        taken[rows[:k]] = True
        used = used + collateral[:, picked[:k]].sum(axis=1)
        # the plan's prediction to the full tolerance, from the search's step
        changes, step = newton.change(chosen, start=evaluated[k][1]) if k else evaluated[0]
        counts.append((int(rows.size), k, reach))
    return chosen, changes, counts, used


def newton_units(used: np.ndarray, changes: np.ndarray, budget: np.ndarray, *, spent: float = 0.5,
                 cap: float = MAX_NEWTON_UNITS) -> float:
    """How many closed-form units one unit of the Newton step is worth on the other occupations' bands: the median,
    over the occupations whose band the greedy pass spent at least ``spent`` of, of |closed-form sum| / |Newton
    change| for the same set (``used`` and ``changes`` [O']), at most ``cap``; 1 where none was spent so far.

    The greedy pass spends the bands in the closed form's units (Du Eq. 3, summed over the set), the plan is judged
    by the Newton step's change (METHODS §4). Where the closed form overstates the step (FB13: retrains move 0.15-0.21
    of the step and 1/40 of the closed form, issue 25), the bands run out long before the step leaves one: a
    budget times this factor is the band in the step's units. The median, not each occupation's own ratio: a set's
    closed-form sum and its step differ in sign and size on occupations it barely moves, and the repair pass that
    follows tightens every band the step still leaves.
    """
    bound = np.abs(used) >= spent * budget
    if not bound.any():
        return 1.0
    ratio = np.abs(used[bound]) / np.maximum(np.abs(changes[bound]), 1e-12)
    return float(min(np.median(ratio), cap))


def collateral_frame(analysis: ModelAnalysis, *, before: np.ndarray, changes: np.ndarray, bands: np.ndarray,
                     bounded: np.ndarray, target_index: Sequence[int],
                     added: tuple[int, int] = (0, 0)) -> pd.DataFrame:
    """``Plan.collateral`` (:func:`plan_removal`): one row per occupation with a defined B_gr ``before`` [O], its
    predicted ``change`` [O], ``band`` and whether it is ``bounded``, ``outside`` its band, a ``target``.
    ``added``: (men, women) an Add gives the (single) target; a removal keeps every group."""
    frame = occupations_frame(analysis)
    frame["n_male_after"], frame["n_female_after"] = frame["n_male"], frame["n_female"]
    for index in target_index:
        frame.loc[index, "n_male_after"] += added[0]
        frame.loc[index, "n_female_after"] += added[1]
    frame["group_bias_before"] = before
    frame["change"] = changes
    frame["band"] = bands
    frame["bounded"] = bounded
    frame["outside"] = bounded & (np.abs(changes) > np.nan_to_num(bands, nan=np.inf))
    frame["target"] = False
    frame.loc[list(target_index), "target"] = True
    return frame[np.isfinite(before)].reset_index(drop=True)


def collateral_problem(frame: pd.DataFrame) -> list[str]:
    """The collateral problem line of a plan whose ``frame`` (:func:`collateral_frame`) has rows outside, else []."""
    outside = frame[frame["outside"]]
    if not len(outside):
        return []
    names = ", ".join(f"{n} ({c:+.3f}, band {b:.3f})" for n, c, b in
                      zip(outside["name"], outside["change"], outside["band"], strict=True))
    return [PLAN_COLLATERAL.format(n=len(outside), m=int(frame["bounded"].sum()), names=names)]


def _assemble(analysis, targets, target_index, *, chosen, changes, counts, bands, bounded, band_source, costs,
              newton, config, started) -> Plan:
    groups = analysis.groups
    before = newton.before.double().cpu().numpy()
    frame = collateral_frame(analysis, before=before, changes=changes, bands=bands, bounded=bounded,
                             target_index=target_index)
    outcomes, problems = [], []
    for target, index, (n_candidates, n_chosen, reach) in zip(targets, target_index, counts, strict=True):
        point = float(changes[index])
        f = removal_band_factor(int(min(groups.n_male[index], groups.n_female[index])), scale=config.step_scale,
                                distance=analysis.model.config.distance)
        low, high = map(float, band_ends(point, f))
        outcome = TargetOutcome(target=target, name=groups.names[index], before=float(before[index]),
                                prediction=WhatIfPrediction(point=point, low=low, high=high,
                                                            estimator=plan_estimator(
                                                                config, analysis.model.config.distance)),
                                n_candidates=n_candidates, n_chosen=n_chosen, reach=reach)
        outcomes.append(outcome)
        if not outcome.inside:
            problems.append(PLAN_TARGET_MISSED.format(name=outcome.name, after=outcome.after, low=target.low,
                                                      high=target.high, k=n_chosen, n=n_candidates))
            sigma = 1.0 if target.center >= outcome.before else -1.0
            near = target.low if sigma > 0 else target.high
            if sigma * (outcome.before + reach - near) < 0:  # even every mover would stop short of the near edge
                problems.append(PLAN_OUT_OF_REACH.format(name=outcome.name, reach=reach,
                                                         to=outcome.before + reach))
            elif len(chosen) >= config.max_triples:
                problems.append(PLAN_CAPPED.format(name=outcome.name, cap=config.max_triples))
    problems += collateral_problem(frame)
    share = float(costs[chosen].sum()) if chosen else 0.0
    if share > config.max_link_share:
        problems.append(PLAN_LINK_BOUND.format(share=share, bound=config.max_link_share))
    return Plan(removed=tuple(int(i) for i in chosen), targets=tuple(outcomes), collateral=frame, link_share=share,
                feasible=not problems, problems=tuple(problems), bands=band_source, solves=newton.solves,
                seconds=time.perf_counter() - started, config=config)


# --- reading a plan -----------------------------------------------------------------------------------
def plan_triples(analysis: ModelAnalysis, plan: Plan) -> pd.DataFrame:
    """The plan's triples in words, in the planner's order: ``order, row`` (training index), ``in words``, labels,
    and the closed-form influence on each target (``influence:<label>``, Du Eq. 3). An Add plan: the triples it
    adds (``row`` empty: they are new), no influence."""
    if plan.kind == "add":
        return added_triples(analysis, plan.added)
    rows = torch.tensor(plan.removed, dtype=torch.long)
    frame = triples_in_words(triples_frame(analysis, rows.to(analysis.model.triples.device)))
    frame.insert(0, "row", list(plan.removed))
    frame.insert(0, "order", range(1, len(plan.removed) + 1))
    for outcome in plan.targets:
        label = outcome.target.occupation
        frame[f"influence:{label}"] = analysis.influence(label).cpu()[rows].tolist() if len(rows) else []
    columns = ["order", "row", "in words", "head", "relation", "tail"]
    return frame[columns + [c for c in frame.columns if c.startswith("influence:")]]


def added_triples(analysis: ModelAnalysis, edit: Edit | None) -> pd.DataFrame:
    """An Add's triples in words (the dummies are new: named "dummy i", as the Add prediction names them)."""
    model, base = analysis.model, analysis.model.n_entities
    triples = edit.added_triples if edit is not None else ()

    def name(entity: int) -> str:
        return f"dummy {entity - base}" if entity >= base else entity_name(analysis, entity)

    def label(entity: int) -> str:
        return edit.added_entities[entity - base] if entity >= base else model.entity_labels[entity]

    heads, relations, tails = zip(*triples, strict=True) if triples else ((), (), ())
    frame = pd.DataFrame({"head": [label(h) for h in heads],
                          "relation": [model.relation_labels[r] for r in relations],
                          "tail": [label(t) for t in tails], "head_name": [name(h) for h in heads],
                          "tail_name": [name(t) for t in tails]})
    frame = triples_in_words(frame)
    frame.insert(0, "row", pd.array([None] * len(frame), dtype="Int64"))
    frame.insert(0, "order", range(1, len(frame) + 1))
    return frame[["order", "row", "in words", "head", "relation", "tail"]]


def plan_headline(plan: Plan) -> str:
    """What the plan edits, in a few words: "remove 297 training triples" or "add 57 female dummies (c = 0.19)"."""
    if plan.kind != "add":
        return f"remove {len(plan.removed)} training triples"
    if plan.added is None:
        return "add no dummy (Du's Add)"
    return f"add {len(plan.added.added_entities)} dummy persons (Du's Add, {plan.added.strategy.removeprefix('add ')})"


def plan_summary(plan: Plan) -> list[str]:
    """The plan in a few lines: feasibility, each target's predicted B_gr with interval, collateral, the proxy."""
    lines = [f"plan: {plan_headline(plan)} — "
             + ("meets its bounds" if plan.feasible else "does NOT meet its bounds; the closest plan found")]
    unit = "candidate triples" if plan.kind != "add" else "dummies at most"
    for o in plan.targets:
        lines.append(f"{o.name}: B_gr {o.before:+.4f} -> predicted {o.after:+.4f} [{o.after_low:+.4f}, "
                     f"{o.after_high:+.4f}]; target [{o.target.low:+.4f}, {o.target.high:+.4f}] ({o.target.source}); "
                     f"{'inside' if o.inside else 'outside'}; {o.n_chosen} of {o.n_candidates} {unit}")
    lines.append(f"collateral: {plan.n_outside} of {plan.n_bounded} other occupations predicted beyond their band "
                 f"(bands: {plan.bands})")
    if plan.band_units > 1:
        lines.append(BAND_UNITS.format(units=plan.band_units))
    lines.append(f"{LINK_PROXY}: {plan.link_share:.4f} (bound {plan.config.max_link_share:g})")
    lines += [f"problem: {p}" for p in plan.problems]
    estimator = plan.targets[0].prediction.estimator if plan.targets else plan_estimator(plan.config)
    spent = "Newton solves" if plan.kind != "add" else "Add predictions"
    lines.append(f"estimator: {estimator}; {plan.solves} {spent}, {plan.seconds:.1f} s")
    return lines


# --- verification: predicted against actual, kept per model -------------------------------------------
def verification_rows(plan: Plan, change: pd.DataFrame, *, run: str, mrr_before: float | None = None,
                      mrr_after: float | None = None) -> pd.DataFrame:
    """One row per target of a plan verified by a masked retrain: predicted and actual B_gr after.

    ``change``: :func:`~kgbias_core.whatif.runs.bias_change` of the base and the retrained run; ``actual`` is
    over the base's persons (``group_bias_after_original``), the groups a removal's prediction holds fixed; for an
    Add plan over the edited groups (``group_bias_after``: the dummies counted, as its prediction counts them).
    ``edit``: "remove" or "add" (the step ratios read them apart).
    """
    change = change.set_index("occupation")
    bands = plan.collateral.set_index("occupation")
    bounded = bands[bands["bounded"]]
    actual_changes = change.loc[bounded.index, "change_original"]
    actual_outside = int((actual_changes.abs() > bounded["band"]).sum())
    rows = []
    for o in plan.targets:
        label = o.target.occupation
        actual = float(change.loc[label, judged_columns(plan.kind)[0]])
        rows.append({
            "verified_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "run": run, "occupation": label,
            "name": o.name, "edit": plan.kind,
            "k": len(plan.added.added_entities) if plan.added is not None else len(plan.removed),
            "group_bias_before": o.before,
            "target_low": o.target.low, "target_high": o.target.high,
            "predicted": o.after, "predicted_low": o.after_low, "predicted_high": o.after_high, "actual": actual,
            "actual_edited_groups": float(change.loc[label, "group_bias_after"]),
            "inside_predicted": o.inside, "inside_actual": bool(o.target.low <= actual <= o.target.high),
            "collateral_predicted": plan.n_outside, "collateral_actual": actual_outside, "bounded": plan.n_bounded,
            "link_share": plan.link_share, "mrr_before": mrr_before, "mrr_after": mrr_after,
            "step_scale": plan.config.step_scale, "target_source": o.target.source, "bands": plan.bands,
            "estimator": o.prediction.estimator,
        })
    return pd.DataFrame(rows)


def append_verifications(model_dir, rows: pd.DataFrame) -> pd.DataFrame:
    """Append ``rows`` to the model's record of verified plans, written atomically with the model's config and
    data hash (:func:`~kgbias_core.embeddings.results.save_result`): a record made by an earlier training of
    the model is not read back, so it starts again. A row of a run and target already recorded replaces the old
    one (a plan verified again reads the same run: counted twice, it would weigh twice in the step ratio).
    -> the whole record."""
    with _RECORD_LOCK:
        record = saved_verifications(model_dir)
        if record is not None:
            again = pd.MultiIndex.from_frame(record[["run", "occupation"]]).isin(
                pd.MultiIndex.from_frame(rows[["run", "occupation"]]))
            record = record[~again]
        record = rows if record is None or record.empty else pd.concat([record, rows], ignore_index=True)
        save_result(model_dir, VERIFICATIONS, record, params={})
    return record
