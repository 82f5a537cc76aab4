"""Influence scores against actual retraining (Du §4.2, METHODS §9), and the scale calibration.

For an occupation: remove the k most positive, the k most negative and k random training triples,
retrain *masked* from the same seed (METHODS §2: same permutation, same frozen negatives, the
removed rows weighted 0), and compare the predicted change sum_{z in S} delta_z with the actual
change of B_gr. The random sets give the noise level that r must be read against; the targeted
sets give the scale actual/predicted (least squares through the origin, METHODS §4; the stored
calibration over several occupations is :mod:`kgbias_core.influence.calibration`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy import stats

from kgbias_core.device import retrain_device
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import EpochCallback, train_transe
from kgbias_core.influence.scale import through_origin
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import FloatTensor, LongTensor

REMOVAL_KINDS = ("top", "bottom", "random")
#: Default removal sizes, in percent of the triples that move B_gr at all: small, medium, large.
REMOVAL_SHARES = (2, 8, 32)


def default_ks(n_moving: int) -> list[int]:
    """Removal sizes k for an occupation whose B_gr ``n_moving`` training triples move (non-zero influence)."""
    return [max(1, n_moving * share // 100) for share in REMOVAL_SHARES]


def removal_set(influence: FloatTensor, *, kind: str, k: int, seed: int = 0) -> LongTensor:
    """The k triples with the largest ('top'), smallest ('bottom') delta_z, or k at random."""
    if kind == "top":
        return torch.topk(influence, k).indices
    if kind == "bottom":
        return torch.topk(-influence, k).indices
    generator = torch.Generator().manual_seed(seed + k)
    return torch.randperm(influence.shape[0], generator=generator)[:k]


def masked_retrain_bias(
    model: StoredModel,
    *,
    removed: LongTensor | None,
    groups: OccupationGroups,
    on_epoch: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> FloatTensor:
    """B_gr of every occupation after retraining ``model``'s triples without ``removed``. -> [O].

    The retrain runs on :func:`~kgbias_core.device.retrain_device` (the kind of device ``model`` was trained
    on); B_gr is measured where ``groups`` lives, the device of the measures.
    """
    weights = torch.ones(model.triples.shape[0])
    if removed is not None:
        weights[removed.cpu()] = 0
    result = train_transe(
        triples=model.triples.cpu(), negatives=model.frozen_negatives.cpu(), n_entities=model.n_entities,
        n_relations=model.n_relations, config=model.config, weights=weights, device=retrain_device(model),
        on_epoch=on_epoch, should_stop=should_stop,
    )
    return group_bias(
        entity_embeddings=result.entity_embeddings.to(groups.occupations.device),
        relation_embeddings=result.relation_embeddings.to(groups.occupations.device),
        groups=groups, distance=model.config.distance,
    )


@dataclass(frozen=True)
class AccuracySummary:
    """Predicted vs actual change of B_gr for one occupation."""

    r: float  # Pearson r over all removal sets
    p_value: float
    noise: float  # max |actual change| over the random sets
    scale: float  # actual/predicted, least squares through the origin over targeted sets
    sign_agreement: float  # share of targeted sets whose actual change has the predicted sign


def influence_accuracy(
    model: StoredModel,
    *,
    influence: FloatTensor,
    occupation_index: int,
    groups: OccupationGroups,
    ks: Sequence[int],
    kinds: Sequence[str] = REMOVAL_KINDS,
    base_bias: float | None = None,
    on_run: Callable[[str, int, float, float], None] | None = None,
) -> pd.DataFrame:
    """One row per (kind, k): ``kind, k, predicted, actual`` (changes of B_gr of the occupation).

    ``base_bias`` is B_gr of an unedited masked retrain; by default it is retrained here so that
    base and edits run under identical conditions (the stored model may come from another machine).
    """
    if base_bias is None:
        base_bias = float(masked_retrain_bias(model, removed=None, groups=groups)[occupation_index])
    rows = []
    for kind in kinds:
        for k in ks:
            removed = removal_set(influence, kind=kind, k=k)
            predicted = float(influence[removed].sum())
            after = masked_retrain_bias(model, removed=removed, groups=groups)
            actual = float(after[occupation_index]) - base_bias
            rows.append({"kind": kind, "k": k, "predicted": predicted, "actual": actual})
            if on_run is not None:
                on_run(kind, k, predicted, actual)
    return pd.DataFrame(rows)


def summarize_accuracy(runs: pd.DataFrame) -> AccuracySummary:
    """r, p, the random-removal noise and the calibrated scale of a table from :func:`influence_accuracy`."""
    predicted, actual = runs["predicted"].to_numpy(), runs["actual"].to_numpy()
    r, p = stats.pearsonr(predicted, actual) if len(runs) >= 3 else (float("nan"), float("nan"))
    random = runs["kind"] == "random"
    targeted = ~random.to_numpy()
    noise = float(np.abs(actual[random.to_numpy()]).max()) if random.any() else float("nan")
    x, y = predicted[targeted], actual[targeted]
    scale = through_origin(x, y)
    signs = float(np.mean(np.sign(x) == np.sign(y))) if targeted.any() else float("nan")
    return AccuracySummary(r=float(r), p_value=float(p), noise=noise, scale=scale, sign_agreement=signs)
