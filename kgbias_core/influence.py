"""Influence of every training triple on B_gr (Du et al. Eq. 3, METHODS §3-4), closed form.

delta_z B_gr = grad(B_gr)^T H^{-1} grad L(z), with H the diagonal Hessian alpha_e I over entities
and 0 (pseudo-inverse) over relations, so only entity slots {h, t, h', t'} of z and its frozen
negative z' contribute:

    delta_z = sum_{e in slots} grad_e(B_gr) . grad_e L(z) / alpha_e,     (0 if z's margin is inactive)

with grad_h psi = 2u, grad_t psi = -2u for u = h + r - t, and grad L(z) = grad psi(z) - grad psi(z').
delta_z > 0 means: retraining without z raises B_gr (more male-leaning). Removing a set S is
predicted to change B_gr by sum_{z in S} delta_z (times the calibrated scale, if any).

The per-model part (margins, residuals of active triples) is computed once in
:class:`InfluenceContext`; each occupation then costs a few gathers over the triples that touch
M_o ∪ F_o ∪ {o}.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kgbias_core.errors import EMPTY_GROUP, NO_NEGATIVES, MeasureError
from kgbias_core.groups import OccupationGroups, occupation_groups
from kgbias_core.measures import hessian_diagonal, pair_residuals
from kgbias_core.store import StoredModel
from kgbias_core.types import BoolTensor, FloatTensor, LongTensor


@dataclass(frozen=True)
class InfluenceContext:
    """What every influence query of one TransE model shares (all tensors on the model's device)."""

    groups: OccupationGroups
    entity_embeddings: FloatTensor  # [E, d]
    relation_embeddings: FloatTensor  # [R, d]
    alpha: FloatTensor  # [E] diagonal Hessian (METHODS §3)
    active: LongTensor  # [A] indices of training triples whose margin is active
    slots: LongTensor  # [A, 4] entity ids (h, t, h', t') of the active triples
    residual: FloatTensor  # [A, d] u = h + r - t of the positive triple
    residual_negative: FloatTensor  # [A, d] u' = h' + r - t' of its frozen negative
    n_triples: int  # |G|

    @property
    def device(self) -> torch.device:
        return self.entity_embeddings.device


def influence_context(model: StoredModel, *, damping: float | None = None) -> InfluenceContext:
    """Precompute margins and residuals of ``model`` (TransE with frozen negatives)."""
    if model.negatives is None:
        raise MeasureError(NO_NEGATIVES.format(model=model.name))
    groups = occupation_groups(model)
    entities, relations = model.entity_embeddings, model.relation_embeddings
    triples, negatives = model.triples, model.negatives
    u = entities[triples[:, 0]] + relations[triples[:, 1]] - entities[triples[:, 2]]
    u_neg = entities[negatives[:, 0]] + relations[negatives[:, 1]] - entities[negatives[:, 2]]
    margin = model.config.margin + u.pow(2).sum(-1) - u_neg.pow(2).sum(-1)
    active = (margin > 0).nonzero().squeeze(-1)
    lam = model.damping if damping is None else damping
    return InfluenceContext(
        groups=groups,
        entity_embeddings=entities,
        relation_embeddings=relations,
        alpha=hessian_diagonal(degree=groups.degree, n_triples=triples.shape[0], damping=lam),
        active=active,
        slots=torch.stack(
            [triples[active, 0], triples[active, 2], negatives[active, 0], negatives[active, 2]], dim=1
        ),
        residual=u[active],
        residual_negative=u_neg[active],
        n_triples=int(triples.shape[0]),
    )


def group_bias_gradient(context: InfluenceContext, occupation_index: int) -> FloatTensor:
    """grad_e B_gr for every entity e (METHODS §4). -> [E, d], zero outside M_o ∪ F_o ∪ {o}.

    grad_s = +2 v_s / |F_o| (s in F_o), -2 v_s / |M_o| (s in M_o); grad_o = -2 mean_F v + 2 mean_M v.
    """
    groups = context.groups
    n_male = int(groups.n_male[occupation_index])
    n_female = int(groups.n_female[occupation_index])
    if n_male == 0 or n_female == 0:
        label = int(groups.occupations[occupation_index])
        raise MeasureError(
            EMPTY_GROUP.format(occupation=label, n_male=n_male, n_female=n_female, measure="influence on B_gr")
        )
    mine = groups.pair_occupation == occupation_index
    persons = groups.pair_person[mine]
    female = groups.pair_female[mine]
    v = pair_residuals(
        entity_embeddings=context.entity_embeddings,
        relation_embeddings=context.relation_embeddings,
        groups=groups,
    )[mine]  # [p, d]
    coefficient = torch.where(female, 2.0 / n_female, -2.0 / n_male).to(v)  # [p]
    gradient = torch.zeros_like(context.entity_embeddings)
    gradient.index_add_(0, persons, coefficient[:, None] * v)
    gradient[groups.occupations[occupation_index]] -= (coefficient[:, None] * v).sum(0)
    return gradient


def triple_influence(context: InfluenceContext, occupation_index: int) -> FloatTensor:
    """delta_z B_gr of every training triple for one occupation (Du Eq. 3, METHODS §4). -> [|G|].

    Zero for triples with an inactive margin and for triples touching none of M_o ∪ F_o ∪ {o}.
    """
    scaled = group_bias_gradient(context, occupation_index) / context.alpha[:, None]  # [E, d]
    groups = context.groups
    touched = torch.zeros(scaled.shape[0], dtype=torch.bool, device=context.device)
    touched[groups.pair_person[groups.pair_occupation == occupation_index]] = True
    touched[groups.occupations[occupation_index]] = True
    relevant = touched[context.slots].any(-1).nonzero().squeeze(-1)  # [k] among active triples
    slots = context.slots[relevant]  # [k, 4]
    # grad L(z) = 2u at h, -2u at t, -2u' at h', +2u' at t' (the negative enters with a minus).
    positive = ((scaled[slots[:, 0]] - scaled[slots[:, 1]]) * context.residual[relevant]).sum(-1)
    negative = ((scaled[slots[:, 2]] - scaled[slots[:, 3]]) * context.residual_negative[relevant]).sum(-1)
    influence = torch.zeros(context.n_triples, dtype=scaled.dtype, device=context.device)
    influence[context.active[relevant]] = 2.0 * (positive - negative)
    return influence


def all_triple_influences(context: InfluenceContext) -> tuple[LongTensor, FloatTensor]:
    """delta_z B_gr for all occupations with both genders, as a dense-by-occupation sparse table.

    -> (occupation_indices [O'], influence [O', |G|]) is too large for FB15k-237 in float32
    (152 x 272k), so the influence comes back as a sparse COO tensor [O', |G|] holding only the
    non-zero entries.
    """
    valid = ((context.groups.n_male > 0) & (context.groups.n_female > 0)).nonzero().squeeze(-1)
    rows, cols, values = [], [], []
    for row, occupation_index in enumerate(valid.tolist()):
        influence = triple_influence(context, occupation_index)
        nonzero = influence.nonzero().squeeze(-1)
        rows.append(torch.full_like(nonzero, row))
        cols.append(nonzero)
        values.append(influence[nonzero])
    indices = torch.stack([torch.cat(rows), torch.cat(cols)])
    table = torch.sparse_coo_tensor(
        indices, torch.cat(values), (valid.shape[0], context.n_triples), check_invariants=True
    )
    return valid, table.coalesce()


def predicted_change(influence: FloatTensor, removed: LongTensor | BoolTensor, *, scale: float = 1.0) -> float:
    """Predicted change of B_gr when the triples ``removed`` (indices or mask over |G|) are dropped.

    sum_{z in S} delta_z, times the calibrated scale actual/predicted (METHODS §4).
    """
    return float(influence[removed].sum()) * scale


def debiasing_removal(influence: FloatTensor, *, bias: float, k: int) -> LongTensor:
    """IF-REMOVE (Du §4.3): the k triples whose removal moves B_gr most towards 0. -> [<=k].

    For B_gr > 0 those are the most negative delta_z, for B_gr < 0 the most positive ones;
    only triples that move B_gr the right way are taken.
    """
    signed = -influence if bias > 0 else influence
    k = min(k, int((signed > 0).sum()))
    return torch.topk(signed, k).indices
