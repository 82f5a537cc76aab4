"""Judging a what-if against its base model: bias of every occupation and the noise band.

A from-scratch retrain can move B_gr by more than an edit itself (METHODS §9; on FB15k-237 a removed
triple changes every later batch unless the retrain is masked). So every comparison comes with the
spread of B_gr across retrains of the *unedited* graph under other seeds, cached once per model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.data.graph import Gender, gender_of
from kgbias_core.device import retrain_device
from kgbias_core.embeddings.results import load_result, save_result
from kgbias_core.embeddings.store import (
    StoredModel,
    config_fingerprint,
    read_config,
)
from kgbias_core.embeddings.training import EpochCallback, train_transe
from kgbias_core.errors import ModelStoreError
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.tables import MIN_GROUP_SIZE, occupations_frame, split_small

#: Which persons "B_gr after" is over. Du et al. (§4.3) measure the retrained graph as it is: its groups, so
#: Add's dummies count and a person whose profession or gender fact was removed is out. That is the main
#: column; ``group_bias_after_original`` keeps the base's persons (the same M_o, F_o before and after).
AFTER_GROUPS_CHOICE = (
    "B_gr after is over the edited graph's groups, as Du et al. measure it (Add's dummies counted, persons whose "
    "profession or gender fact was removed left out); 'over the original persons' keeps the base's M_o and F_o."
)


def bias_change(base: ModelAnalysis, what_if: ModelAnalysis) -> pd.DataFrame:
    """B_gr of every occupation before and after, and the change (the collateral effect of an edit).

    ``group_bias_after`` and ``n_male_after``/``n_female_after``: over the edited graph's groups (Du's
    choice, :data:`AFTER_GROUPS_CHOICE`); ``group_bias_after_original`` and ``change_original``: the
    retrained embeddings over the base's persons, so that an edit that moves persons out of a group
    cannot pass for a change of the embedding. ``n_male``/``n_female`` are the base's counts.
    """
    before = occupations_frame(base).assign(group_bias=base.group_bias().tolist()).set_index("occupation")
    edited = what_if.groups
    after = pd.DataFrame({"group_bias_after": what_if.group_bias().tolist(), "n_male_after": edited.n_male.tolist(),
                          "n_female_after": edited.n_female.tolist()}, index=list(edited.labels))
    # The base's entity ids are the what-if's first ids (Add appends its dummies), so the base's groups index
    # the retrained embeddings directly.
    original = group_bias(entity_embeddings=what_if.model.entity_embeddings,
                          relation_embeddings=what_if.model.relation_embeddings, groups=base.groups,
                          distance=what_if.model.config.distance)
    frame = before.join(after, how="left").rename(columns={"group_bias": "group_bias_before"})
    frame["change"] = frame["group_bias_after"] - frame["group_bias_before"]
    frame["group_bias_after_original"] = original.tolist()
    frame["change_original"] = frame["group_bias_after_original"] - frame["group_bias_before"]
    return frame.reset_index()


#: Over whom a prediction of each kind of edit holds the groups, and so which retrained change judges it.
JUDGED_OVER = {"remove": "over the original persons", "add": "over the edited graph's groups"}
JUDGED_WHY = {"remove": "a removal's prediction holds the base's persons fixed",
              "add": "an Add prediction counts its dummies, as the edited graph does"}


def judged_columns(kind: str) -> tuple[str, str]:
    """(B_gr after, change): the columns of :func:`bias_change` a prediction of an edit of ``kind`` is judged by
    (:func:`judged_change` says why)."""
    return ("group_bias_after", "change") if kind == "add" else ("group_bias_after_original", "change_original")


def judged_change(change: Mapping[str, Any], kind: str) -> float:
    """The retrained change (a row of :func:`bias_change`) that a prediction of an edit of ``kind`` is judged
    against: a removal's prediction (the Newton step, the refit) holds the base's M_o and F_o fixed, so
    ``change_original``: where the edit removes a profession or gender fact the edited groups hold other persons
    (and are empty once the last woman's fact goes, B_gr NaN). An Add prediction counts its dummies in the
    groups, as Du measure the edited graph, so ``change``. :data:`JUDGED_OVER` says which in words."""
    return float(change[judged_columns(kind)[1]])


@dataclass(frozen=True)
class EditMembership:
    """How an edit changes who is in its target occupation's groups M_o and F_o (issue 28)."""

    occupation: str  # the target's label
    n_profession_facts: int  # the target's occupation facts (s, r_p, o) among the removed triples
    n_gender_facts: int  # gender facts of the target's persons among the removed triples
    n_removed: int  # persons of M_o or F_o who lose their occupation fact: out of the group
    n_relabelled: int  # persons of the target who keep it but whose gender code changes (e.g. male -> unknown)
    n_male_before: int
    n_female_before: int
    n_male_after: int  # |M_o| over the edited triples (Add's dummies counted)
    n_female_after: int
    n_added: int  # Add's dummy persons

    @property
    def changes_groups(self) -> bool:
        return bool(self.n_removed or self.n_relabelled or self.n_added)


def edit_membership(base: ModelAnalysis, occupation: str, *, removed: Sequence[int] = (), n_added_male: int = 0,
                    n_added_female: int = 0) -> EditMembership:
    """The persons of ``occupation`` an edit removes or re-labels: ``removed`` are training-triple indices of
    the base; Add's dummies join as ``n_added_male`` / ``n_added_female``. Read from the edited triples
    through the one gender reader, before any retraining (the lab states it beside the prediction)."""
    model, groups = base.model, base.groups
    index = groups.index(occupation)
    o = int(groups.occupations[index])
    triples = model.triples
    keep = torch.ones(triples.shape[0], dtype=torch.bool, device=triples.device)
    if removed:
        keep[torch.tensor(list(removed), dtype=torch.long, device=triples.device)] = False
    gone = triples[~keep]
    kept = triples[keep]
    r_p, r_g = groups.occupation_relation, groups.gender_relation
    holders = torch.unique(triples[(triples[:, 1] == r_p) & (triples[:, 2] == o), 0])  # every person of o
    holders_after = torch.unique(kept[(kept[:, 1] == r_p) & (kept[:, 2] == o), 0])
    gender_before = groups.gender
    gender_after = gender_of(kept, gender_relation=r_g, male=groups.male, female=groups.female,
                             n_entities=model.n_entities)
    binary = (gender_before == Gender.MALE) | (gender_before == Gender.FEMALE)
    lost = holders[~torch.isin(holders, holders_after)]
    stayed = holders_after
    relabelled = stayed[gender_before[stayed] != gender_after[stayed]]
    male_after = int((gender_after[holders_after] == Gender.MALE).sum()) + n_added_male
    female_after = int((gender_after[holders_after] == Gender.FEMALE).sum()) + n_added_female
    return EditMembership(
        occupation=groups.labels[index],
        n_profession_facts=int(((gone[:, 1] == r_p) & (gone[:, 2] == o)).sum()),
        n_gender_facts=int(((gone[:, 1] == r_g) & torch.isin(gone[:, 0], holders)).sum()),
        n_removed=int(binary[lost].sum()),
        n_relabelled=int(relabelled.numel()),
        n_male_before=int(groups.n_male[index]), n_female_before=int(groups.n_female[index]),
        n_male_after=male_after, n_female_after=female_after, n_added=n_added_male + n_added_female,
    )


def membership_of_record(base: ModelAnalysis, edit: Mapping[str, Any]) -> EditMembership:
    """:func:`edit_membership` of a run's edit record (config.json ``edit``): its removed triples, or Add's
    dummies (of the target's rarer gender in the base, as :func:`~kgbias_core.whatif.edits.add_edit` makes them)."""
    occupation = edit["occupation"]
    if edit.get("kind") == "add":
        groups = base.groups
        index = groups.index(occupation)
        n = int(edit.get("n_added_entities", 0))
        female = int(groups.n_male[index]) > int(groups.n_female[index])
        return edit_membership(base, occupation, n_added_male=0 if female else n, n_added_female=n if female else 0)
    return edit_membership(base, occupation, removed=tuple(edit.get("removed") or ()))


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


#: An imported model's prior noise floor, c in c * sd / sqrt(m) (:func:`import_noise_spread`): no retrain here can
#: give an import a noise band. Across the models trained here the band's spread scales with how far B_gr spreads over
#: the model's occupations (sd) and shrinks with the rarer gender's count m: spread * sqrt(m) / sd is about the same on
#: FB13's squared-L2 default and FB15k-237 with L2, whose spreads differ 15-fold. c is its pooled 90th percentile over
#: their 249 occupations (experiments/whatif_accuracy/import_noise_floor.py; docs/results/whatif.md). With it, 36 of
#: the 40 random sets of four real graphs predicted as imports fall inside their interval (5 without).
IMPORT_NOISE_FLOOR = 0.28


def bias_sd(analysis: ModelAnalysis) -> float:
    """How far B_gr spreads over the model's occupations: the standard deviation over those with both genders."""
    values = analysis.group_bias()
    values = values[torch.isfinite(values)]
    return float(values.double().std(correction=0)) if values.numel() > 1 else 0.0


def import_floor(sd: float, rarer: int, *, c: float = IMPORT_NOISE_FLOOR) -> float:
    """c * sd / sqrt(m), m the rarer gender's count (at least 1): the prior floor of :data:`IMPORT_NOISE_FLOOR`."""
    return c * sd / max(1, rarer) ** 0.5


def import_noise_spread(analysis: ModelAnalysis, occupation: str) -> float | None:
    """An imported model's prior noise floor for ``occupation`` (:data:`IMPORT_NOISE_FLOOR`); None for a model
    trained here, whose floor is its own noise band (:func:`noise_spread`)."""
    if analysis.negatives.exact:
        return None
    groups = analysis.groups
    index = groups.index(occupation)
    return import_floor(bias_sd(analysis), int(min(groups.n_male[index], groups.n_female[index])))


def noise_floor(noise: pd.DataFrame | None, analysis: ModelAnalysis, occupation: str) -> float | None:
    """The floor of a prediction's interval for ``occupation``: its spread in the model's noise band ``noise``
    (:func:`noise_spread`), or on an import, which no retrain here gives a band, the prior of
    :func:`import_noise_spread`; None for a model trained here whose band is not made yet. The lab, the basket and
    ``debias`` read it here."""
    spread = noise_spread(noise, occupation)
    return spread if spread is not None else import_noise_spread(analysis, occupation)


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


def collateral(frame: pd.DataFrame, *, occupation: str, minimum: int = MIN_GROUP_SIZE) -> tuple[pd.DataFrame,
                                                                                              pd.DataFrame]:
    """A :func:`bias_change` split as the Overview splits its ranking: (the target and the occupations with at
    least ``minimum`` men and women before and after the edit, those with fewer). A group of one or two persons
    moves by noise alone, so its change is listed apart, never drawn as an effect of the edit."""
    size = frame[["n_male", "n_female", "n_male_after", "n_female_after"]].min(axis=1).fillna(0)
    size = size.where(frame["occupation"] != occupation, max(1, minimum))  # the target is always drawn
    return split_small(frame, size=size, minimum=max(1, minimum))
