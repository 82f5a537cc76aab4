"""The rows a removal touches, re-optimised: the local optimum of the edited objective over those rows alone.

A removal edit S takes training triples out of J (METHODS §2-3, S weighted 0):

    J_{-S}(theta) = J(theta) - sum_{z in S} L(z, theta)

The Newton step of :mod:`kgbias_core.influence.prediction` moves every row by one linear solve at the trained theta.
Where S holds most of what anchors a few rows (a person of an occupation with one woman, whose facts the set
removes), the optimum of J_{-S} for those rows lies past kinks the step does not see: a margin term turns off or
on, and the rows' own optimum is not where the quadratic model puts it. Kelpie (Rossi et al. 2022, "Explaining
link prediction systems based on knowledge graph embeddings") answers a removal by post-training only the rows
of the entity whose facts change, every other row frozen. This module does that for a set of triples: the rows
of every entity that S names as head or tail,

    rows* = argmin_{rows} J_{-S}(rows, rest)      rest frozen at ``entities`` / ``relations``

by L-BFGS over the terms that read a moving row (positive or any of its K frozen negatives). Every other term
of J_{-S} is constant in the moving rows, and so is the l2 term of the frozen rows. Started from theta + Delta
theta (the Newton step, :func:`kgbias_core.influence.prediction.absolute_newton_step`), this gives the "Newton step,
then the touched rows re-optimised" prediction that experiments/whatif_accuracy/local_refit.py measures against
masked retrains (issue 25's candidate "a local re-optimisation of only the rows the edit touches"). It is not yet
what the lab shows: docs/results/whatif.md has where it wins and where it does not.

Rows of hub entities (more than ``max_degree`` training triples: a country, a gender, a language), and rows that
lose less than ``min_share`` of their triples, are left where the step put them: a handful of removed triples
hardly moves a row anchored by many others, the step models such a row well, and the hubs' negatives would be most
of the terms the refit reads.

Shapes: entities [E, d], relations [R, d], triples [n, 3], negatives [K n, 3] (row j n + i: triple i's j-th,
:mod:`kgbias_core.embeddings.objective`), removed [s] (training-row indices) -> entities [E, d].
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kgbias_core.embeddings.objective import margin_loss, negatives_count, residual_distance, transe_distance
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import FloatTensor, LongTensor

#: L-BFGS iterations of a refit (each one or a few evaluations of the touched terms). On FB15k-237's largest sets
#: (Actor's top and bottom 16%; the top one: 702 rows, 144,000 terms) the point moved by 0.05% from 30 iterations
#: to 100 and by 0.9-1.5% from 10 to 100, at 23-27, 58-74 and 15 s for the pair on one CPU thread beside a retrain
#: (2026-11-28): the iterations are the refit's cost, and 30 keep the point.
REFIT_ITERATIONS = 30
#: Rows with more training triples than this stay where they are (module docstring).
MAX_DEGREE = 500
#: Rows that lose less than this share of their training triples stay where the step put them: the Newton step
#: is a fair model of a row that keeps most of its anchors, and the big edits' thousands of such rows would make
#: the refit cost seconds to minutes (module docstring).
MIN_SHARE = 0.25


@dataclass(frozen=True)
class TermBlock:
    """Terms whose residual h + r - t is ``offset + sign * moving[first] - moving[second]``.

    ``slots`` [c]: where each term sits in its vector of losses (:class:`RefitTerms`); ``offset`` [c, d]: the part
    of the residual no moving row changes (r, and a frozen head or tail); ``first`` [c]: a moving row the term reads
    (0..m-1), ``sign`` [c]: +1 where it is the head, -1 the tail; ``second`` [c]: the moving tail of a term whose
    head moves too, else m (the zero row the objective appends). ``single``: no term has a second moving row.
    ``offset_square`` [c]: ||offset||^2.
    """

    slots: LongTensor
    offset: FloatTensor
    offset_square: FloatTensor
    first: LongTensor
    sign: FloatTensor
    second: LongTensor
    single: bool


@dataclass(frozen=True)
class RefitTerms:
    """The terms of J_{-S} that read a moving row, with every other row's part fixed.

    ``rows`` [m]: the moving entity ids. Of the b kept triples whose loss a moving row reaches, the positives and
    the negatives that read one, each in two :class:`TermBlock` (one moving row; both head and tail moving):
    ``positive_blocks`` place their terms in the [b] vector of positive losses, ``negative_blocks`` in the [K b]
    vector of negative ones. ``positive_distance`` [b] and ``negative_distance`` [K, b]: psi of every one of the
    b triples' terms at the frozen rows (the constant part). Precomputed once, so an evaluation of the objective
    gathers only the moving rows (an L-BFGS refit evaluates it a few dozen times).
    """

    rows: LongTensor
    positive_blocks: tuple[TermBlock, TermBlock]
    negative_blocks: tuple[TermBlock, TermBlock]
    positive_distance: FloatTensor
    negative_distance: FloatTensor


def touched_rows(triples: LongTensor, removed: LongTensor, *, max_degree: int = MAX_DEGREE,
                 min_share: float = MIN_SHARE) -> LongTensor:
    """The entity ids that the removed triples name as head or tail, with at most ``max_degree`` training triples
    and at least ``min_share`` of them removed (heads and tails counted). [n, 3], [s] -> [m], sorted."""
    named = triples[removed][:, [0, 2]].reshape(-1)
    ids = torch.unique(named)
    if ids.numel() == 0:
        return ids
    size = int(triples[:, [0, 2]].max()) + 1
    degree = torch.bincount(triples[:, [0, 2]].reshape(-1), minlength=size)
    lost = torch.bincount(named, minlength=size)
    keep = (degree[ids] <= max_degree) & (lost[ids] >= min_share * degree[ids])
    return ids[keep]


def read_rows(groups: OccupationGroups, occupation_index: int) -> LongTensor:
    """The entity rows that B_gr of one occupation reads: its persons of either gender and the occupation itself
    (B_gr(o) = mean_{s in F_o} psi(s, r_p, o) - mean_{s in M_o} psi(s, r_p, o), Du §3.1, METHODS §1; r_p is a
    relation row, which a refit leaves where it is). A refit of these rows after the Newton step re-optimises, with
    their margin terms' kinks, exactly the rows the prediction is read from (experiments/whatif_accuracy/local_refit.py,
    estimator ``newton_refit_read``). -> [m], sorted, on the groups' device."""
    persons = groups.pair_person[groups.pair_occupation == occupation_index]
    return torch.unique(torch.cat([persons, groups.occupations[occupation_index:occupation_index + 1]]))


