"""Debiasing what-ifs (Du §4.3, METHODS §9): edit the training triples, retrain, compare.

Two edits: **add** c·(|M_o| − |F_o|) dummy persons of the under-represented gender linked to the
occupation, and **remove** a set of training triples (chosen by influence, at random, or by hand);
:func:`make_edit` builds either from the strategy's name, for the command line and the lab alike.
A what-if retrains from the base model's seed and initialisation (a removal is a masked retrain,
METHODS §2, so it differs from the base only by the removed triples). There is no warm start: a few
epochs from the base weights moved the edited occupation's B_gr by about a fifth of what retraining
does on FB15k-237, several noise bands off (docs/results.md,
experiments/warm_vs_scratch/whatif_warm_vs_scratch.py); the instant estimate is the Newton-step
prediction of :func:`predict_edit` (:mod:`kgbias_core.influence.prediction`), for removals and Add alike.
The base model is never modified: every what-if is a new :class:`StoredModel`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

import torch

from kgbias_core.device import retrain_device
from kgbias_core.embeddings.objective import join_negatives, negatives_count, negatives_of
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import (
    EpochCallback,
    frozen_negatives,
    initial_embeddings,
    negative_draw,
    train_transe,
)
from kgbias_core.errors import (
    ADD_NOTHING,
    ADD_ONE_GENDER,
    LAB_K_TOO_LARGE,
    REMOVE_NOTHING,
    REMOVE_OUT_OF_RANGE,
    UNKNOWN_EDIT_STRATEGY,
    MeasureError,
)
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.influence.prediction import Addition, WhatIfPrediction, newton_addition_prediction, predict_removal
from kgbias_core.influence.retraining_check import removal_set
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.types import LongTensor

if TYPE_CHECKING:
    from kgbias_core.analysis import ModelAnalysis

#: How an edit is chosen (Du §4.3): Add dummies, IF-REMOVE, Random-REMOVE, or a hand-picked basket.
EditStrategy = Literal["add", "if", "random", "basket"]
#: Du et al.'s cap on the number of dummies for one occupation.
MAX_DUMMIES = 10_000
#: The frozen negatives of added rows come from their own stream, so the base rows keep theirs.
_ADDED_NEGATIVES_STREAM = 17


@dataclass(frozen=True)
class Edit:
    """A change of the training triples, recorded in the what-if model's config."""

    kind: Literal["add", "remove"]
    occupation: str  # entity label of the occupation the edit targets
    removed: tuple[int, ...] = ()  # training-triple indices of the base model (remove)
    added_triples: tuple[tuple[int, int, int], ...] = ()  # id-space triples (add), dummies >= base E
    added_entities: tuple[str, ...] = ()  # labels of the dummy persons (add)
    strategy: str = ""  # "if-remove", "random-remove", "basket", "add c=0.5"

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "occupation": self.occupation,
            "strategy": self.strategy,
            "n_removed": len(self.removed),
            "removed": list(self.removed),
            "n_added_triples": len(self.added_triples),
            "n_added_entities": len(self.added_entities),
        }


def add_edit(model: StoredModel, occupation: str, *, c: float = 0.5, cap: int = MAX_DUMMIES) -> Edit:
    """Du's Add: c·(|M_o| − |F_o|) dummies d with (d, r_g, f) and (d, r_p, o); mirrored if women dominate."""
    groups = occupation_groups(model)
    index = groups.index(occupation)
    occupation = groups.labels[index]  # the label, also when a readable name was given
    n_male, n_female = int(groups.n_male[index]), int(groups.n_female[index])
    if n_male == 0 or n_female == 0:  # B_gr (Du eq. 2) compares the two groups: undefined before and after
        raise MeasureError(ADD_ONE_GENDER.format(occupation=occupation, n_male=n_male, n_female=n_female))
    count = min(int(round(c * abs(n_male - n_female))), cap)
    if count <= 0:
        raise MeasureError(ADD_NOTHING.format(occupation=occupation, c=c, n_male=n_male, n_female=n_female))
    gender = groups.female if n_male > n_female else groups.male
    gender_name = "female" if n_male > n_female else "male"
    base = model.n_entities
    labels = tuple(f"kgbias:dummy:{gender_name}:{occupation}:{i}" for i in range(count))
    occupation_id = int(groups.occupations[index])
    triples = []
    for i in range(count):
        triples.append((base + i, groups.gender_relation, gender))
        triples.append((base + i, groups.occupation_relation, occupation_id))
    return Edit(kind="add", occupation=occupation, added_triples=tuple(triples), added_entities=labels,
                strategy=f"add c={c} ({count} {gender_name} dummies)")


