"""Du et al.'s headline claims, each measured on one model with its uncertainty (Du §3-§4).

A :class:`Finding` is one claim next to this model's figure, a 95% interval, a p-value where the
figure is a correlation, the number it rests on and a verdict. The claims (numbered as in issue 9):

1. B_gr grows with the share of men: Pearson r(B_gr, log(|M_o| / |F_o|)) over occupations (Du Table 1).
2. Weighted B_in aligns with B_gr better than vanilla B_in (Du §3.3: r 0.50 against 0.27).
3. Top-influence triples (Du §3.1, Fig. 1): the share using the occupation relation among the top
   1% by sign (74% / 78%); the share of women among the persons in the top positive triples and of
   men in the negative ones ("most"); influence against the person's degree (near zero at high degree).
4. IF-REMOVE lowers |B_gr| more than Random-REMOVE at matched k (Du §4.3, Fig. 4d-f).
5. Add-debiasing (c = 0.5) lowers |B_gr|, over all persons and over the original persons (Du Table 3).
6. Census r per measure (Du §4.1: B_gr 0.668, weighted B_in 0.610).

Claims 1-3 and 6 are read off the model; 4 and 5 need retrains, so they are computed from runs the
caller hands in (a removal curve, Add what-ifs, the noise band), and marked "not measured" without
them. Intervals: percentile bootstrap over occupations (claims 1-3, fixed seed), the Fisher z
interval of Pearson's r (census), the retraining noise band (claims 4-5: B_gr's spread over
retrains under other seeds). For a member of a seed family (:mod:`kgbias_core.families`), every claim read
off the model is measured on each member too, and a direction is stated only where the interval and that
seed band both exclude no effect (:func:`family_findings`). The pure computation lives here;
:func:`kgbias_core.tasks.findings_task` gathers the runs and caches the table beside the model.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import torch
from scipy import stats

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import Gender
from kgbias_core.errors import ADD_OTHER_C
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.tables import MIN_GROUP_SIZE, occupation_like_relations, top_influence
from kgbias_core.whatif.runs import noise_spread

#: What a finding says about the paper's claim on this model.
REPRODUCES, CONTRADICTS, INCONCLUSIVE, NOT_MEASURED = "reproduces", "contradicts", "inconclusive", "not measured"
#: Du's "top 1%" of triples by influence.
TOP_FRACTION = 0.01
#: Bootstrap resamples of occupations; the seed is fixed so a table is reproducible.
N_RESAMPLES = 2000
#: Prefix of the labels :func:`kgbias_core.whatif.edits.add_edit` gives its dummy persons.
DUMMY_PREFIX = "kgbias:dummy:"

FINDING_COLUMNS = ("claim", "key", "statement", "paper", "scope", "value", "low", "high", "p_value", "n",
                   "verdict", "detail")


@dataclass(frozen=True)
class Finding:
    """One claim of Du et al. and what this model shows."""

    claim: str  # "1", "3a", ...: the numbering, stable across models (the page joins on it + key)
    key: str  # machine name, e.g. "r_bgr_log_ratio"
    statement: str  # the claim in one sentence
    paper: str  # the paper's figure as printed ("0.668", "74%", "most", "positive")
    scope: str  # what it was measured over ("28 occupations", "Actor, k = 200")
    value: float  # this model's figure; NaN when not measured
    low: float  # 95% interval (bootstrap, Fisher z or noise band); NaN where none
    high: float
    p_value: float  # two-sided, for correlations; NaN otherwise
    n: int  # occupations, triples or persons the figure rests on
    verdict: str  # REPRODUCES, CONTRADICTS, INCONCLUSIVE or NOT_MEASURED
    detail: str  # how it was measured, or what is missing


def findings_frame(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings as a table with columns :data:`FINDING_COLUMNS`."""
    return pd.DataFrame([asdict(f) for f in findings], columns=list(FINDING_COLUMNS))


#: The text columns of a findings table (:data:`FINDING_COLUMNS`); the rest are numbers.
TEXT_COLUMNS = ("claim", "key", "statement", "paper", "scope", "verdict", "detail")


