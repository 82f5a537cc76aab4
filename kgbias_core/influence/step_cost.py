"""What a removal's Newton step will cost, before it runs (issue 25): the |H| operator timed, and its products counted.

A step (:func:`~kgbias_core.influence.prediction.predict_removal`) builds |H| (once per model analysis, every
distance since 2026-12-07; L1 and pseudo-Huber once per prediction before) and runs
conjugate gradients to the lab's tolerance. Its cost is the build plus the products CG takes, and both depend on the
model far more than on the edit: on FB15k-237 with eight negatives a product took 0.22 s for L1 and 1.9 s for L2
(196k against 1.74M active pairs), and L1's step took 3-8 s where L2's ran to the cap of 200 products, minutes; at
L2's own cap of 25 since 2026-12-06 (:data:`~kgbias_core.influence.prediction.L2_CG_ITERATIONS`) it was estimated at
51 s (step_cost_fb15k237.csv), and since 2026-12-07, L2's negatives one sparse matrix, a product takes 0.27 s and a
prediction 7.6 s (step_cost_fb15k237_l2_negatives.csv; docs/results/whatif.md, "L2's negatives"), 6.4 s with the
term product's bags (step_cost_term_product.csv). So the cost
is estimated by building the operator and timing one product on this machine, at the threads the prediction will
use, times the distance's typical count (:data:`TYPICAL_PRODUCTS`). The lab offers a step estimated above a
threshold with its estimate, rather than freeze the page on every change of an edit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from kgbias_core.embeddings.store import StoredModel
from kgbias_core.influence.prediction import (
    CG_ITERATIONS,
    L2_CG_ITERATIONS,
    AnalysedModel,
    _negatives_of,
    absolute_curvature_hvp,
    release_buffers,
)

#: |H| products a removal's step takes at the lab's tolerance (PREDICTION_TOLERANCE), the median measured per
#: distance (experiments/whatif_accuracy/results): squared L2 8 and pseudo-Huber 12.5 on FB15k-237
#: (cg_tolerance_fb15k237*_summary.csv), L1 34.5 on the built-in synthetic graph
#: (cg_tolerance_synthetic_l1_summary.csv), L2 its cap (L2_CG_ITERATIONS): the tolerance took 250-270 on the
#: synthetic graphs (l2_conditioning_s*.csv) and more than 200 on FB15k-237, and every step stops at the cap (with
#: the negatives' matrix of 2026-12-07 too: FB15k-237's steps took 25 products' time, l2_negatives_fb15k237_l2_k8.csv).
TYPICAL_PRODUCTS = {"squared_l2": 8, "pseudo_huber": 13, "l1": 35, "l2": L2_CG_ITERATIONS}


@dataclass(frozen=True)
class StepCost:
    """A removal step's estimated cost: building |H| and ``products`` products of ``product_s`` each."""

    build_s: float  # |H| built (about 0 where the model's operator was given: squared L2 builds it once per model)
    product_s: float  # one product, timed
    products: int  # the distance's typical count (TYPICAL_PRODUCTS)

    @property
    def seconds(self) -> float:
        return self.build_s + self.products * self.product_s


def step_cost(model: StoredModel, *, negatives: torch.Tensor | None = None, active: torch.Tensor | None = None,
              hvp=None) -> StepCost:
    """The estimated cost of one removal step on ``model`` (with these ``negatives`` and ``active`` terms, as the
    prediction has them): |H| built (unless ``hvp``, the model's operator, is given) and one product timed, at the
    current torch threads. Seconds of CPU: the product is as long as a prediction's."""
    start = time.perf_counter()
    if hvp is None:
        hvp = absolute_curvature_hvp(model, negatives=negatives, active=active)
    built = time.perf_counter()
    hvp((torch.ones_like(model.entity_embeddings.detach()), torch.ones_like(model.relation_embeddings.detach())))
    done = time.perf_counter()
    release_buffers(hvp)  # a step offered and never asked for leaves no [m, d] buffer with the kept |H|
    distance = model.config.distance
    return StepCost(build_s=built - start, product_s=done - built,
                    products=TYPICAL_PRODUCTS.get(distance, CG_ITERATIONS))


def removal_step_cost(analysis: AnalysedModel) -> StepCost:
    """:func:`step_cost` of a removal as :func:`~kgbias_core.influence.prediction.predict_removal` makes it on
    ``analysis``: its negatives (re-drawn for an import), its active terms, and its memoised |H| where it keeps one."""
    return step_cost(analysis.model, negatives=_negatives_of(analysis), active=getattr(analysis, "active_terms", None),
                     hvp=getattr(analysis, "absolute_hvp", None))