def remove_edit(model: StoredModel, occupation: str, removed: LongTensor, *, strategy: str) -> Edit:
    """Remove the training triples at ``removed`` (indices into ``model.triples``)."""
    indices = sorted(set(int(i) for i in removed.tolist()))
    if not indices:
        raise MeasureError(REMOVE_NOTHING)
    n = model.triples.shape[0]
    if indices[0] < 0 or indices[-1] >= n:
        raise MeasureError(REMOVE_OUT_OF_RANGE.format(n=n))
    return Edit(kind="remove", occupation=occupation, removed=tuple(indices), strategy=strategy)


def make_edit(
    analysis: ModelAnalysis,
    occupation: str,
    *,
    strategy: EditStrategy,
    k: int = 0,
    c: float = 0.5,
    cap: int = MAX_DUMMIES,
    seed: int = 0,
    indices: Sequence[int] = (),
) -> Edit:
    """The edit of ``occupation`` that ``strategy`` names (Du §4.3, METHODS §9).

    - ``add``: c·(|M_o| − |F_o|) dummies of the rarer gender, at most ``cap`` (:func:`add_edit`);
    - ``if``: IF-REMOVE, the k triples whose influence moves B_gr most towards 0 — fewer when
      fewer move it that way (``len(edit.removed)`` says how many);
    - ``random``: Random-REMOVE, k random training triples (drawn from ``seed``);
    - ``basket``: the training triples at ``indices``.
    A k above the number of training triples is a :class:`MeasureError`.
    """
    model = analysis.model
    # The label from here on, whatever spelling the user typed: the stored edit and every lookup use it.
    occupation = analysis.groups.labels[analysis.groups.index(occupation)]
    if strategy == "add":
        return add_edit(model, occupation, c=c, cap=cap)
    if strategy == "basket":
        edit = remove_edit(model, occupation, torch.tensor(list(indices), dtype=torch.long), strategy="basket")
        return replace(edit, strategy=f"basket k={len(edit.removed)}")
    if strategy not in ("if", "random"):
        raise MeasureError(UNKNOWN_EDIT_STRATEGY.format(strategy=strategy, known=", ".join(get_args(EditStrategy))))
    n = model.triples.shape[0]
    if k > n:
        raise MeasureError(LAB_K_TOO_LARGE.format(k=k, n=n, model=model.name))
    influence = analysis.influence(occupation)
    if strategy == "random":
        return remove_edit(model, occupation, removal_set(influence, kind="random", k=k, seed=seed),
                           strategy=f"random-remove k={k}")
    bias = float(analysis.group_bias(occupation))
    return remove_edit(model, occupation, debiasing_removal(influence, bias=bias, k=k), strategy=f"if-remove k={k}")


