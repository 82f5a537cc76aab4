"""The margin hinge's own curvature, smoothed at a temperature, added to |H| (issue 25).

The lab's removal step (:mod:`kgbias_core.influence.prediction`) is Delta theta = |H|^{-1} sum_{z in S} grad L(z),
|H| the curvature of psi in every active margin term of J = sum_z [gamma + psi(z) - psi(z')]_+ + l2/2 ||theta||^2
(METHODS §2-4; Du et al. 2022 Eq. 3 with the Hessian of Lemma 1 replaced by |H|). The hinge [s]_+ itself has no
curvature but at its kink s = 0, and a trained model holds many terms near the kink (half of FB13's with one
negative; docs/results/whatif.md, "an optimum held by its kinks"): a retrain then moves only 0.15-0.3 of the step.
The hinge smoothed at temperature T, l_T(s) = T log(1 + e^{s / T}) (-> [s]_+ as T -> 0), has the Gauss-Newton
curvature

    l_T''(s) g g^T = sigma(s / T) (1 - sigma(s / T)) / T * g g^T,     g = d s / d theta,             (1)

1 / (4 T) on a term at its kink, fading a few T away from it. :func:`hinge_curvature_hvp` adds (1), weighted 1/K
as every term of J with K negatives, to |H|:

    H_T = |H| + (1/K) sum_{(z, j)} sigma(s_zj / T) (1 - sigma(s_zj / T)) / T * g_zj g_zj^T,

squared L2: s = gamma + ||x||^2 - ||x'||^2 with x = h + r - t of z and x' of its negative z', so g is 2x at h and
r, -2x at t, -2x' at h' and r', +2x' at t'. T is given in units of the margin gamma.

How T is set: by the model's one-retrain audit (:func:`audit_temperature`). The step of the audit's set is solved at
each T until it meets the audit's retrained change: one number per model, as the scalar scale was, but one that
shrinks each edit by the curvature its own terms carry rather than all by one factor. The audits of five graphs with
one negative set T = 0.54 gamma (FB13) to 1.25 gamma (a tiny synthetic graph), 1.01 gamma on FB15k-237; before its
audit such a model is predicted at the prior T = gamma (:func:`prior_temperature`). Measured against stored retrains
in experiments/whatif_accuracy/audit_temperature.py (docs/results/whatif.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from kgbias_core.embeddings.objective import negatives_count
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.influence.iterative import Vector
from kgbias_core.types import FloatTensor, LongTensor

#: Terms whose curvature (1) is below this share of the largest are left out of the product (far from the kink).
NEGLIGIBLE = 1e-6
#: The distances (1) is written for (the gradient g of squared L2's psi).
HINGE_DISTANCES = ("squared_l2",)
#: The audit's temperature search (:func:`audit_temperature`), in units of the margin: it starts at T = 1, walks by
#: factors of 2 up (where the step is still short of the retrain) or down, inside [1/16, 8], then bisects in log T.
#: The step of an edit first falls as T grows from 0 (the terms on the kink get curvature 1 / (4 T), large only at
#: small T), then rises back towards the |H| step as T -> infinity (every term's curvature -> 0); the audit's T is
#: looked for on the rising side, where the step grows with T: one T per size.
TEMPERATURE_START = 1.0
TEMPERATURE_FACTOR = 2.0
#: Why 8 at the top: well above the margins' own spread, (1) weighs every term about alike (sigma' ~ 1/4), so H_T is
#: |H| plus a uniform share of every term's Gauss-Newton curvature, a scale by another name, paid for with a product
#: over every term. On FB15k-237's eight-negative default the audit met its retrain at T = 15.4: its steps then
#: agreed with the audit-scaled |H| step to within 4% on all 28 held-out sets, and took 15 s a prediction at the
#: median (up to 30 s) against 0.3 s (one thread, beside one other run; experiments/whatif_accuracy/
#: audit_temperature.py). Such a model keeps the scale.
TEMPERATURE_RANGE = (1 / 16, 8.0)
#: Bisection steps in log T inside the walk's bracket: 2^-7 of a factor 2, T to about 0.5%.
BISECTIONS = 7
#: The temperature a model with one frozen negative per triple is predicted with before its audit (units of the
#: margin): the audits of five such graphs met their retrains at 0.54-1.25 (FB13 0.54, the synthetic default 0.88,
#: the tiny graphs 0.89 and 1.25, FB15k-237 1.01; experiments/whatif_accuracy/audit_temperature.py). With eight
#: negatives T = 1 overcorrects (a retrain moved 1.33-1.84 of that step on FB15k-237's default, against 0.60-0.83 of
#: the |H| step), so those models are predicted with |H| until their audit.
PRIOR_TEMPERATURE = 1.0


def prior_temperature(*, distance: str, negatives_per_triple: int | None, imported: bool = False) -> float | None:
    """:data:`PRIOR_TEMPERATURE` for a squared-L2 model kgbias trained with one frozen negative per triple, the kind
    whose audits set it; None for any other (eight negatives, other distances, a model ``imported`` from another
    engine, whose own negatives kgbias never saw): their unaudited step is |H|'s as computed."""
    one = negatives_per_triple is None or int(negatives_per_triple) <= 1
    return PRIOR_TEMPERATURE if distance in HINGE_DISTANCES and one and not imported else None