def refit_terms(*, entities: FloatTensor, relations: FloatTensor, triples: LongTensor, negatives: LongTensor,
                removed: LongTensor, rows: LongTensor, distance: str = "squared_l2") -> RefitTerms:
    """The terms of J_{-S} a move of ``rows`` changes (:class:`RefitTerms`), psi at the frozen rows."""
    n = triples.shape[0]
    k = negatives_count(negatives, n)
    device = entities.device
    moving = torch.zeros(entities.shape[0], dtype=torch.bool, device=device)
    moving[rows] = True
    kept = torch.ones(n, dtype=torch.bool, device=device)
    kept[removed] = False
    by_rank = negatives.view(k, n, 3)

    def reads(t: LongTensor) -> torch.Tensor:
        return moving[t[..., 0]] | moving[t[..., 2]]

    positive_reads, negative_reads = reads(triples), reads(by_rank)  # [n], [K, n]
    chosen = ((positive_reads | negative_reads.any(0)) & kept).nonzero().squeeze(1)  # [b]
    positives, ranked = triples[chosen], by_rank[:, chosen]  # [b, 3], [K, b, 3]
    with torch.no_grad():
        positive_distance = transe_distance(entities=entities, relations=relations, triples=positives,
                                            distance=distance)
        negative_distance = transe_distance(entities=entities, relations=relations, triples=ranked.reshape(-1, 3),
                                            distance=distance).view(k, -1)
    positive_slots = positive_reads[chosen].nonzero().squeeze(1)
    negative_slots = negative_reads[:, chosen].reshape(-1).nonzero().squeeze(1)
    slot = torch.full((entities.shape[0],), rows.shape[0], dtype=torch.long, device=device)
    slot[rows] = torch.arange(rows.shape[0], device=device)

    def blocks(t: LongTensor, slots: LongTensor) -> tuple[TermBlock, TermBlock]:
        """The terms ``t`` [c, 3] at ``slots`` [c], split by how many of their rows move."""
        head_moves, tail_moves = moving[t[:, 0]], moving[t[:, 2]]
        frozen_head = torch.where(head_moves.unsqueeze(1), 0.0, entities[t[:, 0]])
        frozen_tail = torch.where(tail_moves.unsqueeze(1), 0.0, entities[t[:, 2]])
        offset = relations[t[:, 1]] + frozen_head - frozen_tail
        first = torch.where(head_moves, slot[t[:, 0]], slot[t[:, 2]])
        sign = torch.where(head_moves, 1.0, -1.0).to(entities.dtype)
        both = head_moves & tail_moves
        second = torch.where(both, slot[t[:, 2]], rows.shape[0])
        return tuple(TermBlock(slots=slots[part], offset=offset[part], offset_square=offset[part].pow(2).sum(1),
                               first=first[part], sign=sign[part], second=second[part], single=single)
                     for part, single in ((~both, True), (both, False)))

    return RefitTerms(rows=rows, positive_blocks=blocks(positives[positive_slots], positive_slots),
                      negative_blocks=blocks(ranked.reshape(-1, 3)[negative_slots], negative_slots),
                      positive_distance=positive_distance, negative_distance=negative_distance)


