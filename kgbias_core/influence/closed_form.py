"""Influence of every training triple on B_gr (Du et al. Eq. 3, METHODS §3-4), closed form.

delta_z B_gr = grad(B_gr)^T H^{-1} grad L(z), with H the diagonal Hessian alpha_e I over entities
and 0 (pseudo-inverse) over relations, so only entity slots {h, t, h', t'} of z and its frozen
negative z' contribute:

    delta_z = sum_{e in slots} grad_e(B_gr) . grad_e L(z) / alpha_e,     (0 if z's margin is inactive)

with grad_h psi = psi'(u), grad_t psi = -psi'(u) for u = h + r - t, and grad L(z) = grad psi(z) - grad psi(z').
psi'(u) is the model's own distance gradient (:func:`~kgbias_core.embeddings.objective.distance_gradient`):
Du's 2u for kgbias's squared L2; u / ||u||_2 or sign(u) for an imported L2 / L1 model, whose active-margin
test uses that distance and the model's recorded margin (``config.margin``: DGL-KE's gamma, else kgbias's 2).
alpha stays the squared-L2 diagonal for every distance, as in B_in (an approximation for L1 / L2).
The negatives z' come from the caller (:mod:`kgbias_core.influence.negatives`: frozen, or re-drawn).

K negatives per triple (the objective's mean over j of [gamma + psi(z) - psi(z'_j)]_+,
:mod:`kgbias_core.embeddings.objective`): grad L(z) = (1/K) sum_{j active} (grad psi(z) - grad psi(z'_j)),
so each pair (z, z'_j) with an active margin is one term of Du's sum, weighted 1/K, and delta_z sums the
terms of z's K pairs. alpha is unchanged: an entity fills K times as many negative slots, each weighted 1/K,
so Du's Lemma 1 gives the same expected diagonal (METHODS §3).
delta_z > 0 means: retraining without z raises B_gr (more male-leaning). Removing a set S is
predicted to change B_gr by sum_{z in S} delta_z (times the calibrated scale, if any).

The per-model part (margins, residuals of active triples) is computed once in
:class:`InfluenceContext`; each occupation then costs a few gathers over the triples that touch
M_o ∪ F_o ∪ {o}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kgbias_core.embeddings.objective import distance_gradient, negatives_count, residual_distance
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import EMPTY_GROUP, MeasureError
from kgbias_core.measures.groups import OccupationGroups, occupation_groups
from kgbias_core.types import BoolTensor, FloatTensor, LongTensor

#: What the command line says of influence on a model whose distance is not squared L2 (the page's badge says the
#: same with its figures: kgbias_app/sections/influential_triples.py).
APPROXIMATE_FOR_DISTANCE = ("influence: approximate for the model's {distance} distance (Du's closed form takes its "
                            "gradient with the squared-L2 diagonal; it is exact for squared L2)")


def hessian_diagonal(*, degree: LongTensor, n_triples: int, damping: float) -> FloatTensor:
    """alpha_e = max(N_e - 2|G|/|E|, 0) + lambda (Du Lemma 1 / Remark 3 in METHODS §3's monotone form).

    Shapes: degree [E] -> [E]; on the scale of the summed loss. ``damping`` is lambda (>= l2).
    """
    mean_degree = 2.0 * n_triples / degree.shape[0]
    return torch.clamp(degree.to(torch.float32) - mean_degree, min=0.0) + damping


@dataclass(frozen=True)
class InfluenceContext:
    """What every influence query of one TransE model shares (all tensors on the model's device)."""

    groups: OccupationGroups
    entity_embeddings: FloatTensor  # [E, d]
    relation_embeddings: FloatTensor  # [R, d]
    alpha: FloatTensor  # [E] diagonal Hessian (METHODS §3); [E, d] is taken per coordinate
    # Pairs p = j |G| + i (triple i, its j-th negative: the row of the negatives table); for K = 1 a pair is a
    # triple, p = i.
    active: LongTensor  # [A] indices of the pairs whose margin is active
    slots: LongTensor  # [A, 4] entity ids (h, t, h', t') of the active pairs
    relation: LongTensor  # [A] relation id of each active pair (its negative shares it)
    n_triples: int  # |G|
    # Entity -> slot index (CSR over the 4A slots, sorted by entity), so that one occupation only
    # touches the slots of its own persons and itself:
    slot_offsets: LongTensor  # [E + 1] slots of entity e are slot_order[offsets[e]:offsets[e+1]]
    slot_order: LongTensor  # [4A] slot ids j = kind * A + a, kind 0..3 = h, t, h', t'
    distance: str = "squared_l2"  # the model's psi (DISTANCES): its gradient psi'(u) enters grad L and grad B_gr
    n_negatives: int = 1  # K negatives per triple: each active pair's term of grad L(z) is weighted 1/K
    # K > 1: the positive side (h, t, u) of a triple's active pairs is one and the same, so only its first active
    # pair keeps its h and t slots in the index, weighted by the triple's number of active pairs (0 for the
    # others); None for K = 1. Without it an occupation visits each positive slot up to K times (FB15k-237 with
    # eight negatives: Actor 103 ms instead of 7 ms for one negative, docs/results/speed.md).
    positive_weight: FloatTensor | None = None

    def per_triple(self, per_active: FloatTensor) -> FloatTensor:
        """[A] terms of the active pairs -> [|G|] their sums per triple, times 1/K (zero for a triple with none)."""
        total = torch.zeros(self.n_triples, dtype=per_active.dtype, device=per_active.device)
        if self.n_negatives == 1:  # a pair is a triple: placed, not summed (the K = 1 numbers bit for bit)
            total[self.active] = per_active
        else:
            total.index_add_(0, self.active % self.n_triples, per_active / self.n_negatives)
        return total

    # The residuals u = h + r - t are not stored: [2A, d] floats are 6.6 GB at 20M triples, and a
    # query recomputes the few it needs from the slots, with the same float operations.
    def residuals_of(self, triple: LongTensor, negative: BoolTensor) -> FloatTensor:
        """u (or u' where ``negative``) of the active triples ``triple`` (indices into ``active``). [m, d]."""
        kind = negative.to(triple.dtype) * 2  # 0: (h, t) slots, 2: (h', t') slots
        heads = self.slots[triple, kind]
        tails = self.slots[triple, kind + 1]
        E = self.entity_embeddings
        return E[heads] + self.relation_embeddings[self.relation[triple]] - E[tails]

    @property
    def residual(self) -> FloatTensor:
        """[A, d] u = h + r - t of the active positive triples (computed on each call)."""
        everything = torch.arange(self.active.shape[0], device=self.device)
        return self.residuals_of(everything, torch.zeros_like(everything, dtype=torch.bool))

    @property
    def residual_negative(self) -> FloatTensor:
        """[A, d] u' = h' + r - t' of their frozen negatives (computed on each call)."""
        everything = torch.arange(self.active.shape[0], device=self.device)
        return self.residuals_of(everything, torch.ones_like(everything, dtype=torch.bool))

    @property
    def device(self) -> torch.device:
        return self.entity_embeddings.device


#: Triples per block when the margins are computed. Small on purpose: the [block, d] buffers are reused
#: and stay in cache; fresh 100 MB temporaries cost more in page faults than in arithmetic (3x at 1M).
MARGIN_BLOCK = 1 << 14


#: Relative width of the band around the kink where a float32 margin is re-taken in float64: float32
#: sums of d = 100-1000 terms err by at most d * 6e-8 of psi, so a margin outside the band has its sign.
KINK_BAND = 1e-4


def _block_distances(entities: FloatTensor, relations: FloatTensor, block: LongTensor, buffers: tuple[
        FloatTensor, FloatTensor], distance: str) -> FloatTensor:
    """psi(h + r - t) of the rows of ``block`` [b, 3] -> [b], through the reused ``buffers`` ([B, d] each)."""
    u, tail = (buffer[: block.shape[0]] for buffer in buffers)
    torch.index_select(entities, 0, block[:, 0], out=u)
    u.add_(relations[block[:, 1]])
    torch.index_select(entities, 0, block[:, 2], out=tail)
    u.sub_(tail)
    if distance == "squared_l2":  # kgbias's own models: no [b, d] temporary
        return torch.einsum("ij,ij->i", u, u)
    return residual_distance(u, distance=distance)


def _float64_distances(entities: FloatTensor, relations: FloatTensor, rows: LongTensor, distance: str) -> FloatTensor:
    """psi(h + r - t) of ``rows`` [m, 3] -> [m] in float64, where the products of float32 weights are exact."""
    u = entities[rows[:, 0]].double() + relations[rows[:, 1]].double() - entities[rows[:, 2]].double()
    return residual_distance(u, distance=distance)


def active_margins(
    *, entities: FloatTensor, relations: FloatTensor, triples: LongTensor, negatives: LongTensor, margin: float,
    distance: str = "squared_l2",
) -> BoolTensor:
    """margin + psi(z) - psi(z') > 0 for every training triple z and its negative z'. [n, 3] x 2 -> [n].

    (For K negatives per triple, pass the pairs: the triples repeated K times against the [K n, 3] table.)

    ``distance``: the model's psi (:func:`~kgbias_core.embeddings.objective.residual_distance`). In blocks
    of :data:`MARGIN_BLOCK` rows: all at once, u and u' alone are 10 GB at 20M triples.

    A hinge optimum puts some margins on the kink (|margin| < 1e-6 for 9 of FB15k-237's 272k triples
    in float32), where float32 sums taken in another order (a GPU, another block size) flip the
    test. So the margins within :data:`KINK_BAND` of it are taken again in float64, where the order
    moves a margin by about 1e-15, and every device finds the same active set. (All in float64 costs
    1.7x at 2M triples; the band holds 5.7% of the cached FB15k-237 model's.)
    """
    active = torch.empty(triples.shape[0], dtype=torch.bool, device=triples.device)
    buffers = tuple(entities.new_empty(MARGIN_BLOCK, entities.shape[1]) for _ in range(2))
    for first in range(0, triples.shape[0], MARGIN_BLOCK):
        rows = slice(first, first + MARGIN_BLOCK)
        positive = _block_distances(entities, relations, triples[rows], buffers, distance)
        negative = _block_distances(entities, relations, negatives[rows], buffers, distance)
        margins = margin + positive - negative
        active[rows] = margins > 0
        near = (margins.abs() <= KINK_BAND * (margin + positive + negative)).nonzero().squeeze(-1) + first
        if near.numel():
            exact = margin + _float64_distances(entities, relations, triples[near], distance) \
                - _float64_distances(entities, relations, negatives[near], distance)
            active[near] = exact > 0
    return active


def influence_context(
    model: StoredModel,
    *,
    damping: float | None = None,
    groups: OccupationGroups | None = None,
    negatives: LongTensor | None = None,
) -> InfluenceContext:
    """Precompute margins and the slot index of ``model`` (TransE) against its K negatives per training triple.

    ``groups``: the model's :func:`occupation_groups` where the caller has them already.
    ``negatives`` [K |G|, 3]: row j |G| + i is triple i's j-th negative (None: the model's frozen ones;
    :func:`~kgbias_core.influence.negatives.influence_negatives` re-draws them for a model without).
    """
    # first: a model without frozen negatives, and none given, fails at once with a named error
    negatives = model.frozen_negatives if negatives is None else negatives
    groups = occupation_groups(model) if groups is None else groups
    entities, relations = model.entity_embeddings, model.relation_embeddings
    triples = model.triples
    k = negatives_count(negatives, triples.shape[0])
    pairs = triples if k == 1 else triples.repeat(k, 1)  # [K |G|, 3]: row j |G| + i is triple i, as the negatives
    distance = model.config.distance
    active = active_margins(entities=entities, relations=relations, triples=pairs, negatives=negatives,
                            margin=model.config.margin, distance=distance).nonzero().squeeze(-1)
    lam = model.damping if damping is None else damping
    slots = torch.stack(
        [pairs[active, 0], pairs[active, 2], negatives[active, 0], negatives[active, 2]], dim=1
    )  # [A, 4]
    slot_entity = slots.T.reshape(-1)  # [4A], kind-major: j = kind * A + a
    positive_weight = None
    if k == 1:
        slot_order = torch.sort(slot_entity, stable=True).indices
    else:  # the h, t slots of a triple's first active pair stand for all of its active pairs (positive_weight)
        n_active = active.shape[0]
        triple_of = active % triples.shape[0]
        by_triple = torch.sort(triple_of, stable=True).indices  # a triple's pairs in ascending j, so first = first
        first = torch.ones_like(by_triple, dtype=torch.bool)
        first[1:] = triple_of[by_triple[1:]] != triple_of[by_triple[:-1]]
        representative = torch.sort(by_triple[first]).values  # [T] pair index a of each active triple's first
        positive_weight = torch.zeros(n_active, dtype=entities.dtype, device=entities.device)
        positive_weight[representative] = torch.bincount(triple_of, minlength=triples.shape[0])[
            triple_of[representative]].to(entities.dtype)
        kept = torch.cat([representative, n_active + representative,
                          torch.arange(2 * n_active, 4 * n_active, device=active.device)])
        slot_order = kept[torch.sort(slot_entity[kept], stable=True).indices]
        slot_entity = slot_entity[kept]
    counts = torch.bincount(slot_entity, minlength=model.n_entities)
    slot_offsets = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
    return InfluenceContext(
        groups=groups,
        entity_embeddings=entities,
        relation_embeddings=relations,
        alpha=hessian_diagonal(degree=groups.degree, n_triples=triples.shape[0], damping=lam),
        active=active,
        slots=slots,
        relation=pairs[active, 1],
        n_triples=int(triples.shape[0]),
        slot_offsets=slot_offsets,
        slot_order=slot_order,
        distance=distance,
        n_negatives=k,
        positive_weight=positive_weight,
    )


def _gradient_rows(context: InfluenceContext, occupation_index: int) -> tuple[LongTensor, FloatTensor]:
    """The non-zero rows of grad B_gr: (entities [k], rows [k, d]) for M_o ∪ F_o and then o (METHODS §4).

    grad_s = +psi'(v_s) / |F_o| (s in F_o), -psi'(v_s) / |M_o| (s in M_o); grad_o = -(the sum of those)
    (psi'(v) = 2v for squared L2: Du's +2 v_s / |F_o|, ...).
    """
    groups = context.groups
    n_male = int(groups.n_male[occupation_index])
    n_female = int(groups.n_female[occupation_index])
    if n_male == 0 or n_female == 0:
        raise MeasureError(EMPTY_GROUP.format(occupation=groups.labels[occupation_index], n_male=n_male,
                                              n_female=n_female, measure="influence on B_gr"))
    mine = (groups.pair_occupation == occupation_index).nonzero().squeeze(-1)
    persons = groups.pair_person[mine]
    occupation = groups.occupations[occupation_index]
    E = context.entity_embeddings
    v = E[persons] + context.relation_embeddings[groups.occupation_relation] - E[occupation]  # [p, d]
    coefficient = torch.where(groups.pair_female[mine], 1.0 / n_female, -1.0 / n_male).to(v)  # [p]
    person_rows = coefficient[:, None] * distance_gradient(v, distance=context.distance)
    entities = torch.cat([persons, occupation.view(1)])
    return entities, torch.cat([person_rows, -person_rows.sum(0, keepdim=True)])


def group_bias_gradient(context: InfluenceContext, occupation_index: int) -> FloatTensor:
    """grad_e B_gr for every entity e (METHODS §4). -> [E, d], zero outside M_o ∪ F_o ∪ {o}."""
    entities, rows = _gradient_rows(context, occupation_index)
    gradient = torch.zeros_like(context.entity_embeddings)
    gradient.index_add_(0, entities, rows)
    return gradient


_SLOT_SIGN = (1.0, -1.0, -1.0, 1.0)  # grad L(z): +psi'(u) at h, -psi'(u) at t, -psi'(u') at h', +psi'(u') at t'


def triple_influence(context: InfluenceContext, occupation_index: int) -> FloatTensor:
    """delta_z B_gr of every training triple for one occupation (Du Eq. 3, METHODS §4). -> [|G|].

    With K negatives, 1/K times the sum of z's active pairs' terms (module docstring). Zero for triples with no
    active margin and for triples touching none of M_o ∪ F_o ∪ {o}.
    Only the slots filled by those entities are visited (through the context's CSR index), so the
    cost grows with the occupation's triples, not with |G|.
    """
    entities, rows = _gradient_rows(context, occupation_index)
    alpha = context.alpha[entities]  # [k], or [k, d] for a per-coordinate diagonal (curvature_alpha.py's study)
    scaled = rows / (alpha if alpha.ndim == 2 else alpha[:, None])  # [k, d] grad_e B_gr / alpha_e
    starts = context.slot_offsets[entities]
    lengths = context.slot_offsets[entities + 1] - starts  # [k]
    total = int(lengths.sum())
    owner = torch.repeat_interleave(torch.arange(entities.shape[0], device=context.device), lengths)  # [m]
    first = torch.cumsum(lengths, 0) - lengths
    slot = context.slot_order[starts[owner] + torch.arange(total, device=context.device) - first[owner]]  # [m]
    n_active = context.active.shape[0]
    kind, triple = slot // n_active, slot % n_active
    sign = torch.tensor(_SLOT_SIGN, dtype=scaled.dtype, device=context.device)[kind]
    # the slot's pair: (h, t) for kinds 0, 1 and (h', t') for 2, 3; slots is [A, 4], read flat (a 2-D gather
    # with two index tensors cost a quarter of the query)
    pair_kind = kind - kind % 2
    flat = context.slots.reshape(-1)
    heads = flat.index_select(0, triple * 4 + pair_kind)
    tails = flat.index_select(0, triple * 4 + pair_kind + 1)
    relations = context.relation.index_select(0, triple)
    # [m] scaled_e . psi'(u) per slot (2 scaled_e . u for squared L2)
    if context.distance == "squared_l2":
        dots = _linear_slot_dots(context, scaled, entities, owner=owner, heads=heads, tails=tails,
                                 relations=relations, owner_is_head=kind % 2 == 0)
    else:
        dots = _slot_gradient_dots(context, scaled, owner=owner, heads=heads, tails=tails, relations=relations)
    contribution = sign * dots
    if context.positive_weight is not None:  # a positive slot stands for its triple's active pairs
        contribution = torch.where(kind < 2, contribution * context.positive_weight[triple], contribution)
    per_active = torch.zeros(n_active, dtype=scaled.dtype, device=context.device)
    per_active.index_add_(0, triple, contribution)
    return context.per_triple(per_active)


def _linear_slot_dots(
    context: InfluenceContext, scaled: FloatTensor, entities: LongTensor, *, owner: LongTensor, heads: LongTensor,
    tails: LongTensor, relations: LongTensor, owner_is_head: BoolTensor
) -> FloatTensor:
    """2 scaled[owner] . u per slot for squared L2 (psi'(u) = 2u), u = E[h] + R[r] - E[t]. [k, d], [m] x 5 -> [m].

    u is linear in the rows and the owner is one end of its slot's pair, so the owner's own row and every relation
    enter through dot products taken once per owner ([k] and [k, R]): s . u = +-(s . E[owner] - s . E[other]) +
    s . R[r], + where the owner is the head. Each slot then gathers two rows (the other end, the owner's scaled
    row) instead of four. In blocks of :data:`MARGIN_BLOCK` slots through reused buffers, as
    :func:`_slot_gradient_dots`.
    """
    E = context.entity_embeddings
    own = torch.einsum("ij,ij->i", scaled, E.index_select(0, entities))  # [k] s_o . E[o]
    by_relation = scaled @ context.relation_embeddings.T  # [k, R] s_o . R[r]
    other = torch.where(owner_is_head, tails, heads)
    other_dots = scaled.new_empty(owner.shape[0])
    row, weight = (scaled.new_empty(MARGIN_BLOCK, E.shape[1]) for _ in range(2))
    for first in range(0, owner.shape[0], MARGIN_BLOCK):
        rows = slice(first, first + MARGIN_BLOCK)
        b = other[rows].shape[0]
        torch.index_select(E, 0, other[rows], out=row[:b])
        torch.index_select(scaled, 0, owner[rows], out=weight[:b])
        other_dots[rows] = torch.einsum("ij,ij->i", weight[:b], row[:b])
    sign = owner_is_head.to(scaled.dtype) * 2 - 1
    relation_dots = by_relation.reshape(-1).index_select(0, owner * by_relation.shape[1] + relations)
    return 2.0 * (sign * (own.index_select(0, owner) - other_dots) + relation_dots)


def _slot_gradient_dots(
    context: InfluenceContext, scaled: FloatTensor, *, owner: LongTensor, heads: LongTensor, tails: LongTensor,
    relations: LongTensor
) -> FloatTensor:
    """scaled[owner] . psi'(u) for each slot, u = E[heads] + R[relations] - E[tails] (its pair's u or u'), for a
    distance whose psi' is not linear (imported L1 / L2). [k, d], [m] x 4 -> [m].

    In blocks of :data:`MARGIN_BLOCK` slots through reused buffers: [m, d] temporaries for the largest
    occupations of a 20M-triple graph are GBs, and their page faults cost more than the arithmetic.
    """
    dots = scaled.new_empty(owner.shape[0])
    width = context.entity_embeddings.shape[1]
    u, tail, weight, relation = (scaled.new_empty(MARGIN_BLOCK, width) for _ in range(4))
    for first in range(0, owner.shape[0], MARGIN_BLOCK):
        rows = slice(first, first + MARGIN_BLOCK)
        b = heads[rows].shape[0]
        torch.index_select(context.entity_embeddings, 0, heads[rows], out=u[:b])
        torch.index_select(context.relation_embeddings, 0, relations[rows], out=relation[:b])
        u[:b].add_(relation[:b])
        torch.index_select(context.entity_embeddings, 0, tails[rows], out=tail[:b])
        u[:b].sub_(tail[:b])
        torch.index_select(scaled, 0, owner[rows], out=weight[:b])
        dots[rows] = torch.einsum("ij,ij->i", weight[:b], distance_gradient(u[:b], distance=context.distance))
    return dots


def all_triple_influences(context: InfluenceContext) -> tuple[LongTensor, FloatTensor]:
    """delta_z B_gr for every occupation with both genders. -> (occupation indices [O'], table [O', |G|]).

    The table is a sparse COO tensor holding only the non-zero entries: dense, it would take
    O' x |G| floats although each occupation touches only its own persons' triples.
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


def top_influence(influence: FloatTensor, *, fraction: float, sign: str = "any") -> LongTensor:
    """The top ``fraction`` (at least one) of the triples that move B_gr, by |delta_z| ("any"), by
    delta_z among the positive ones ("positive") or by -delta_z among the negative ones ("negative").

    The base is the triples with a non-zero influence of that sign, not the whole graph: on a
    star-shaped graph (FB13) 1% of |G| is more than every triple that moves one occupation.
    """
    signed = {"any": influence.abs(), "positive": influence, "negative": -influence}[sign]
    n_moving = int((signed > 0).sum())
    if n_moving == 0:
        return torch.empty(0, dtype=torch.long)
    return torch.topk(signed, max(1, math.ceil(fraction * n_moving))).indices