def term_margins(model: StoredModel, negatives: LongTensor | None = None
                 ) -> tuple[FloatTensor, LongTensor, LongTensor, FloatTensor, FloatTensor]:
    """(s [K n], pairs [K n, 3], negatives [K n, 3], x [K n, d], x' [K n, d]) of squared L2: the margin
    s = gamma + ||x||^2 - ||x'||^2 of every term (z, z'_j) in the negatives' layout, with the residuals
    x = h + r - t of z and x' of z'_j. ``negatives``: the [K n, 3] table (default the model's frozen ones)."""
    negatives = model.frozen_negatives if negatives is None else negatives
    k = negatives_count(negatives, model.triples.shape[0])
    pairs = model.triples if k == 1 else model.triples.repeat(k, 1)  # row j n + i is triple i, as the negatives
    E, R = model.entity_embeddings.detach(), model.relation_embeddings.detach()
    x = E[pairs[:, 0]] + R[pairs[:, 1]] - E[pairs[:, 2]]
    x_neg = E[negatives[:, 0]] + R[negatives[:, 1]] - E[negatives[:, 2]]
    s = model.config.margin + (x * x).sum(-1) - (x_neg * x_neg).sum(-1)
    return s, pairs, negatives, x, x_neg


def hinge_weights(margins: FloatTensor, *, temperature: float, margin: float, k: int) -> FloatTensor:
    """sigma(s / T) (1 - sigma(s / T)) / T / K per term, [K n] (Eq. 1), T = ``temperature`` * ``margin``."""
    t = temperature * margin
    sig = torch.sigmoid(margins / t)
    return sig * (1 - sig) / t / k


def hinge_curvature_hvp(model: StoredModel, temperature: float, *, base: Callable | None = None,
                        negatives: LongTensor | None = None):
    """v -> H_T v = |H| v + (1/K) sum_t w_t g_t (g_t^T v) (module docstring, Eq. 1), with ``.diagonal`` (a Jacobi
    preconditioner, [E, d] and [R, d]) as :func:`~kgbias_core.influence.prediction.absolute_curvature_hvp` has.

    ``temperature``: T in units of the margin; 0 returns |H| itself. ``base``: the model's |H| product when already
    built (one for every T). Squared L2 only (:data:`HINGE_DISTANCES`)."""
    from kgbias_core.influence.prediction import absolute_curvature_hvp  # prediction imports this module first

    if model.config.distance not in HINGE_DISTANCES:
        raise ValueError(f"the hinge's curvature is written for {HINGE_DISTANCES}, not {model.config.distance}")
    base = absolute_curvature_hvp(model, negatives=negatives) if base is None else base
    if temperature <= 0:
        return base
    s, pairs, negatives, x, x_neg = term_margins(model, negatives)
    weight = hinge_weights(s, temperature=temperature, margin=model.config.margin,
                           k=negatives_count(negatives, model.triples.shape[0]))
    keep = weight > weight.max() * NEGLIGIBLE
    weight, pz, pn = weight[keep], pairs[keep], negatives[keep]
    gx, gn = 2 * x[keep], 2 * x_neg[keep]  # [m, d]: g at z's h and r (at t: -), and at z''s t' (at h', r': -)
    hvp = _gauss_newton_product(base, weight, pz, pn, gx, gn, n_entities=model.entity_embeddings.shape[0],
                                n_rows=model.entity_embeddings.shape[0] + model.relation_embeddings.shape[0])
    # |H|'s diagonal plus w g_i^2 per slot (where z and z' share a row the cross term is left out: a preconditioner
    # need not be exact)
    d_e, d_r = (part.expand(-1, like.shape[1]).clone() for part, like in
                zip(base.diagonal, (model.entity_embeddings, model.relation_embeddings), strict=True))
    w = weight.unsqueeze(-1)
    for rows, g in ((pz[:, 0], gx), (pz[:, 2], gx), (pn[:, 0], gn), (pn[:, 2], gn)):
        d_e.index_add_(0, rows, w * g * g)
    d_r.index_add_(0, pz[:, 1], w * (gx - gn) ** 2)
    hvp.diagonal = (d_e, d_r)
    hvp.temperature = temperature
    return hvp


