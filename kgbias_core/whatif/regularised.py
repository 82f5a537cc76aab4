"""A fairness regulariser in TransE's training objective (a trained debiasing method).

Bose & Hamilton (2019, "Compositional Fairness Constraints for Graph Embeddings") train an
adversarial filter so that the embeddings do not reveal a sensitive attribute. kgbias trains the
simpler penalty form of the same idea, aimed at the measure this tool reports: the gap between the
mean scores of the men and the women linked to each occupation, which is Du's B_gr (METHODS §1):

    J_fair(theta) = J(theta) + (w / 2) sum_{o in T} B_gr(o; theta)^2

with J TransE's objective (:mod:`kgbias_core.embeddings.objective`, METHODS §2), T the occupations
penalised (all with both groups non-empty, or those named) and w = ``TrainConfig.fairness_weight``
in the summed-loss units of ``l2``. The model trains from the base model's seed, initialisation,
frozen negatives and batch permutation, so with w = 0 it would be the base model bit for bit; on the
CPU two trainings with one seed are bit-identical.

**Influence is not exact for it**: Du's closed form and the iterative solvers differentiate J alone,
not the fairness term, and a what-if would retrain without it. So the stored model records
``debias`` and influence, what-ifs and noise bands refuse it
(:data:`~kgbias_core.errors.DEBIASED_NO_RETRAIN`); the measures and link prediction run on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import torch

from kgbias_core.embeddings.store import StoredModel, config_fingerprint
from kgbias_core.embeddings.training import EpochCallback, Regulariser, retrain_device, train_transe
from kgbias_core.errors import DEBIAS_BAD_WEIGHT, KGBiasError
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import OccupationGroups, occupation_groups
from kgbias_core.types import FloatTensor, LongTensor


def fairness_penalty(
    *,
    entity_embeddings: FloatTensor,
    relation_embeddings: FloatTensor,
    groups: OccupationGroups,
    weight: float,
    occupations: LongTensor | None = None,
) -> FloatTensor:
    """(w / 2) sum_o B_gr(o)^2 over ``occupations`` (indices into ``groups.occupations``; None: all)
    whose M_o and F_o are both non-empty (B_gr NaN otherwise, and left out). Shapes: [E, d], [R, d] -> [].
    Differentiable in both embeddings (autograd through :func:`group_bias`)."""
    bias = group_bias(entity_embeddings=entity_embeddings, relation_embeddings=relation_embeddings, groups=groups)
    if occupations is not None:
        bias = bias[occupations]
    bias = bias[~torch.isnan(bias)]
    return weight / 2 * (bias**2).sum()


def _regulariser(groups: OccupationGroups, *, weight: float, occupations: LongTensor | None) -> Regulariser:
    def penalty(entities: FloatTensor, relations: FloatTensor) -> FloatTensor:
        return fairness_penalty(entity_embeddings=entities, relation_embeddings=relations, groups=groups,
                                weight=weight, occupations=occupations)

    return penalty


def regularised_model(
    model: StoredModel,
    *,
    name: str,
    weight: float,
    occupations: Sequence[str] | None = None,
    device: torch.device | None = None,
    on_epoch: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> StoredModel:
    """Retrain ``model``'s TransE from its seed with the fairness term of weight ``weight`` (module
    docstring); ``occupations``: labels or names penalised (None: all). Returns a new model recording
    ``config.fairness_weight`` and ``info["debias"]``, ready for :func:`save_model`."""
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight <= 0:
        raise KGBiasError(DEBIAS_BAD_WEIGHT.format(weight=weight))
    triples, negatives = model.triples.cpu(), model.frozen_negatives.cpu()  # a named error for an imported model
    groups = occupation_groups(model)
    index = None if occupations is None else torch.tensor([groups.index(o) for o in occupations], dtype=torch.long)
    config = replace(model.config, fairness_weight=float(weight))
    device = device or retrain_device(model)
    on_device = replace(groups, **{k: getattr(groups, k).to(device) for k in (
        "occupations", "pair_person", "pair_occupation", "pair_female", "n_male", "n_female")})
    result = train_transe(
        triples=triples, negatives=negatives, n_entities=model.n_entities, n_relations=model.n_relations,
        config=config, device=device, on_epoch=on_epoch, should_stop=should_stop,
        regulariser=_regulariser(on_device, weight=float(weight),
                                 occupations=None if index is None else index.to(device)),
    )
    base_config = {**model.config.to_dict(), "dataset": model.dataset, "data_hash": model.data_hash,
                   "edit": model.edit, **model.info}
    debias = {
        "method": "regularise",
        "weight": float(weight),
        "occupations": None if index is None else [groups.labels[i] for i in index.tolist()],
        "base_model": model.name,
        "base_config_hash": config_fingerprint(base_config)["config_hash"],
        "influence": "not exact: the fairness term is not in the objective influence differentiates",
    }
    return replace(
        model,
        name=name,
        config=config,
        weights={"entity_embeddings": result.entity_embeddings, "relation_embeddings": result.relation_embeddings},
        influence_scale=None,
        calibration=None,
        info={**model.info, "base_model": model.name, "debias": debias,
              "final_loss": result.losses[-1] if result.losses else None,
              "train_seconds": result.seconds, "debias_seconds": result.seconds, "device": str(device)},
    )
