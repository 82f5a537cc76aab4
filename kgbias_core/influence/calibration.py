"""The closed form's scale actual/predicted, fitted over several occupations, and its spread (METHODS §4).

The closed-form influence predicts the change of B_gr up to a factor (the diagonal Hessian, the
damping lambda): actual ≈ s · sum_{z in S} delta_z. One s fitted on a few occupations hides that s
differs between occupations (FB15k-237: 0.25-0.34). So the calibration fits s per occupation on
``n`` occupations spread over the B_gr range and the group sizes, by masked retraining without the
top-k and the bottom-k triples of each (METHODS §2), and keeps

- ``scale``: the least-squares slope through the origin over every run (the point prediction);
- ``low``, ``high``: the smallest and largest per-occupation slope (the range a prediction for an
  occupation outside the fit is quoted with).

A calibrated prediction is the interval sorted(raw · low, raw · high) around raw · scale. The
random-removal noise band (:mod:`kgbias_core.whatif.runs`) is a separate component: it says how far
a retrain moves B_gr anyway, not how wrong the scale is. :func:`leave_one_out` checks the interval
honestly: fit without occupation X, predict X's runs, count how often the actual change is inside.
The orchestration over one model (pick the occupations from its measures, retrain, fit) is
:func:`kgbias_core.tasks.calibration.calibrate`: it needs a ModelAnalysis, which sits above influence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from kgbias_core.embeddings.config import Calibration
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import MeasureError
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.influence.scale import predict, through_origin
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import FloatTensor

#: Occupations a calibration fits on by default (issue 13: at least 6).
CALIBRATION_OCCUPATIONS = 6
#: An occupation is eligible when it has at least this many persons of each gender.
MIN_EACH_GENDER = 5
#: Columns of a calibration's runs table.
RUN_COLUMNS = ("occupation", "name", "kind", "k", "predicted", "actual")


def calibration_occupations(
    groups: OccupationGroups, bias: FloatTensor, *, n: int = CALIBRATION_OCCUPATIONS, min_each: int = MIN_EACH_GENDER
) -> list[int]:
    """Up to ``n`` occupation indices spread over the B_gr range and the group sizes.

    Eligible: a defined B_gr and at least ``min_each`` persons of each gender (a small graph with
    fewer than ``n`` such occupations falls back to the ``n`` with the most persons of the rarer
    gender). They are sorted by B_gr and cut into ``n`` bins of equal count; from each bin the
    largest group is taken, and from every other bin the group of median size instead, so that
    small and large groups both enter. Fewer than 3 usable occupations is a :class:`MeasureError`
    (a range and a leave-one-out check need 3).
    """
    smaller = torch.minimum(groups.n_male, groups.n_female)
    usable = [i for i in range(len(groups.labels)) if int(smaller[i]) >= 1 and math.isfinite(float(bias[i]))]
    eligible = [i for i in usable if int(smaller[i]) >= min_each]
    if len(eligible) < n:
        eligible = sorted(usable, key=lambda i: (-int(smaller[i]), i))[:n]
    if len(eligible) < 3:
        raise MeasureError(
            f"calibration needs at least 3 occupations with persons of both genders; this model has {len(eligible)}"
        )
    eligible.sort(key=lambda i: float(bias[i]))
    chosen = []
    for b, part in enumerate(np.array_split(np.array(eligible), min(n, len(eligible)))):
        by_size = sorted(part.tolist(), key=lambda i: (int(groups.n_male[i] + groups.n_female[i]), i))
        chosen.append(by_size[-1] if b % 2 == 0 else by_size[len(by_size) // 2])
    return chosen


def calibration_runs(
    model: StoredModel,
    *,
    occupations: Sequence[int],
    influence_of: Callable[[int], FloatTensor],
    groups: OccupationGroups,
    k: int | None = None,
    on_run: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Masked retrains without the top-k and bottom-k triples of each occupation (METHODS §2, §4).

    ``influence_of(index)`` is delta_z B_gr of occupation ``index`` over the training triples; k is
    1% of the triples with non-zero influence, at least 5, unless given. ``on_run(done, total)``
    reports progress. -> one row per (occupation, kind): :data:`RUN_COLUMNS`.
    """
    total = 1 + 2 * len(occupations)
    base = masked_retrain_bias(model, removed=None, groups=groups)
    if on_run is not None:
        on_run(1, total)
    rows = []
    for index in occupations:
        influence = influence_of(index)
        size = k or max(5, int(0.01 * int((influence != 0).sum())))
        for kind in ("top", "bottom"):
            removed = removal_set(influence, kind=kind, k=size)
            after = masked_retrain_bias(model, removed=removed, groups=groups)
            rows.append({"occupation": groups.labels[index], "name": groups.names[index], "kind": kind, "k": size,
                         "predicted": float(influence[removed].sum()),
                         "actual": float(after[index]) - float(base[index])})
            if on_run is not None:
                on_run(len(rows) + 1, total)
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


def fit_calibration(runs: pd.DataFrame) -> Calibration:
    """The pooled scale and the range of per-occupation scales of a :func:`calibration_runs` table."""
    per_occupation = {
        label: through_origin(part["predicted"].to_numpy(), part["actual"].to_numpy())
        for label, part in runs.groupby("occupation", sort=False)
    }
    slopes = [v for v in per_occupation.values() if math.isfinite(v)]
    scale = through_origin(runs["predicted"].to_numpy(), runs["actual"].to_numpy())
    if not slopes or not math.isfinite(scale):
        raise MeasureError("calibration failed: every removal set has a predicted change of 0")
    kept = {label: v for label, v in per_occupation.items() if math.isfinite(v)}
    return Calibration(scale=scale, low=min(slopes), high=max(slopes), occupations=tuple(kept),
                       per_occupation=tuple(kept.values()))


def leave_one_out(runs: pd.DataFrame) -> pd.DataFrame:
    """Each occupation's runs predicted by the calibration fitted without it.

    -> the runs with ``point``, ``low``, ``high`` (the interval of :func:`predict` from the other
    occupations) and ``inside`` (low <= actual <= high). Needs runs of at least 3 occupations.
    """
    labels = list(dict.fromkeys(runs["occupation"]))
    if len(labels) < 3:
        raise MeasureError(f"leave-one-out needs runs of at least 3 occupations, found {len(labels)}")
    parts = []
    for label in labels:
        held_out = runs["occupation"] == label
        calibration = fit_calibration(runs[~held_out])
        part = runs[held_out].copy()
        predictions = [predict(raw, scale=calibration.scale, calibration=calibration) for raw in part["predicted"]]
        part["point"] = [p.point for p in predictions]
        part["low"] = [p.low for p in predictions]
        part["high"] = [p.high for p in predictions]
        part["inside"] = (part["low"] <= part["actual"]) & (part["actual"] <= part["high"])
        parts.append(part)
    return pd.concat(parts, ignore_index=True)