def _gauss_newton_product(base: Callable, weight: FloatTensor, pz: LongTensor, pn: LongTensor, gx: FloatTensor,
                          gn: FloatTensor, *, n_entities: int, n_rows: int):
    """v -> base(v) + sum_t w_t g_t (g_t^T v) over the terms t = (z, z') [m] (Eq. 1), g_t = (gx at h, r; -gx at t;
    -gn at h', r'; gn at t').

    A product is memory traffic over [m, d] arrays (FB15k-237 with one negative: 272,115 x 100), so it reads the
    fixed table [gx; gn] and writes no [m, d] product of it: g^T v is two 3-row bags of v per term (a = v_h + v_r -
    v_t, b of z') dotted with gx and gn, and the scatter of c_t g_t to the six rows is one ``embedding_bag`` sum over
    the table with per-entry weights +-c_t, its entries sorted by row once (as the |H| product of
    :func:`~kgbias_core.influence.prediction.absolute_curvature_hvp` scatters). Six gathers and six
    ``index_add_`` of [m, d] temporaries took 1.0-1.2 s a product there, this 0.22-0.24 s (one thread, AMD EPYC,
    beside one other 1-thread run; |H|'s own product: 0.008 s)."""
    m = pz.shape[0]
    # rows of the stacked [E + R, d] table: a relation r is row E + r
    slots_z = torch.stack([pz[:, 0], n_entities + pz[:, 1], pz[:, 2]], dim=1)  # [m, 3] rows of a
    slots_n = torch.stack([pn[:, 0], n_entities + pn[:, 1], pn[:, 2]], dim=1)
    three = weight.new_tensor([1.0, 1.0, -1.0]).expand(m, 3)  # a = v_h + v_r - v_t
    table = torch.cat([gx, gn])  # [2m, d]; gx and gn are read back as its halves, so the closure holds one copy
    gx, gn = table[:m], table[m:]
    # the scatter: entry (row, table row, sign) per slot of each term, z's with +-c g_x, z''s with -+c g_n
    target = torch.cat([slots_z.T.reshape(-1), slots_n.T.reshape(-1)])  # [6m]: h, r, t of z, then of z'
    terms = torch.arange(m, device=pz.device)
    reads = torch.cat([terms, terms, terms, m + terms, m + terms, m + terms])
    signs = torch.cat([weight.new_ones(2 * m), weight.new_full((m,), -1.0), weight.new_full((2 * m,), -1.0),
                       weight.new_ones(m)])
    order = torch.sort(target, stable=True).indices
    reads, signs, term_of = reads[order], signs[order], (reads % m)[order]
    counts = torch.bincount(target, minlength=n_rows)  # a row in no term has an empty bag: 0
    offsets = torch.cumsum(counts, 0) - counts

    def product(vector: Vector) -> Vector:
        v_e, v_r = vector
        stacked = torch.cat([v_e, v_r])  # [E + R, d]
        a = torch.nn.functional.embedding_bag(slots_z, stacked, mode="sum", per_sample_weights=three)  # [m, d]
        b = torch.nn.functional.embedding_bag(slots_n, stacked, mode="sum", per_sample_weights=three)
        c = weight * (a.mul_(gx).sum(-1) - b.mul_(gn).sum(-1))  # w g^T v, [m]
        out = torch.nn.functional.embedding_bag(reads, table, offsets, mode="sum",
                                                per_sample_weights=signs * c[term_of])  # [E + R, d]
        base_e, base_r = base(vector)
        return base_e + out[:n_entities], base_r + out[n_entities:]

    return product