def retrain(
    model: StoredModel,
    edit: Edit,
    *,
    name: str,
    on_epoch: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> StoredModel:
    """Retrain ``model`` with ``edit`` applied, from its seed; the result records the edit and base model."""
    triples, negatives = model.triples.cpu(), model.frozen_negatives.cpu()  # negatives [K n, 3]
    n_entities = model.n_entities
    weights = torch.ones(triples.shape[0])
    labels, names = model.entity_labels, model.entity_names
    if edit.kind == "remove":
        weights[list(edit.removed)] = 0
    else:
        added = torch.tensor(edit.added_triples, dtype=torch.long)
        n_entities += len(edit.added_entities)
        added_negatives = added_frozen_negatives(model, added, n_entities=n_entities)
        negatives = join_negatives(negatives, triples.shape[0], added_negatives, added.shape[0])
        triples = torch.cat([triples, added])
        weights = torch.ones(triples.shape[0])
        labels = labels + edit.added_entities
        names = names + tuple(f"dummy {i}" for i in range(len(edit.added_entities)))
    result = train_transe(
        triples=triples, negatives=negatives, n_entities=n_entities, n_relations=model.n_relations,
        config=model.config, weights=weights, n_base_entities=model.n_entities,
        device=retrain_device(model),  # the base's kind of device: an unedited retrain reproduces it
        on_epoch=on_epoch, should_stop=should_stop,
    )
    keep = weights > 0
    return replace(
        model,
        name=name,
        entity_labels=labels,
        entity_names=names,
        weights={"entity_embeddings": result.entity_embeddings, "relation_embeddings": result.relation_embeddings},
        triples=triples[keep],
        negatives=negatives_of(negatives, keep, triples.shape[0]),
        influence_scale=model.influence_scale,
        edit={**edit.describe(), "mode": "scratch"},
        info={**model.info, "base_model": model.name, "final_loss": result.losses[-1] if result.losses else None,
              "train_seconds": result.seconds},
    )


def added_frozen_negatives(model: StoredModel, added: LongTensor, *, n_entities: int) -> LongTensor:
    """The frozen negatives of an Add edit's triples [a, 3] -> [K a, 3]: as many per triple as the model has, from
    the model's seed on a stream of their own, each drawn as the model's own were (its ``corruption`` and
    ``negative_entities``, counted over the model's training triples, which the edit does not change: a dummy is
    never a degree-drawn negative)."""
    return frozen_negatives(added, n_entities=n_entities, seed=model.config.seed, stream=_ADDED_NEGATIVES_STREAM,
                            count=negatives_count(model.frozen_negatives, model.triples.shape[0]),
                            **negative_draw(model.config, statistics=model.triples.cpu(), n_entities=n_entities,
                                            n_relations=model.n_relations, triples=added))


def addition(model: StoredModel, edit: Edit) -> Addition:
    """An Add edit's triples, their frozen negatives and the dummies' starting rows, exactly as :func:`retrain`
    draws them (same streams), so that the prediction starts where the retrain does."""
    added = torch.tensor(edit.added_triples, dtype=torch.long)
    n_entities = model.n_entities + len(edit.added_entities)
    negatives = added_frozen_negatives(model, added, n_entities=n_entities)
    entities, _ = initial_embeddings(n_entities=n_entities, n_relations=model.n_relations, dim=model.config.dim,
                                     seed=model.config.seed, n_base_entities=model.n_entities)
    return Addition(triples=added, negatives=negatives, new_rows=entities[model.n_entities:],
                    labels=edit.added_entities, names=tuple(f"dummy {i}" for i in range(len(edit.added_entities))))


def predict_edit(analysis: ModelAnalysis, edit: Edit, *, spread: float | None = None,
                 scale: float = 1.0, temperature: float | None = None, prior: bool = False) -> WhatIfPrediction:
    """The predicted change of B_gr of the edit's occupation (:mod:`kgbias_core.influence.prediction`): the
    Newton step of the removal, or of the addition (the dummies replayed through training first); ``spread`` (the
    occupation's noise band) is the interval's floor. The one call the lab, the basket, ``debias``, the report
    and the findings make.

    ``scale``: the model's ratio for the edit's kind (:func:`kgbias_core.whatif.step_ratio.model_step_ratio` with
    ``use_for(edit.kind)``): a removal's step is multiplied by the removal audit's ratio, an addition's change by the
    Add audit's; the two are read from different retrains because the two predictions move differently.
    ``temperature``: a removal's hinge temperature from the removal audit, in place of its scale, or the prior one
    before the audit (``prior``; all three from :func:`kgbias_core.whatif.step_ratio.edit_calibration`)."""
    if edit.kind == "remove":
        return predict_removal(analysis, edit.occupation, torch.tensor(edit.removed, dtype=torch.long),
                               spread=spread, scale=scale, temperature=temperature, prior=prior)
    negatives = analysis.negatives
    return newton_addition_prediction(analysis.model, addition(analysis.model, edit), occupation=edit.occupation,
                                      spread=spread, negatives=None if negatives.exact else negatives.negatives,
                                      active=analysis.active_terms, hvp=analysis.absolute_hvp, scale=scale)


def edit_of_record(model: StoredModel, record: Mapping[str, Any]) -> Edit | None:
    """The :class:`Edit` a run's record (config.json ``edit``) describes, on its base ``model``: its removed
    triples, or Add's dummies rebuilt from its c (the strategy ``add c=...``) and their recorded count; None where
    the record does not say (an old run)."""
    occupation = record["occupation"]
    if record.get("kind") == "remove":
        removed = record.get("removed")
        return None if not removed else Edit(kind="remove", occupation=occupation, removed=tuple(removed),
                                             strategy=str(record.get("strategy", "")))
    found = re.match(r"add c=([0-9.eE+-]+)", str(record.get("strategy", "")))
    count = int(record.get("n_added_entities", 0))
    if found is None or count <= 0:
        return None
    edit = add_edit(model, occupation, c=float(found.group(1)), cap=count)
    return edit if len(edit.added_entities) == count else None