def refit_objective(moving: FloatTensor, terms: RefitTerms, *, margin: float, l2: float,
                    distance: str = "squared_l2") -> FloatTensor:
    """J_{-S} as a function of the moving rows ``moving`` [m, d] (``terms.rows``' new values), up to a constant:
    sum over the terms that read a moving row of (1/K) [gamma + psi(z) - psi(z'_j)]_+ + (l2 / 2) ||moving||^2
    (METHODS §2-3). -> scalar.

    A term with one moving row x under squared L2 is read as ||c||^2 + 2 s (x . c) + ||x||^2 (c its offset, s its
    sign): one product with the gathered rows instead of a residual built and squared. Such terms are most of a
    large edit's (Actor's top 16%: 135,000 of 144,000), and an evaluation with its gradient there fell from 1.10 s
    to 0.22 s on one CPU thread (2026-11-28)."""
    padded = torch.cat([moving, moving.new_zeros(1, moving.shape[1])])  # row m: a frozen endpoint adds nothing
    square = padded.pow(2).sum(1)

    def psi(block: TermBlock) -> FloatTensor:
        x = padded.index_select(0, block.first)
        if block.single and distance == "squared_l2":
            return (block.offset_square + 2 * block.sign * torch.linalg.vecdot(x, block.offset)
                    + square.index_select(0, block.first))
        return residual_distance(block.offset + block.sign.unsqueeze(1) * x - padded.index_select(0, block.second),
                                 distance=distance)

    def place(constant: FloatTensor, blocks: tuple[TermBlock, TermBlock]) -> FloatTensor:
        return constant.index_put((torch.cat([b.slots for b in blocks]),), torch.cat([psi(b) for b in blocks]))

    k = terms.negative_distance.shape[0]
    positive = place(terms.positive_distance, terms.positive_blocks)
    negative = place(terms.negative_distance.reshape(-1), terms.negative_blocks)
    hinge = margin_loss(distance=positive, negative_distance=negative.view(k, -1), margin=margin)
    return hinge.sum() + l2 / 2 * moving.pow(2).sum()


def refit_rows(*, entities: FloatTensor, relations: FloatTensor, triples: LongTensor, negatives: LongTensor,
               removed: LongTensor, margin: float, l2: float, distance: str = "squared_l2",
               iterations: int = REFIT_ITERATIONS, max_degree: int = MAX_DEGREE, min_share: float = MIN_SHARE,
               rows: LongTensor | None = None) -> FloatTensor:
    """``entities`` with ``rows`` (default: the rows the removal touches, :func:`touched_rows`) at their local
    optimum of J_{-S}, every other row (and every relation) frozen (module docstring). ``removed`` may be empty
    (the rows refitted on J itself: the pair's other half, :func:`paired_refit`). -> [E, d], a new tensor."""
    removed = removed.to(triples.device)
    if rows is None:
        rows = touched_rows(triples, removed, max_degree=max_degree, min_share=min_share)
    result = entities.detach().clone()
    if rows.numel() == 0:
        return result
    frozen, relations = entities.detach(), relations.detach()
    terms = refit_terms(entities=frozen, relations=relations, triples=triples, negatives=negatives,
                        removed=removed, rows=rows, distance=distance)
    moving = torch.nn.Parameter(frozen[rows].clone())
    optimizer = torch.optim.LBFGS([moving], lr=1.0, max_iter=iterations, history_size=20,
                                  line_search_fn="strong_wolfe", tolerance_grad=1e-7, tolerance_change=1e-10)

    def closure() -> FloatTensor:
        optimizer.zero_grad()
        loss = refit_objective(moving, terms, margin=margin, l2=l2, distance=distance)
        loss.backward()
        return loss

    optimizer.step(closure)
    result[rows] = moving.detach()
    return result


def paired_refit(*, entities: FloatTensor, relations: FloatTensor, start: tuple[FloatTensor, FloatTensor],
                 triples: LongTensor, negatives: LongTensor, removed: LongTensor, margin: float, l2: float,
                 distance: str = "squared_l2", iterations: int = REFIT_ITERATIONS, max_degree: int = MAX_DEGREE,
                 min_share: float = MIN_SHARE, rows: LongTensor | None = None) -> tuple[FloatTensor, FloatTensor]:
    """The two halves of a refitted prediction: (``rows`` refitted on J at the trained ``entities``, the same rows
    refitted on J_{-S} from ``start`` = (entities, relations) after the Newton step). ``rows`` defaults to the rows
    the removal touches (:func:`touched_rows`); with :func:`read_rows` added, the rows B_gr is read from.

    A trained model is not at the exact optimum of J in every row (training stops after its epochs), so a refit
    moves the rows even with nothing removed. Kelpie compares an entity post-trained with and without the facts
    for the same reason; the change of B_gr is read between the two halves, so the refit's own drift cancels.
    -> ([E, d], [E, d])."""
    if rows is None:
        rows = touched_rows(triples, removed.to(triples.device), max_degree=max_degree, min_share=min_share)
    common = dict(triples=triples, negatives=negatives, margin=margin, l2=l2, distance=distance,
                  iterations=iterations, rows=rows)
    none = removed.new_zeros(0)
    unedited = refit_rows(entities=entities, relations=relations, removed=none, **common)
    edited = refit_rows(entities=start[0], relations=start[1], removed=removed, **common)
    return unedited, edited