def audit_temperature(step_at: Callable[[float], float], retrained: float, *, bisections: int = BISECTIONS
                      ) -> tuple[float | None, list[tuple[float, float]]]:
    """The temperature T (units of the margin) at which the audit set's predicted change meets its retrained one.

    ``step_at(T)``: the audit set's predicted change of B_gr with H_T. The step at the range's top is read first: a
    retrain beyond it has no T (one step: the eight-negative default's case). Then from T = :data:`TEMPERATURE_START`
    the walk goes up by :data:`TEMPERATURE_FACTOR` while |step| < |retrained|, or down while it is above, then
    bisects in log T inside the last step's bracket.

    None where no T on the rising side meets it: the retrained change has the other sign; it lies beyond the step at
    the range's top (the model needs a T at which the hinge is a scale by another name, or its retrain moved more
    than even the |H| step: the audit's scale serves either); or the step stops falling as T falls while still
    above it (below the step's lowest point). -> (T or None, every (T, step) read, in the order read)."""
    read: list[tuple[float, float]] = []
    target = abs(retrained)

    def at(t: float) -> float | None:
        point = step_at(t)
        read.append((t, point))
        return None if point == 0 or math.copysign(1, point) != math.copysign(1, retrained) else abs(point)

    if not math.isfinite(retrained) or target == 0:
        return None, read
    lowest, highest = TEMPERATURE_RANGE
    top = at(highest)  # the rising side's highest step: a retrain beyond it has no T, found with one step
    if top is None or top < target:
        return None, read
    t = TEMPERATURE_START
    size = at(t)
    if size is None:
        return None, read
    if size < target:  # short of the retrain: less curvature, higher T
        while size < target:
            if t * TEMPERATURE_FACTOR > highest:
                return None, read
            t *= TEMPERATURE_FACTOR
            size = at(t)
            if size is None:
                return None, read
        lo, hi = t / TEMPERATURE_FACTOR, t
    else:  # past it: more curvature, lower T, while the step keeps falling
        while True:
            if t / TEMPERATURE_FACTOR < lowest:
                return None, read
            t /= TEMPERATURE_FACTOR
            before, size = size, at(t)
            if size is None:
                return None, read
            if size > before:  # stepped over the lowest point: in (t, F^2 t) for a step with one lowest point
                bottom = _lowest_point(at, t, t * TEMPERATURE_FACTOR ** 2)
                if bottom is None or bottom[1] > target:
                    return None, read
                lo, hi = bottom[0], t * TEMPERATURE_FACTOR ** 2  # the rising side, up to a T the walk left above
                break
            if size <= target:
                lo, hi = t, t * TEMPERATURE_FACTOR
                break
    lo, hi = math.log(lo), math.log(hi)
    for _ in range(bisections):
        middle = (lo + hi) / 2
        size = at(math.exp(middle))
        if size is None:
            return None, read
        lo, hi = (middle, hi) if size < target else (lo, middle)
    return math.exp((lo + hi) / 2), read


#: Golden-section steps for the lowest point of the step over T (:func:`_lowest_point`): a bracket of a factor 4
#: narrowed 0.618^8, to a factor of about 1.03.
GOLDEN_STEPS = 8


def _lowest_point(at: Callable[[float], float | None], low: float, high: float) -> tuple[float, float] | None:
    """(T, |step|) at the lowest |step| in (low, high) by golden-section search in log T; None where a step has the
    wrong sign."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = math.log(low), math.log(high)
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = at(math.exp(c)), at(math.exp(d))
    for _ in range(GOLDEN_STEPS):
        if fc is None or fd is None:
            return None
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = at(math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = at(math.exp(d))
    if fc is None or fd is None:
        return None
    return (math.exp(c), fc) if fc < fd else (math.exp(d), fd)