def typed_findings(frame: pd.DataFrame) -> pd.DataFrame:
    """A findings table read back from CSV with the types it was made with: a CSV turns an empty text into NaN and a
    claim "1" into the number 1, which a page or the command line would then show as "nan" or mis-join."""
    return frame.assign(**{column: frame[column].fillna("").astype(str) for column in TEXT_COLUMNS
                           if column in frame})


def direction_verdict(low: float, high: float, *, expected: int) -> str:
    """REPRODUCES when the interval excludes 0 on the ``expected`` side (+1 or -1), CONTRADICTS when it
    excludes 0 on the other, INCONCLUSIVE when it holds 0, NOT_MEASURED when it is NaN."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return NOT_MEASURED
    if low > 0 or high < 0:
        return REPRODUCES if (low > 0) == (expected > 0) else CONTRADICTS
    return INCONCLUSIVE


def majority_verdict(low: float, high: float) -> str:
    """For "most" claims: REPRODUCES when the interval of a share lies above 1/2, CONTRADICTS below."""
    return direction_verdict(low - 0.5, high - 0.5, expected=+1)


def bootstrap_interval(
    statistic, n: int, *, n_resamples: int = N_RESAMPLES, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of ``statistic(indices)`` over ``n_resamples`` draws of n indices with
    replacement (NaN draws, e.g. a constant resample, are dropped)."""
    if n < 3:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    values = np.array([statistic(rng.integers(0, n, n)) for _ in range(n_resamples)], dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return math.nan, math.nan
    tail = (1 - confidence) / 2
    return float(np.quantile(values, tail)), float(np.quantile(values, 1 - tail))


def pearson(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(r, two-sided p) over the finite pairs; NaN with fewer than 3 or a constant side."""
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 3 or np.ptp(x[keep]) == 0 or np.ptp(y[keep]) == 0:
        return math.nan, math.nan
    result = stats.pearsonr(x[keep], y[keep])
    return float(result.statistic), float(result.pvalue)


def _r(x: np.ndarray, y: np.ndarray, indices: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample with a constant side: NaN, dropped
        return pearson(x[indices], y[indices])[0]


def correlation_finding(
    x: np.ndarray, y: np.ndarray, *, claim: str, key: str, statement: str, paper: str, scope: str,
    expected: int = +1, detail: str = "",
) -> Finding:
    """Pearson r of y against x with its p-value and a bootstrap interval over the pairs (rows); the
    verdict needs both the interval to exclude 0 and p < 0.05."""
    r, p_value = pearson(x, y)
    low, high = bootstrap_interval(lambda i: _r(x, y, i), len(x))
    verdict = direction_verdict(low, high, expected=expected)
    if verdict != NOT_MEASURED and not p_value < 0.05:
        # The percentile interval of r can exclude 0 where Pearson's test does not (a few outlying
        # occupations): a direction is claimed only when both agree.
        verdict = INCONCLUSIVE
    return Finding(claim=claim, key=key, statement=statement, paper=paper, scope=scope, value=r, low=low,
                   high=high, p_value=p_value, n=int((np.isfinite(x) & np.isfinite(y)).sum()), verdict=verdict,
                   detail=detail)


def balanced_occupations(measures: pd.DataFrame, *, minimum: int = MIN_GROUP_SIZE) -> pd.DataFrame:
    """Rows of a measures table with at least ``minimum`` men and ``minimum`` women: the occupations
    every claim is measured over (smaller groups make B_gr and its aggregates noise)."""
    return measures[(measures["n_male"] >= minimum) & (measures["n_female"] >= minimum)].reset_index(drop=True)


# --- claims 1 and 2: B_gr against the gender ratio and against the aggregates of B_in ------------
def gender_ratio_finding(measures: pd.DataFrame) -> Finding:
    """Claim 1: r(B_gr, log(|M_o|/|F_o|)) over the balanced occupations (Du Table 1), expected > 0."""
    frame = balanced_occupations(measures)
    return correlation_finding(
        np.log(frame["n_male"].to_numpy(float) / frame["n_female"].to_numpy(float)),
        frame["group_bias"].to_numpy(float), claim="1", key="r_bgr_log_ratio",
        statement="B_gr grows with the share of men: r(B_gr, log M/F)", paper="positive",
        scope=f"{len(frame)} occupations", detail=f"occupations with >= {MIN_GROUP_SIZE} men and women",
    )


def aggregation_findings(measures: pd.DataFrame) -> list[Finding]:
    """Claim 2: r(B_gr, weighted B_in), r(B_gr, vanilla B_in) and their difference (Du §3.3)."""
    frame = balanced_occupations(measures)
    bgr = frame["group_bias"].to_numpy(float)
    weighted = frame["individual_bias_weighted"].to_numpy(float)
    vanilla = frame["individual_bias_vanilla"].to_numpy(float)
    scope = f"{len(frame)} occupations"
    found = [
        correlation_finding(weighted, bgr, claim="2", key="r_bgr_weighted", scope=scope, paper="0.50",
                            statement="weighted B_in aligns with B_gr: r(B_gr, weighted B_in)"),
        correlation_finding(vanilla, bgr, claim="2", key="r_bgr_vanilla", scope=scope, paper="0.27",
                            statement="vanilla B_in aligns with B_gr less: r(B_gr, vanilla B_in)"),
    ]
    difference = found[0].value - found[1].value
    low, high = bootstrap_interval(lambda i: _r(weighted, bgr, i) - _r(vanilla, bgr, i), len(frame))
    found.append(Finding(
        claim="2", key="r_weighted_minus_vanilla", statement="weighted beats vanilla: r(weighted) - r(vanilla)",
        paper="+0.23", scope=scope, value=difference, low=low, high=high, p_value=math.nan, n=len(frame),
        verdict=direction_verdict(low, high, expected=+1), detail="paired bootstrap over occupations"))
    return found


# --- claim 3: the top-influence triples ------------------------------------------------------------
def top_triple_counts(analysis: ModelAnalysis, occupation: str, *, fraction: float = TOP_FRACTION) -> dict[str, float]:
    """Counts behind claim 3 for one occupation.

    For each sign, the top ``fraction`` of the triples with that sign of delta_z
    (:func:`kgbias_core.tables.top_influence`): how many there are (``n_positive``), how many use an
    occupation-like relation (``occupation_positive``), how many persons of the occupation they hold
    (a person is the head or tail in M_o ∪ F_o; ``persons_positive``) and how many of those are
    women (``women_positive``); the same with ``negative`` (and ``men_negative``). ``rho_degree``:
    Spearman's rho between the degree of a triple's person of the occupation (the larger if two) and
    |delta_z|, over every triple that moves B_gr and holds one.
    """
    influence = analysis.influence(occupation)
    model, groups = analysis.model, analysis.groups
    # Made where the model's triples are (the device of the measures), so no comparison mixes devices.
    occupation_like = torch.tensor(occupation_like_relations(analysis), dtype=torch.long, device=model.triples.device)
    men, women = groups.members(groups.index(occupation))
    is_member = torch.zeros(model.n_entities, dtype=torch.bool, device=model.triples.device)
    is_member[men] = True
    is_member[women] = True
    counts: dict[str, float] = {}
    for sign in ("positive", "negative"):
        top = top_influence(influence, fraction=fraction, sign=sign)
        triples = model.triples[top]
        persons = torch.cat([triples[:, 0][is_member[triples[:, 0]]], triples[:, 2][is_member[triples[:, 2]]]])
        counts[f"n_{sign}"] = int(top.shape[0])
        counts[f"occupation_{sign}"] = int(torch.isin(triples[:, 1], occupation_like).sum())
        counts[f"persons_{sign}"] = int(persons.shape[0])
        counts[f"women_{sign}"] = int((groups.gender[persons] == Gender.FEMALE).sum())
        counts[f"men_{sign}"] = int((groups.gender[persons] == Gender.MALE).sum())
    moving = (influence != 0).nonzero().squeeze(1)
    heads, tails = model.triples[moving, 0], model.triples[moving, 2]
    degree = torch.maximum(torch.where(is_member[heads], groups.degree[heads], -1),
                           torch.where(is_member[tails], groups.degree[tails], -1))
    held = degree >= 0
    rho = math.nan
    if int(held.sum()) >= 3:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            rho = float(stats.spearmanr(degree[held].cpu().numpy(),
                                         influence[moving][held].abs().cpu().numpy()).statistic)
    counts["rho_degree"] = rho
    return counts


def _pooled_share(frame: pd.DataFrame, hits: str, total: str) -> tuple[float, float, float, int]:
    """sum(hits) / sum(total) over occupations, with a bootstrap interval over occupations."""
    h, t = frame[hits].to_numpy(float), frame[total].to_numpy(float)

    def share(i: np.ndarray) -> float:
        return float(h[i].sum() / t[i].sum()) if t[i].sum() else math.nan

    low, high = bootstrap_interval(share, len(frame))
    return share(np.arange(len(frame))), low, high, int(t.sum())


def top_triple_findings(counts: pd.DataFrame, *, fraction: float = TOP_FRACTION) -> list[Finding]:
    """Claim 3 pooled over occupations, from one :func:`top_triple_counts` row per occupation."""
    scope = f"{len(counts)} occupations, top {fraction:.0%} by sign"
    found = []
    for sign, paper in (("positive", "74%"), ("negative", "78%")):
        value, low, high, n = _pooled_share(counts, f"occupation_{sign}", f"n_{sign}")
        found.append(Finding(
            claim="3a", key=f"occupation_share_{sign}", paper=paper, scope=scope, value=value, low=low,
            high=high, p_value=math.nan, n=n, verdict=majority_verdict(low, high),
            statement=f"most top {sign} triples use the occupation relation (or its inverse)",
            detail="share of occupation-like relations, pooled; bootstrap over occupations"))
    for sign, gender in (("positive", "women"), ("negative", "men")):
        value, low, high, n = _pooled_share(counts, f"{gender}_{sign}", f"persons_{sign}")
        found.append(Finding(
            claim="3b", key=f"{gender}_in_top_{sign}", paper="most", scope=scope, value=value, low=low,
            high=high, p_value=math.nan, n=n, verdict=majority_verdict(low, high),
            statement=f"most persons in the top {sign} triples are {gender}",
            detail=f"persons of the occupation in those triples; share of {gender}"))
    rho = counts["rho_degree"].to_numpy(float)
    rho = rho[np.isfinite(rho)]
    low, high = bootstrap_interval(lambda i: float(rho[i].mean()), len(rho))
    found.append(Finding(
        claim="3c", key="rho_degree_influence", paper="negative", scope=f"{len(rho)} occupations",
        value=float(rho.mean()) if rho.size else math.nan, low=low, high=high, p_value=math.nan, n=len(rho),
        verdict=direction_verdict(low, high, expected=-1),
        statement="high-degree persons' triples have near-zero influence: Spearman rho(degree, |delta_z|)",
        detail="mean over occupations of rho over the triples that move B_gr"))
    return found


# --- claims 4 and 5: retrains ------------------------------------------------------------------------
def removal_finding(curve: pd.DataFrame, *, occupation_name: str, spread: float | None) -> Finding:
    """Claim 4 from a removal curve (``strategy, k, group_bias``; k = 0 the base): at the largest k run
    by both strategies, how much further IF-REMOVE moved B_gr towards zero (or past it) than
    Random-REMOVE: sign(B_gr before) * (B_gr after Random-REMOVE - B_gr after IF-REMOVE); > 0 as Du
    Fig. 4d-f shows. The interval is ± the occupation's noise band (spread of B_gr over retrains);
    the detail says where both ended, so an overshoot past zero is visible."""
    both = curve[curve["k"] > 0].groupby("k")["strategy"].nunique()
    matched = both[both == 2].index
    if not len(matched):
        return _not_measured("4", "if_minus_random", occupation_name, "no k run by both strategies")
    k = int(matched.max())
    at = curve[curve["k"] == k].set_index("strategy")["group_bias"]
    before = float(curve.loc[curve["k"] == 0, "group_bias"].iloc[0])
    after_if, after_random = float(at["IF-REMOVE"]), float(at["Random-REMOVE"])
    value = math.copysign(1.0, before) * (after_random - after_if)
    past = " (past zero)" if after_if * before < 0 else ""
    return _retrain_finding("4", "if_minus_random", value, spread, scope=f"{occupation_name}, k = {k}",
                            statement="IF-REMOVE moves B_gr towards zero more than Random-REMOVE of as many triples",
                            paper="IF-REMOVE lower",
                            detail=f"B_gr {before:+.3f} -> IF-REMOVE {after_if:+.3f}{past}, "
                                   f"Random-REMOVE {after_random:+.3f}" + _curve_prediction(curve, k))


def _curve_prediction(curve: pd.DataFrame, k: int) -> str:
    """'; predicted IF-REMOVE B_gr after ... [low, high] (estimator)' from a curve that stores the Newton
    prediction (an older curve stores none: nothing)."""
    if "estimator" not in curve.columns:
        return ""
    row = curve[(curve["k"] == k) & (curve["strategy"] == "IF-REMOVE")].iloc[0]
    if not row["estimator"] or not isinstance(row["estimator"], str):
        return ""
    return (f"; predicted IF-REMOVE B_gr after {row['predicted']:+.3f} [{row['predicted_low']:+.3f}, "
            f"{row['predicted_high']:+.3f}] ({row['estimator']})")


def add_findings(
    base: ModelAnalysis, what_if: ModelAnalysis, *, occupation: str, spread: float | None, add_scale: float = 1.0
) -> list[Finding]:
    """Claim 5 from one Add what-if: |B_gr before| - |B_gr after| over all persons of the what-if and
    over its original persons only (the dummies, labels starting :data:`DUMMY_PREFIX`, left out).
    > 0: Add debiased; the interval is ± the base's noise band for the occupation. ``add_scale``: the base's Add
    audit ratio, which the detail's prediction is multiplied by (as the lab's)."""
    before = float(base.group_bias(occupation))
    index = what_if.groups.index(occupation)
    name = what_if.groups.names[index]
    dummy = torch.tensor([label.startswith(DUMMY_PREFIX) for label in what_if.model.entity_labels],
                         device=what_if.model.device)
    original = what_if.groups.without(dummy)
    after_original = float(group_bias(entity_embeddings=what_if.model.entity_embeddings,
                                      relation_embeddings=what_if.model.relation_embeddings, groups=original)[index])
    predicted = _add_prediction(base, what_if, spread=spread, scale=add_scale)
    found = []
    for key, after, whom in (("add_all", float(what_if.group_bias(occupation)), "all persons"),
                             ("add_original", after_original, "the original persons")):
        found.append(_retrain_finding(
            "5", key, abs(before) - abs(after), spread, scope=f"{name}, {int(dummy.sum())} dummies",
            statement=f"Add (c = 0.5) lowers |B_gr| over {whom}: |before| - |after|", paper="lower",
            detail=f"B_gr {before:+.3f} -> {after:+.3f}" + (predicted if key == "add_all" else "")))
    return found


def _add_prediction(base: ModelAnalysis, what_if: ModelAnalysis, *, spread: float | None, scale: float = 1.0) -> str:
    """'; predicted B_gr after ... [low, high] (estimator)' of the Add run's edit, predicted on ``base`` before any
    retrain (:func:`~kgbias_core.whatif.edits.predict_edit`); nothing where its record cannot rebuild the edit or
    the model's distance has no Newton step."""
    from kgbias_core.errors import MeasureError
    from kgbias_core.whatif.edits import edit_of_record, predict_edit

    edit = edit_of_record(base.model, what_if.model.edit or {})
    if edit is None:
        return ""
    try:
        p = predict_edit(base, edit, spread=spread, scale=scale)
    except MeasureError:
        return ""
    before = float(base.group_bias(edit.occupation))
    return (f"; predicted B_gr after {before + p.point:+.3f} [{before + p.low:+.3f}, {before + p.high:+.3f}] "
            f"({p.estimator})")


def _retrain_finding(claim: str, key: str, value: float, spread: float | None, *, scope: str, statement: str,
                     paper: str, detail: str = "") -> Finding:
    if spread is None or not math.isfinite(spread):
        low = high = math.nan
        verdict, note = INCONCLUSIVE, "no noise band yet: the change cannot be told from retraining noise"
    else:
        low, high = value - spread, value + spread
        verdict, note = direction_verdict(low, high, expected=+1), "± the noise band (B_gr's spread over retrains)"
    return Finding(claim=claim, key=key, statement=statement, paper=paper, scope=scope, value=value, low=low,
                   high=high, p_value=math.nan, n=1, verdict=verdict, detail="; ".join(filter(None, [detail, note])))


def _not_measured(claim: str, key: str, scope: str, why: str) -> Finding:
    statement, paper = UNMEASURED_CLAIMS[claim]
    return Finding(claim=claim, key=key, statement=statement, paper=paper, scope=scope, value=math.nan,
                   low=math.nan, high=math.nan, p_value=math.nan, n=0, verdict=NOT_MEASURED, detail=why)


#: Statement and paper figure of the claims that can lack their input (a retrain, the census file).
UNMEASURED_CLAIMS = {
    "3": ("the top-influence triples (occupation relation, gender, degree)", "74% / most / negative"),
    "4": ("IF-REMOVE moves B_gr towards zero more than Random-REMOVE of as many triples", "IF-REMOVE lower"),
    "5": ("Add (c = 0.5) lowers |B_gr|", "lower"),
    "6": ("census r of each measure", "B_gr 0.668, weighted B_in 0.610"),
}


# --- claim 6: the census ------------------------------------------------------------------------------
#: How each census-correlated measure reads in a claim.
MEASURE_SYMBOLS = {"group_bias": "B_gr", "individual_bias_vanilla": "vanilla B_in",
                   "individual_bias_weighted": "weighted B_in", "fisher_individual_vanilla": "vanilla B'_in",
                   "fisher_individual_weighted": "weighted B'_in", "projection_bias": "B_wo",
                   "fisher_bp": "Fisher's b_p"}
#: Du §4.1's figures for the measures kgbias correlates with the census (METHODS §10).
PAPER_CENSUS = {"group_bias": "0.668", "individual_bias_weighted": "0.610", "fisher_individual_weighted": "0.590",
                "individual_bias_vanilla": "0.480", "fisher_individual_vanilla": "0.470"}


def census_findings(correlations: pd.DataFrame) -> list[Finding]:
    """Claim 6 from :func:`kgbias_core.data.census.census_validation`'s correlations (measure, r,
    p_value, n), with the Fisher z 95% interval of each r."""
    found = []
    for row in correlations.itertuples():
        low = high = math.nan
        if row.n > 3 and math.isfinite(row.r) and abs(row.r) < 1:
            z, half = math.atanh(row.r), 1.959964 / math.sqrt(row.n - 3)
            low, high = math.tanh(z - half), math.tanh(z + half)
        found.append(Finding(
            claim="6", key=f"census_{row.measure}",
            statement=f"{MEASURE_SYMBOLS.get(row.measure, row.measure)} correlates with the census share of men",
            paper=PAPER_CENSUS.get(row.measure, "positive"), scope=f"{row.n} paired occupations",
            value=float(row.r), low=low, high=high, p_value=float(row.p_value), n=int(row.n),
            verdict=direction_verdict(low, high, expected=+1),
            detail="Pearson r against census log(p/(1-p)), p = share of men; Fisher z interval"))
    return found


def model_findings(
    analysis: ModelAnalysis,
    measures: pd.DataFrame,
    *,
    census: pd.DataFrame | None = None,
    curves: dict[str, pd.DataFrame] | None = None,
    add_runs: Sequence[ModelAnalysis] = (),
    noise: pd.DataFrame | None = None,
    add_refused: Sequence[str] = (),
    add_scale: float = 1.0,
) -> list[Finding]:
    """Every claim on one model. ``measures`` is its :func:`kgbias_core.tables.measures_table`;
    ``census`` the census correlations (None: claim 6 not measured); ``curves`` the removal curves
    by occupation label (claim 4); ``add_runs`` Add what-ifs retrained from this model (claim 5);
    ``noise`` its noise band (:func:`kgbias_core.whatif.runs.noise_band`), the yardstick of 4 and 5; ``add_scale``
    its Add audit's ratio (the Add prediction's scale in claim 5's detail)."""
    found = [gender_ratio_finding(measures), *aggregation_findings(measures)]
    balanced = balanced_occupations(measures)
    counts = pd.DataFrame([top_triple_counts(analysis, o) for o in balanced["occupation"]])
    top = top_triple_findings(counts) if len(counts) else [_not_measured("3", "top_triples", "", "no occupation")]
    if not analysis.negatives.exact:  # claim 3's influence rests on re-drawn negatives: say so on each row
        top = [replace(f, detail=f"{f.detail}; influence {analysis.negatives.label}" if f.detail
                       else f"influence {analysis.negatives.label}") for f in top]
    found += top
    for occupation, curve in sorted((curves or {}).items()):
        name = analysis.groups.names[analysis.groups.index(occupation)]
        found.append(removal_finding(curve, occupation_name=name, spread=noise_spread(noise, occupation)))
    if not curves:
        found.append(_not_measured("4", "if_minus_random", "", "no removal curve: run findings --retrain OCC"))
    for run in add_runs:
        occupation = run.model.edit["occupation"]
        found += add_findings(analysis, run, occupation=occupation, spread=noise_spread(noise, occupation),
                              add_scale=add_scale)
    if not add_runs:  # ``add_refused``: Add what-ifs of another c than the paper's 0.5, never used for claim 5
        why = (ADD_OTHER_C.format(runs=", ".join(add_refused)) if add_refused
               else "no Add what-if: run findings --retrain OCC")
        found.append(_not_measured("5", "add", "", why))
    if census is not None:
        found += census_findings(census)
    else:
        found.append(_not_measured("6", "census", "", "no census file in the data directory"))
    return found


# --- a seed family: every finding read off the model with its seed band (issue 24) -------------------
#: Columns a family member's findings add: the finding's min and max over the family's seeds, and how many.
SEED_BAND_COLUMNS = ("seed_min", "seed_max", "n_seeds")
#: Claims read off one model (no retrain), each measured again on every member of a family. Claims 4 and 5 are
#: retrains: their interval is already the noise band, B_gr's spread over retrains under other seeds.
READ_OFF_CLAIMS = ("1", "2", "3a", "3b", "3c", "6")
#: The detail a finding gets where the seed band reaches its reference: no direction is stated.
SEEDS_DISAGREE = "over the {n} seeds of its family the figure runs from {low} to {high}, across {reference}: no " \
                 "direction stated"


def is_share(key: str) -> bool:
    """Whether a finding's figure is a share (claims 3a, 3b: "most" means above one half)."""
    return key.startswith(("occupation_share", "women_in", "men_in"))


def family_findings(frame: pd.DataFrame, members: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """``frame`` (one model's findings) with the seed band of each finding over its family.

    ``members``: the findings of every member of the family (this model's included; claims 4 and 5 of the
    others may be "not measured"). For each finding of :data:`READ_OFF_CLAIMS`, ``seed_min``, ``seed_max`` and
    ``n_seeds`` are its value's min, max and count over the members (same claim and key, NaN values skipped).
    A direction (reproduces, contradicts) is stated only where the interval and the seed band both exclude the
    reference (0; one half for a share): a finding whose band reaches it becomes inconclusive, its detail
    says why (:data:`SEEDS_DISAGREE`). Claims 4 and 5 keep their verdicts and have no band (NaN).
    """
    values = pd.concat([m[["claim", "key", "value"]] for m in members], ignore_index=True)
    values = values[values["claim"].isin(READ_OFF_CLAIMS) & values["value"].notna()]
    band = values.groupby(["claim", "key"])["value"].agg(seed_min="min", seed_max="max", n_seeds="count")
    out = frame.merge(band.reset_index(), on=["claim", "key"], how="left")
    for i, row in out.iterrows():
        if not (row["verdict"] in (REPRODUCES, CONTRADICTS) and row["n_seeds"] >= 2):
            continue
        reference = 0.5 if is_share(row["key"]) else 0.0
        if row["seed_min"] <= reference <= row["seed_max"]:
            number = (lambda x: f"{x:.0%}") if is_share(row["key"]) else (lambda x: f"{x:+.3f}")
            why = SEEDS_DISAGREE.format(n=int(row["n_seeds"]), low=number(row["seed_min"]),
                                        high=number(row["seed_max"]), reference="one half" if reference else "0")
            out.loc[i, "verdict"] = INCONCLUSIVE
            out.loc[i, "detail"] = "; ".join(filter(None, [row["detail"], why]))
    out["n_seeds"] = out["n_seeds"].fillna(0).astype(int)
    return out


def finding_text(row: pd.Series | Finding) -> str:
    """One finding in a table cell: "+0.416 [+0.175, +0.644], p 0.028: reproduces" (shares in %); for a family
    member, its seed band before the verdict ("; 3 seeds +0.301 to +0.520")."""
    if row.verdict == NOT_MEASURED:
        return f"not measured ({row.detail})" if row.detail else "not measured"
    share = is_share(row.key)

    def number(x: float) -> str:
        return f"{x:.0%}" if share else f"{x:+.3f}"

    text = number(row.value)
    if math.isfinite(row.low) and math.isfinite(row.high):
        text += f" [{number(row.low)}, {number(row.high)}]"
    if math.isfinite(row.p_value):
        text += f", p {row.p_value:.2g}"
    seed_min, seed_max = getattr(row, "seed_min", math.nan), getattr(row, "seed_max", math.nan)
    if math.isfinite(seed_min) and math.isfinite(seed_max):  # a family member (:func:`family_findings`)
        reference = 0.5 if share else 0.0
        across = f", across {'one half' if share else '0'}" if seed_min <= reference <= seed_max else ""
        text += f"; {int(row.n_seeds)} seeds {number(seed_min)} to {number(seed_max)}{across}"
    return f"{text}: {row.verdict}"


def side_by_side(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Findings of several models as one table: ``claim``, ``statement``, ``paper``, then one column of
    :func:`finding_text` per model (by the given titles); a row per claim key, in claim order, a
    retrain-based claim once per scope ("Actor, k = 200")."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    missing: list[tuple[str, str, object]] = []  # (claim, title, row): a retrain-based claim a model lacks
    for title, frame in tables.items():
        for row in frame.itertuples():
            retrained = row.claim in ("4", "5")
            if retrained and row.verdict == NOT_MEASURED:
                missing.append((row.claim, title, row))
                continue
            key = (row.claim, f"{row.key} {row.scope}" if retrained else row.key)
            entry = rows.setdefault(key, {"claim": row.claim, "statement": row.statement, "paper": row.paper})
            entry[title] = f"{row.scope}: {finding_text(row)}" if retrained else finding_text(row)
    for claim, title, row in missing:  # "not measured" beside the other models' runs, or a row of its own
        mine = [entry for (c, _), entry in rows.items() if c == claim] or [
            rows.setdefault((claim, row.key), {"claim": claim, "statement": row.statement, "paper": row.paper})]
        for entry in mine:
            entry.setdefault(title, finding_text(row))
    ordered = sorted(rows.items(), key=lambda item: item[0][0])  # stable: keeps each model's order within a claim
    return pd.DataFrame([entry for _, entry in ordered], columns=["claim", "statement", "paper", *tables]).fillna("")
