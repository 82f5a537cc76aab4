"""The memo of one stored model: each per-model tensor computed once, whoever asks first.

:class:`ModelAnalysis` holds the occupation groups, the diagonal Hessian alpha, the influence
context, B_gr, the per-pair biases B_in and B'_in, Fisher's b_p and the influence of every
training triple per occupation. The CLI, the tasks and the dashboard share it; it holds no UI
state. Readable DataFrames built from it live in :mod:`kgbias_core.tables`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

import torch

from kgbias_core.data.graph import Gender, person_mask
from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.influence.closed_form import (
    InfluenceContext,
    hessian_diagonal,
    influence_context,
    predicted_change,
    triple_influence,
)
from kgbias_core.influence.hinge_curvature import hinge_curvature_hvp
from kgbias_core.influence.local_refit import unedited_read_refit
from kgbias_core.influence.negatives import (
    DEFAULT_NEGATIVE_SEED,
    InfluenceNegatives,
    RedrawStability,
    influence_negatives,
    redraw_stability,
    redrawn_negatives,
    stability_seeds,
)
from kgbias_core.influence.prediction import absolute_curvature_hvp
from kgbias_core.influence.scale import PredictedChange, predict
from kgbias_core.measures.fisher import fisher_person_changes
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import OccupationGroups, occupation_groups
from kgbias_core.measures.individual_bias import fisher_individual_bias, gradient_projection, individual_bias
from kgbias_core.types import BoolTensor, FloatTensor, LongTensor

T = TypeVar("T")

#: The most margin pairs (triples x negatives per triple) whose |H| :meth:`ModelAnalysis.warm_up` builds unasked.
#: Its size grows with the pairs (FB15k-237 with L2 and eight negatives, 2.2M pairs: 184 MiB, 2.5 s at one thread;
#: FB13 with eight, 2.5M); a graph of 20M triples would hold gigabytes for a lab page that may never be opened.
WARM_CURVATURE_PAIRS = 4_000_000
#: The distances whose |H| the warm-up builds: a sparse matrix (squared L2; L2's negatives) and L2's positives'
#: residuals. L1's and pseudo-Huber's hold a curvature per active term and coordinate (FB15k-237's L1 model: 150 MiB,
#: built in 1.3 s), too much to hold for a page that may never ask, and FB13's L1 step is offered, not run unasked.
WARM_CURVATURE_DISTANCES = ("squared_l2", "l2")


class _Memo:
    """Values computed once per key, even when threads race for one (the warm-up thread, pages).

    One lock per key, so that a thread computing the influence context holds up only the threads
    that need the context, not a page that needs the groups or B_gr meanwhile. Keys are
    requested along one dependency order (context -> groups, never back), so no two threads
    can wait on each other. A computation that raises stores nothing: the next call raises again.
    """

    def __init__(self) -> None:
        self._values: dict[Hashable, object] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()  # guards _locks only

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._values:
                self._values[key] = compute()
            return self._values[key]  # type: ignore[return-value]


class ModelAnalysis:
    """Lazily computed, memoised tensors of one TransE model (thread-safe; callers must not modify them)."""

    def __init__(
        self, model: StoredModel, *, damping: float | None = None, negative_seed: int = DEFAULT_NEGATIVE_SEED
    ) -> None:
        self.model = model
        self.damping = model.damping if damping is None else damping
        # Used only where the model has no frozen negatives (an imported one): influence re-draws them.
        self.negative_seed = negative_seed
        self._memo = _Memo()

    def warm_up(self) -> threading.Thread | None:
        """Precompute the influence context in a background thread, so the first influence query is fast; then,
        below :data:`WARM_CURVATURE_PAIRS` margin pairs and for :data:`WARM_CURVATURE_DISTANCES`, the what-if
        predictions' |H| (:attr:`absolute_hvp`), so the lab's first prediction does not build it either (FB15k-237
        with L2 and eight negatives: 2.5 s of the first step's 8.5 s at one thread; docs/results/whatif.md)."""
        if self.model.config.model != "transe":
            return None
        if self.model.info.get("debias"):  # its influence is refused (DEBIASED_NO_RETRAIN): nothing to warm up
            return None

        def warm() -> None:
            self.context  # noqa: B018 -- memoised on first read
            if (self.model.config.distance in WARM_CURVATURE_DISTANCES
                    and self.negatives.negatives.shape[0] <= WARM_CURVATURE_PAIRS):
                self.absolute_hvp  # noqa: B018

        thread = threading.Thread(target=warm, name="kgbias-warm-up", daemon=True)
        thread.start()
        return thread

    @property
    def groups(self) -> OccupationGroups:
        """M_o and F_o of every occupation, the gender code of every entity, label -> index (METHODS §1)."""
        return self._memo.get("groups", lambda: occupation_groups(self.model))

    @property
    def is_person(self) -> BoolTensor:
        """Which entities are persons per the schema: with a gender or an occupation fact in training. [E]."""
        return self._memo.get("is_person", lambda: person_mask(
            self.model.triples, gender_relation=self.groups.gender_relation,
            occupation_relation=self.groups.occupation_relation, n_entities=self.model.n_entities))

    @property
    def alpha(self) -> FloatTensor:
        """The diagonal Hessian alpha_e (METHODS §3) with this analysis's damping. [E]."""
        return self._memo.get("alpha", lambda: hessian_diagonal(
            degree=self.groups.degree, n_triples=self.model.triples.shape[0], damping=self.damping
        ))

    @property
    def negatives(self) -> InfluenceNegatives:
        """The negatives influence uses: frozen (exact) or re-drawn from ``negative_seed`` (approximate)."""
        return self._memo.get("negatives", lambda: influence_negatives(self.model, seed=self.negative_seed))

    @property
    def context(self) -> InfluenceContext:
        """Margins and residuals shared by every influence query (METHODS §4)."""
        return self._memo.get("context", lambda: influence_context(
            self.model, damping=self.damping, groups=self.groups, negatives=self.negatives.negatives
        ))

    @property
    def active_terms(self) -> BoolTensor:
        """Which margin terms are active at the trained theta (with :attr:`negatives`), [|G|]: built once, shared by
        every what-if prediction of the model (:func:`~kgbias_core.influence.prediction.active_terms`)."""
        def compute() -> BoolTensor:
            # The influence context (built for the ranking anyway, and by warm_up) holds the same margins, tested
            # with the model's own distance and these negatives: reading them off it spares a first pseudo-Huber
            # prediction on FB15k-237 the 3.9 s of a second pass over its 2.2M pairs.
            mask = torch.zeros(self.negatives.negatives.shape[0], dtype=torch.bool,  # one per pair (z, z'_j)
                               device=self.model.triples.device)
            mask[self.context.active] = True
            return mask

        return self._memo.get("active_terms", compute)

    @property
    def absolute_hvp(self):
        """|H| v of the what-if predictions (:func:`~kgbias_core.influence.prediction.absolute_curvature_hvp`), built
        once per analysis: squared L2's sparse matrix took 1.5 s of a 2 s prediction on the eight-negative FB15k-237
        default (24 MB). L2's holds its positive terms' residuals and its negatives' matrix (FB15k-237 with eight
        negatives: 272k x 100 and 5.2M entries, 184 MiB measured), L1's and pseudo-Huber's a curvature per active
        term and coordinate (FB15k-237's L1 model: 334k x 100, 150 MiB; a build of 1.3 s each prediction paid before
        2026-12-07, when the product also held two [m, d] buffers)."""
        negatives = self.negatives
        return self._memo.get("absolute_hvp", lambda: absolute_curvature_hvp(
            self.model, negatives=None if negatives.exact else negatives.negatives, active=self.active_terms))

    def hinge_hvp(self, temperature: float):
        """H_T v of the removal predictions once the model's audit has set the hinge's temperature T
        (:func:`~kgbias_core.influence.hinge_curvature.hinge_curvature_hvp`, on |H| of :attr:`absolute_hvp`): built
        once per analysis and T (FB15k-237 with one negative: 2 s). A model has one audit, so one T: a new audit
        (another T) keeps the old operator until the analysis goes."""
        negatives = self.negatives
        redrawn = None if negatives.exact else negatives.negatives
        return self._memo.get(("hinge_hvp", temperature), lambda: hinge_curvature_hvp(
            self.model, temperature, base=self.absolute_hvp, negatives=redrawn))

    def unedited_read_refit(self, occupation: str) -> tuple[LongTensor, FloatTensor]:
        """The rows B_gr of ``occupation`` reads (a sample of 256 a gender) refitted on J at the trained rows, the
        unedited half every refined prediction of the occupation shares
        (:func:`~kgbias_core.influence.local_refit.unedited_read_refit`); seconds, once per occupation."""
        index = self.groups.index(occupation)
        negatives = self.negatives

        def compute() -> tuple[LongTensor, FloatTensor]:
            model = self.model
            return unedited_read_refit(entities=model.entity_embeddings, relations=model.relation_embeddings,
                                       triples=model.triples, negatives=negatives.negatives, groups=self.groups,
                                       occupation_index=index, margin=model.config.margin, l2=model.config.l2,
                                       distance=model.config.distance)

        return self._memo.get(("unedited_read_refit", index), compute)

    def group_bias(self, occupation: str | None = None) -> FloatTensor:
        """B_gr (METHODS §1) of every occupation, [O], or of the one labelled ``occupation``, [].

        Positive = male-leaning; NaN where M_o or F_o is empty. Costs one pass over the
        (person, occupation) pairs: no bootstrap, no Fisher, none of the measures table.
        """
        values = self._memo.get("group_bias", lambda: group_bias(
            entity_embeddings=self.model.entity_embeddings,
            relation_embeddings=self.model.relation_embeddings,
            groups=self.groups,
            distance=self.model.config.distance,
        ))
        return values if occupation is None else values[self.groups.index(occupation)]

    @property
    def pair_biases(self) -> tuple[FloatTensor, FloatTensor]:
        """(B_in, B'_in) per (person, occupation) pair (METHODS §5), [P] each."""

        def compute() -> tuple[FloatTensor, FloatTensor]:
            e, r, distance = self.model.entity_embeddings, self.model.relation_embeddings, self.model.config.distance
            # One pass over the pairs for both (3M pairs x d at 20M triples).
            projection = gradient_projection(entity_embeddings=e, relation_embeddings=r, groups=self.groups,
                                             distance=distance)
            return (
                individual_bias(entity_embeddings=e, relation_embeddings=r, groups=self.groups, alpha=self.alpha,
                                distance=distance, projection=projection),
                fisher_individual_bias(entity_embeddings=e, relation_embeddings=r, groups=self.groups,
                                       distance=distance, projection=projection),
            )

        return self._memo.get("pair_biases", compute)

    @property
    def fisher_persons(self) -> LongTensor:
        """The persons of :attr:`fisher_changes`, one per row: every entity with a binary gender. [J], sorted."""
        gender = self.groups.gender
        return ((gender == Gender.MALE) | (gender == Gender.FEMALE)).nonzero().squeeze(-1)

    @property
    def fisher_changes(self) -> FloatTensor:
        """Fisher's nabla_p(j) (METHODS §6), a = male, b = female: each person with a binary gender's
        change of each occupation's score. [J, O], float64; b_p is its mean over persons."""

        def compute() -> FloatTensor:
            groups = self.groups
            return fisher_person_changes(
                pykeen_model(self.model),
                persons=self.fisher_persons,
                attribute_relation=groups.gender_relation,
                value_a=groups.male,
                value_b=groups.female,
                occupation_relation=groups.occupation_relation,
                professions=groups.occupations,
            )  # stays on the model's device: tables move it to the CPU, at display

        return self._memo.get("fisher_changes", compute)

    @property
    def fisher_bp(self) -> FloatTensor:
        """Fisher's b_p (METHODS §6), a = male, b = female, over all persons with a binary gender. [O]."""
        return self._memo.get("fisher_bp", lambda: self.fisher_changes.mean(dim=0).to(torch.float32))

    def influence(self, occupation: str) -> FloatTensor:
        """delta_z B_gr of every training triple for the occupation labelled ``occupation`` (METHODS §4). [|G|]."""
        index = self.groups.index(occupation)
        return self._memo.get(("influence", index), lambda: triple_influence(self.context, index))

    def redraw_stability(self, occupation: str) -> RedrawStability:
        """Stability of the occupation's top 1% under the draw of the negatives (METHODS §4): its
        influence re-drawn from :func:`~kgbias_core.influence.negatives.stability_seeds` (this analysis's
        seed first, whose influence is the memoised one), compared by
        :func:`~kgbias_core.influence.negatives.redraw_stability`. Meaningful where the negatives are
        re-drawn; on a model with frozen ones it measures what a re-draw would change.

        The other seeds' contexts are built, used and dropped (not memoised): one context per seed
        would multiply the memory of the largest tensors of the analysis.
        """
        index = self.groups.index(occupation)

        def compute() -> RedrawStability:
            seeds = stability_seeds(self.negative_seed)
            first = self.influence(occupation) if not self.negatives.exact else None
            influences = [first] if first is not None else []
            for seed in seeds[len(influences):]:
                context = influence_context(self.model, damping=self.damping, groups=self.groups,
                                            negatives=redrawn_negatives(self.model, seed=seed))
                influences.append(triple_influence(context, index))
                del context
            return redraw_stability(influences, seeds=seeds)

        return self._memo.get(("redraw_stability", index), compute)

    def predicted_removal(self, occupation: str, removed: LongTensor) -> PredictedChange:
        """Predicted change of B_gr when ``removed`` (triple indices) are dropped: the raw sum of delta_z,
        and the calibrated point and interval where the model has them (METHODS §4)."""
        raw = predicted_change(self.influence(occupation), removed)
        return predict(raw, scale=self.model.influence_scale, calibration=self.model.calibration)

