"""Judging a what-if against its base model: bias of every occupation and the noise band.

A from-scratch retrain can move B_gr by more than an edit itself (METHODS §9; on FB15k-237 a removed
triple changes every later batch unless the retrain is masked). So every comparison comes with the
spread of B_gr across retrains of the *unedited* graph under other seeds, cached once per model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import retrain_device
from kgbias_core.embeddings.store import StoredModel, config_fingerprint, load_result, read_config, save_result
from kgbias_core.embeddings.training import EpochCallback, train_transe
from kgbias_core.errors import ModelStoreError
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.tables import occupations_frame


def bias_change(base: ModelAnalysis, what_if: ModelAnalysis) -> pd.DataFrame:
    """B_gr of every occupation before and after, and the change (the collateral effect of an edit)."""
    before = occupations_frame(base).assign(group_bias=base.group_bias().tolist()).set_index("occupation")
    after = pd.Series(what_if.group_bias().tolist(), index=list(what_if.groups.labels), name="group_bias_after")
    frame = before.join(after, how="left").rename(columns={"group_bias": "group_bias_before"})
    frame["change"] = frame["group_bias_after"] - frame["group_bias_before"]
    return frame.reset_index()


def is_stale(run_dir: Path | str, base_dir: Path | str) -> bool:
    """True when the what-if at ``run_dir`` was not retrained from the model now at ``base_dir``.

    A run records its base's fingerprint (:func:`kgbias_core.tasks.whatif_task`): a base retrained
    since under the same name, on other data or with another config, has another one, and its
    comparison with the run would be meaningless. A missing base, and a run without a record
    (saved before kgbias kept one), cannot be vouched for either: stale.
    """
    try:
        return not made_from(read_config(run_dir), read_config(base_dir))
    except ModelStoreError:
        return True


def made_from(run_config: dict, base_config: dict) -> bool:
    """True when a run's config records exactly the fingerprint of this base config (see :func:`is_stale`)."""
    return (run_config.get("edit") or {}).get("base") == config_fingerprint(base_config)


def noise_band(
    model: StoredModel,
    *,
    model_dir: Path | str | None = None,
    seeds: Sequence[int] = (1, 2, 3),
    on_epoch: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """B_gr of every occupation after retraining the unedited graph under other seeds (cached per model).

    -> one row per occupation: ``occupation``, ``base``, one column per seed, ``spread`` (max - min
    over base and seeds). The frozen negatives are kept; initialisation and batch order change.
    """
    params = {"seeds": list(seeds)}
    if model_dir is not None:
        cached = load_result(model_dir, "noise_band", params=params)
        if cached is not None:
            return cached
    groups = occupation_groups(model)
    columns = {"base": group_bias(entity_embeddings=model.entity_embeddings,
                                  relation_embeddings=model.relation_embeddings, groups=groups)}
    for seed in seeds:
        result = train_transe(
            triples=model.triples.cpu(), negatives=model.frozen_negatives.cpu(), n_entities=model.n_entities,
            n_relations=model.n_relations, config=replace(model.config, seed=seed),
            device=retrain_device(model),
            on_epoch=on_epoch, should_stop=should_stop,
        )
        # Retrained where the base was trained; measured where the base's measures live.
        here = groups.occupations.device
        columns[f"seed_{seed}"] = group_bias(entity_embeddings=result.entity_embeddings.to(here),
                                             relation_embeddings=result.relation_embeddings.to(here), groups=groups)
    frame = pd.DataFrame({k: v.tolist() for k, v in columns.items()})
    frame.insert(0, "occupation", list(groups.labels))
    values = frame[list(columns)]
    frame["spread"] = values.max(axis=1) - values.min(axis=1)
    if model_dir is not None:
        save_result(model_dir, "noise_band", frame, params=params)
    return frame


def noise_spread(noise: pd.DataFrame | None, occupation: str) -> float | None:
    """The spread of ``occupation``'s B_gr in a :func:`noise_band` table; None without a band or a row."""
    if noise is None:
        return None
    hit = noise.loc[noise["occupation"] == occupation, "spread"]
    return float(hit.iloc[0]) if len(hit) else None


def random_baseline(curve: pd.DataFrame | None, *, k: int) -> tuple[int, float] | None:
    """What Random-REMOVE of about ``k`` triples did in a removal curve (``strategy, k, group_bias``,
    k = 0 the base): (its k nearest to ``k``, its change of B_gr); None without a curve or a random run."""
    if curve is None or k <= 0:
        return None
    random = curve[(curve["strategy"] == "Random-REMOVE") & (curve["k"] > 0)]
    if random.empty:
        return None
    nearest = random.iloc[(random["k"] - k).abs().argmin()]
    base = float(curve.loc[curve["k"] == 0, "group_bias"].iloc[0])
    return int(nearest["k"]), float(nearest["group_bias"]) - base
