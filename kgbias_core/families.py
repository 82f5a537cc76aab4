"""Seed families: one training config trained under N seeds, and the seed band of every measure.

A bootstrap interval (:mod:`kgbias_core.measures.bootstrap`) resamples the persons of one trained model: it
says nothing about the training's own randomness (initialisation, frozen negatives, batch order), which moves
B_gr by 0.03-0.10 on the real graphs. A *family* is N ordinary models of one config that differ only in
``seed``. Its first seed's model keeps the family's plain name, the others are ``NAME-s<seed>``, and each
config.json carries the ``family`` record::

    "family": {"name": NAME, "seeds": [0, 1, 2], "members": ["NAME", "NAME-s1", "NAME-s2"]}

So a graph's default model (``fb15k237-transe``, seed 0) is the first member of its family as it stands: the
dashboard still opens it by name, and a store that holds it already gains only its siblings (``kgbias
prepare``). The record is in ``info`` (not in the weights' fingerprint): a member's cached results stay its
own. A model is a member only where the record lists its own name (a what-if of a member copies its info, and
must not borrow the band). The seed band of a measure is its spread over the members: min, max and the sample
standard deviation (ddof = 1) per occupation. A reading states a lean only when both the bootstrap interval
and the seed band exclude 0 (:func:`kgbias_core.readings.lean`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import KnowledgeGraph
from kgbias_core.embeddings.config import TrainConfig
from kgbias_core.embeddings.results import resave_model
from kgbias_core.embeddings.store import (
    check_output,
    is_model_dir,
    load_model,
    read_config,
    save_model,
    weight_settings,
)
from kgbias_core.embeddings.training import EpochCallback, train_model
from kgbias_core.errors import FAMILY_MEMBER_DIFFERS, FAMILY_TOO_SMALL, MeasureError, ModelStoreError
from kgbias_core.tables import measures_table

__all__ = [
    "FAMILY_KEY",
    "SEED_BAND_MEASURES",
    "family_members",
    "family_record",
    "family_seed_band",
    "member_name",
    "seed_band",
    "train_family",
    "with_seed_band",
]

#: config.json key of a member's family record.
FAMILY_KEY = "family"
#: The measures of an occupation that a family gives a seed band (the aggregates with a bootstrap interval).
SEED_BAND_MEASURES = ("group_bias", "individual_bias_vanilla", "individual_bias_weighted", "fisher_bp")
#: Suffixes of a measure's seed-band columns.
BAND_SUFFIXES = ("_seed_min", "_seed_max", "_seed_std")


def member_name(name: str, seed: int) -> str:
    """The stored name of a sibling of family ``name`` trained under ``seed``: ``NAME-s<seed>``."""
    return f"{name}-s{seed}"


def family_record(name: str, seeds: Sequence[int]) -> dict[str, Any]:
    """The ``family`` entry of every member's config.json: the first seed's model is ``NAME`` itself, every
    other one ``NAME-s<seed>``."""
    seeds = [int(s) for s in seeds]
    return {"name": name, "seeds": seeds, "members": [name, *(member_name(name, s) for s in seeds[1:])]}


def _expected_settings(graph: KnowledgeGraph, config: TrainConfig) -> dict[str, Any]:
    """:func:`~kgbias_core.embeddings.store.weight_settings` of the model ``config`` would train on ``graph``."""
    return weight_settings({"dataset": graph.name, "data_hash": graph.data_hash, **config.to_dict(), "edit": None})


def train_family(graph: KnowledgeGraph, config: TrainConfig, *, name: str, seeds: Sequence[int],
                 store: Path | str, overwrite: bool = False, device: torch.device | None = None,
                 on_member: Callable[[str, int, int], None] | None = None,
                 on_epoch: EpochCallback | None = None,
                 should_stop: Callable[[], bool] | None = None) -> list[Path]:
    """Train ``config`` on ``graph`` once per seed of ``seeds`` and save each as an ordinary model carrying the
    family record (:func:`family_record`: ``store/NAME`` for the first seed, ``store/NAME-s<seed>`` for the
    others). -> the members' directories, in seed order.

    A member already in the store that this training would make again (the same weight settings, seed and
    data hash: training is deterministic) is kept, not retrained, and only given the record; so a graph's
    default model gains its siblings, and a family cut short is completed. Any other model at a member's name
    is replaced only with ``overwrite`` (then every member is trained afresh). Every target is checked before
    the first training (a refused one costs nothing). ``on_member(name, i, n)`` is called before the i-th of
    the n trainings; ``on_epoch`` and ``should_stop`` are passed to each. A member is
    :func:`~kgbias_core.embeddings.training.train_model` of ``replace(config, seed=seed)``.
    """
    seeds = [int(s) for s in seeds]
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise MeasureError(FAMILY_TOO_SMALL.format(n=len(set(seeds))))
    record = family_record(name, seeds)
    store = Path(store)
    kept: dict[str, Path] = {}
    for seed, member in zip(seeds, record["members"], strict=True):
        target = store / member
        if not overwrite and is_model_dir(target):
            expected = _expected_settings(graph, replace(config, seed=seed))
            if weight_settings(read_config(target)) != expected:
                raise ModelStoreError(FAMILY_MEMBER_DIFFERS.format(path=target, family=name, seed=seed))
            kept[member] = target
        else:
            check_output(target, overwrite=overwrite)
    to_train = [(seed, member) for seed, member in zip(seeds, record["members"], strict=True) if member not in kept]
    trained: dict[str, Path] = {}
    for i, (seed, member) in enumerate(to_train):
        if on_member is not None:
            on_member(member, i, len(to_train))
        model = train_model(graph, replace(config, seed=seed), name=member, device=device, on_epoch=on_epoch,
                            should_stop=should_stop)
        trained[member] = save_model(replace(model, info={**model.info, FAMILY_KEY: record}), store,
                                     overwrite=overwrite)
    for path in kept.values():  # the record last: a family is complete only once every member exists
        if read_config(path).get(FAMILY_KEY) != record:
            stored = load_model(path)
            resave_model(replace(stored, info={**stored.info, FAMILY_KEY: record}), path)
    return [trained.get(member) or kept[member] for member in record["members"]]


def family_members(model_dir: Path | str) -> list[Path] | None:
    """The directories of the family ``model_dir`` belongs to (itself included, the members present beside it
    that carry the same family), or None when it belongs to none (no record, or a record that does not list
    its own name: a what-if copies its base's info) or fewer than 2 members are present."""
    record = read_config(model_dir).get(FAMILY_KEY)
    if not isinstance(record, dict) or not isinstance(record.get("members"), list):
        return None
    if Path(model_dir).name not in record["members"]:
        return None
    folder = Path(model_dir).parent
    present = []
    for member in map(str, record["members"]):
        if (folder / member / "config.json").is_file():
            theirs = read_config(folder / member).get(FAMILY_KEY)
            if isinstance(theirs, dict) and theirs.get("name") == record.get("name"):
                present.append(folder / member)
    return present if len(present) >= 2 else None


def seed_band(frames: Sequence[pd.DataFrame], measures: Sequence[str] = SEED_BAND_MEASURES) -> pd.DataFrame:
    """The spread over seeds of each measure per occupation, from the members' measures tables.

    ``frames``: one :func:`~kgbias_core.tables.measures_table` per member (column ``occupation`` and the
    ``measures``). -> one row per occupation: ``occupation``, ``n_seeds`` (members where the measure of the
    first of ``measures`` is defined), and per measure ``<m>_seed_min``, ``<m>_seed_max``, ``<m>_seed_std``
    (sample standard deviation, ddof = 1; NaN where fewer than 2 members define it). NaN values are skipped.
    """
    stacked = pd.concat([f[["occupation", *measures]].assign(_seed=i) for i, f in enumerate(frames)],
                        ignore_index=True)
    grouped = stacked.groupby("occupation", sort=False)
    band = pd.DataFrame({"occupation": list(grouped.groups)})
    band["n_seeds"] = grouped[measures[0]].count().to_numpy()
    for measure in measures:
        band[f"{measure}_seed_min"] = grouped[measure].min().to_numpy()
        band[f"{measure}_seed_max"] = grouped[measure].max().to_numpy()
        band[f"{measure}_seed_std"] = grouped[measure].std(ddof=1).to_numpy()
    return band


def family_seed_band(model_dir: Path | str, *, measures_of: Callable[[Path], pd.DataFrame] | None = None,
                     measures: Sequence[str] = SEED_BAND_MEASURES) -> pd.DataFrame | None:
    """:func:`seed_band` of ``measures`` over ``model_dir``'s family, or None when it belongs to none.

    ``measures_of``: a member's measures table (default :func:`~kgbias_core.tables.measures_table` of its
    analysis; the dashboard passes its cached one). The band has a ``family`` column (the family's name).
    """
    members = family_members(model_dir)
    if members is None:
        return None
    measures_of = measures_of or (lambda path: measures_table(ModelAnalysis(load_model(path))))
    band = seed_band([measures_of(path) for path in members], measures=measures)
    band.insert(1, "family", read_config(model_dir)[FAMILY_KEY]["name"])
    return band


def family_group_bias_band(model_dir: Path | str) -> pd.DataFrame | None:
    """:func:`seed_band` of B_gr alone over ``model_dir``'s family (None when it belongs to none): one pass over
    each member's (person, occupation) pairs, none of the measures table's bootstrap. What the planner reads."""

    def bias_of(path: Path) -> pd.DataFrame:
        analysis = ModelAnalysis(load_model(path))
        return pd.DataFrame({"occupation": list(analysis.groups.labels),
                             "group_bias": analysis.group_bias().double().cpu().numpy()})

    return family_seed_band(model_dir, measures_of=bias_of, measures=("group_bias",))


def with_seed_band(measures: pd.DataFrame, band: pd.DataFrame | None) -> pd.DataFrame:
    """``measures`` with the seed-band columns of :func:`seed_band` beside it (unchanged without a band)."""
    if band is None:
        return measures
    return measures.merge(band, on="occupation", how="left")
