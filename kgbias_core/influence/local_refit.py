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
masked retrains (issue 25's candidate "a local re-optimisation of only the rows the edit touches"). With the rows
B_gr reads refitted too (:func:`read_rows`, :func:`read_refit_change`, which refits a sample of the persons of a
large occupation), it is the lab's refined prediction on models of eight negatives
(:mod:`kgbias_core.influence.refit_prediction`); docs/results/whatif.md has where it wins and where it does not.

Rows of hub entities (more than ``max_degree`` training triples: a country, a gender, a language), and rows that
lose less than ``min_share`` of their triples, are left where the step put them: a handful of removed triples
hardly moves a row anchored by many others, the step models such a row well, and the hubs' negatives would be most
of the terms the refit reads.

Shapes: entities [E, d], relations [R, d], triples [n, 3], negatives [K n, 3] (row j n + i: triple i's j-th,
:mod:`kgbias_core.embeddings.objective`), removed [s] (training-row indices) -> entities [E, d].
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from kgbias_core.embeddings.objective import negatives_count, residual_distance
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import FloatTensor, LongTensor

#: L-BFGS iterations of a refit (each one or a few evaluations of the touched terms). On FB15k-237's largest sets
#: (Actor's top and bottom 16%; the top one: 702 rows, 144,000 terms) the point moved by 0.05% from 30 iterations
#: to 100 and by 0.9-1.5% from 10 to 100, at 23-27, 58-74 and 15 s for the pair on one CPU thread beside a retrain
#: (2026-11-28): the iterations are the refit's cost, and 30 keep the point.
REFIT_ITERATIONS = 30
#: The distances whose psi of a term with one moving row x is read from its square ||c||^2 + 2 s (delta . c) +
#: ||delta||^2 (:func:`refit_objective`), c the term's residual at the row's start x0 and delta = x - x0: squared L2
#: itself, and L2 its square root. Expanded around x0, every part is of the residual's own size. Expanded around 0
#: (c the offset r + the frozen endpoint, as until 2026-12-07), ||c||^2 + ||x||^2 cancelled against 2 x . c in
#: float32 down to a small residual, and L2's root and gradient with it (FB15k-237's L2 model gave Theatre
#: Director's top sets a refined +0.05 and +0.08 where the residuals gave +0.34, retrained +0.40 and +0.44), so L2's
#: refit held its terms in float64 at twice the memory traffic. L2's refit still optimises in float64 (its root's
#: gradient near a small residual), but now holds the residuals c in float32 (:func:`refit_rows`): the objective's
#: pass over them is its cost.
EXPANDED_DISTANCES = ("squared_l2", "l2")
#: L2's psi from that square is sqrt(max(square, L2_SQUARE_FLOOR)): a residual under 1e-6 reads as 1e-6, so a square
#: that cancels to 0 or just below (float rounding) gives a finite gradient, not sqrt's infinite one.
L2_SQUARE_FLOOR = 1e-12
#: Rows with more training triples than this stay where they are (module docstring).
MAX_DEGREE = 500
#: Rows that lose less than this share of their training triples stay where the step put them: the Newton step
#: is a fair model of a row that keeps most of its anchors, and the big edits' thousands of such rows would make
#: the refit cost seconds to minutes (module docstring).
MIN_SHARE = 0.25


@dataclass(frozen=True)
class TermBlock:
    """Terms whose residual h + r - t is ``offset + sign * moving[first] - moving[second]`` (both rows moving), or
    ``offset + sign * (moving[first] - start[first])`` (``single``: one moving row, :class:`RefitTerms`' ``start``).

    ``slots`` [c]: where each term sits in its vector of losses (:class:`RefitTerms`); ``offset`` [c, d]: the part
    of the residual no moving row changes (r, and a frozen head or tail), and for a single block the whole residual
    at the rows' start (so the objective reads each term as its start residual plus the row's move, every part of
    the residual's own size: :data:`EXPANDED_DISTANCES`); ``first`` [c]: a moving row the term reads
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
    #: A single block on the CPU, its terms sorted by ``first``: (row, start, end) of each row's run of terms, so
    #: that x . offset is one matrix-vector product a row (:class:`_RowDots`); () where terms are not sorted.
    segments: tuple[tuple[int, int, int], ...] = ()


class _RowDots(torch.autograd.Function):
    """dots[c] = x[first[c]] . offset[c] of a single block sorted by row (``segments``), forward and backward one
    matrix-vector product per moving row over its contiguous run of offsets. The gather it replaces built a [c, d]
    copy of the rows every evaluation, and its backward an index_add of [c, d]; on one CPU thread, 165,000 terms of
    d = 100 (Actor's read rows' negatives) took 0.14 s that way and 0.015 s this way, the same gradient
    (2026-11-29). The products run in ``offset``'s dtype (float32 under a float64 L2 refit: a pass over the
    offsets is the objective's memory traffic), dots and gradient come back in x's."""

    @staticmethod
    def forward(ctx, padded: torch.Tensor, offset: torch.Tensor, segments: tuple) -> torch.Tensor:
        ctx.save_for_backward(offset)
        ctx.segments, ctx.shape, ctx.dtype = segments, padded.shape, padded.dtype
        rows = padded.to(offset.dtype)
        out = offset.new_empty(offset.shape[0])
        for row, start, end in segments:
            torch.mv(offset[start:end], rows[row], out=out[start:end])
        return out.to(padded.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (offset,) = ctx.saved_tensors
        grad = grad.to(offset.dtype)
        padded_grad = offset.new_zeros(ctx.shape)
        for row, start, end in ctx.segments:
            torch.mv(offset[start:end].T, grad[start:end], out=padded_grad[row])
        return padded_grad.to(ctx.dtype), None, None


def _with_segments(block: TermBlock) -> TermBlock:
    """``block`` (single, on the CPU, its terms already sorted by moving row) with the runs as ``segments``."""
    rows, counts = torch.unique_consecutive(block.first, return_counts=True)
    ends = torch.cumsum(counts, 0)
    return replace(block, segments=tuple(zip(rows.tolist(), (ends - counts).tolist(), ends.tolist(), strict=True)))


@dataclass(frozen=True)
class RefitTerms:
    """The terms of J_{-S} that read a moving row, with every other row's part fixed.

    ``rows`` [m]: the moving entity ids. Of the b kept triples whose loss a moving row reaches, the hinge terms
    (triple i, negative j) whose positive or negative reads a moving row: t of them, term ``pair_positive`` [t]
    naming its triple. A term with neither is constant in the moving rows and left out. ``positive_blocks`` place
    the moving positives in the [b] vector of positive distances, ``negative_blocks`` the moving negatives in the
    [t] vector of negative ones, each in two :class:`TermBlock` (one moving row; both head and tail moving).
    ``positive_distance`` [b] and ``negative_distance`` [t]: psi at the frozen rows (the constant part; a frozen
    negative of a moving positive keeps it). ``k``: negatives per triple. Precomputed once, so an evaluation of
    the objective gathers only the moving rows (an L-BFGS refit evaluates it a few dozen times). ``start`` [m, d]:
    the moving rows' values at which the single blocks' residuals were taken (the frozen ``entities``' rows).
    """

    rows: LongTensor
    positive_blocks: tuple[TermBlock, TermBlock]
    negative_blocks: tuple[TermBlock, TermBlock]
    positive_distance: FloatTensor
    negative_distance: FloatTensor
    pair_positive: LongTensor
    k: int
    start: FloatTensor


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


def read_persons(groups: OccupationGroups, occupation_index: int) -> tuple[LongTensor, LongTensor]:
    """The persons B_gr of one occupation reads, (men, women): entity ids [|M_o|], [|F_o|] on the groups' device."""
    mine = groups.pair_occupation == occupation_index
    persons, female = groups.pair_person[mine], groups.pair_female[mine]
    return persons[~female], persons[female]


def read_rows(groups: OccupationGroups, occupation_index: int) -> LongTensor:
    """The entity rows that B_gr of one occupation reads: its persons of either gender and the occupation itself
    (B_gr(o) = mean_{s in F_o} psi(s, r_p, o) - mean_{s in M_o} psi(s, r_p, o), Du §3.1, METHODS §1; r_p is a
    relation row, which a refit leaves where it is). A refit of these rows after the Newton step re-optimises, with
    their margin terms' kinks, exactly the rows the prediction is read from (:func:`read_refit_change`).
    -> [m], sorted, on the groups' device."""
    return torch.unique(torch.cat([*read_persons(groups, occupation_index),
                                   groups.occupations[occupation_index:occupation_index + 1]]))


def refit_terms(*, entities: FloatTensor, relations: FloatTensor, triples: LongTensor, negatives: LongTensor,
                removed: LongTensor, rows: LongTensor, distance: str = "squared_l2",
                single_dtype: torch.dtype | None = None) -> RefitTerms:
    """The terms of J_{-S} a move of ``rows`` changes (:class:`RefitTerms`), psi at the frozen rows.
    ``single_dtype``: the dtype the single blocks' residuals are held in (default ``entities``'; their squares are
    taken from the values held, so the objective stays the exact function of them)."""
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
    positive_moves, negative_moves = positive_reads[chosen], negative_reads[:, chosen]  # [b], [K, b]
    # the hinge terms (j, i), flat j b + i, that a moving row reaches: a frozen triple's other negatives are
    # constant (Actor's top 16%: 1.6 million of a chosen triple's terms, 0.6 million read a moving row)
    pair = (positive_moves.unsqueeze(0) | negative_moves).reshape(-1).nonzero().squeeze(1)  # [t]
    pair_positive = pair % chosen.shape[0]
    pair_negative_moves = negative_moves.reshape(-1)[pair]
    positives, ranked = triples[chosen], by_rank[:, chosen].reshape(-1, 3)[pair]  # [b, 3], [t, 3]

    # every offset r + (frozen head) - (frozen tail), and every frozen term's residual h + r - t, is a bag of three
    # rows of [entities; relations], a moving endpoint weighted 0: one [c, d] array written a block, in its final
    # order (the gathers, selects, masks and the sort by row wrote six: a read-rows refit's terms on FB15k-237's L2
    # model took 3.8 s for Actor's persons, now 1.4 s, the same bits, 2026-12-07)
    stacked = torch.cat([entities, relations])
    n_entities = entities.shape[0]

    def offsets(t: LongTensor, head: torch.Tensor, tail: torch.Tensor) -> FloatTensor:
        """sum of h [if ``head``] + r - t [if ``tail``] of the terms ``t`` [c, 3] -> [c, d]."""
        weights = torch.stack([head.to(entities.dtype), torch.ones_like(head, dtype=entities.dtype),
                               -tail.to(entities.dtype)], dim=1)
        bags = torch.stack([t[:, 0], n_entities + t[:, 1], t[:, 2]], dim=1)
        return torch.nn.functional.embedding_bag(bags, stacked, mode="sum", per_sample_weights=weights)

    def frozen_distance(t: LongTensor, fixed: torch.Tensor) -> FloatTensor:
        """psi of the triples ``t`` whose rows are all frozen (``fixed``); 0 where a moving row overwrites it."""
        values = entities.new_zeros(t.shape[0])
        with torch.no_grad():
            frozen = t[fixed]
            every = torch.ones(frozen.shape[0], dtype=torch.bool, device=device)
            values[fixed] = residual_distance(offsets(frozen, every, every), distance=distance)
        return values

    positive_distance = frozen_distance(positives, ~positive_moves)
    negative_distance = frozen_distance(ranked, ~pair_negative_moves)
    positive_slots = positive_moves.nonzero().squeeze(1)
    negative_slots = pair_negative_moves.nonzero().squeeze(1)
    slot = torch.full((entities.shape[0],), rows.shape[0], dtype=torch.long, device=device)
    slot[rows] = torch.arange(rows.shape[0], device=device)
    start = entities[rows]

    def blocks(t: LongTensor, slots: LongTensor) -> tuple[TermBlock, TermBlock]:
        """The terms ``t`` [c, 3] at ``slots`` [c], split by how many of their rows move."""
        head_moves, tail_moves = moving[t[:, 0]], moving[t[:, 2]]
        first = torch.where(head_moves, slot[t[:, 0]], slot[t[:, 2]])
        both = head_moves & tail_moves
        # a GPU gathers as fast as it multiplies: no loop over rows there, so no sort by row
        by_row = distance in EXPANDED_DISTANCES and device.type == "cpu"
        made = []
        for part, single in ((~both, True), (both, False)):
            index = part.nonzero().squeeze(1)
            if single and by_row:  # terms sorted by their moving row (stable: the order of t within a row)
                index = index[torch.argsort(first[index], stable=True)]
            terms, heads, tails = t[index], head_moves[index], tail_moves[index]
            # a single block's residual at the start is the whole term's at ``entities``, the moving row's too
            offset = offsets(terms, torch.ones_like(heads), torch.ones_like(tails)) if single else offsets(
                terms, ~heads, ~tails)
            if single:  # held in ``single_dtype``, its square taken from the values held (the objective's own)
                offset = offset.to(single_dtype or offset.dtype)
            held = offset.to(entities.dtype)
            block = TermBlock(slots=slots[index], offset=offset, offset_square=torch.linalg.vecdot(held, held),
                              first=first[index],
                              sign=torch.where(heads, 1.0, -1.0).to(entities.dtype),
                              second=torch.where(heads & tails, slot[terms[:, 2]], rows.shape[0]), single=single)
            made.append(_with_segments(block) if single and by_row else block)
        return made[0], made[1]

    return RefitTerms(rows=rows, positive_blocks=blocks(positives[positive_slots], positive_slots),
                      negative_blocks=blocks(ranked[negative_slots], negative_slots),
                      positive_distance=positive_distance, negative_distance=negative_distance,
                      pair_positive=pair_positive, k=k, start=start)


def refit_objective(moving: FloatTensor, terms: RefitTerms, *, margin: float, l2: float,
                    distance: str = "squared_l2") -> FloatTensor:
    """J_{-S} as a function of the moving rows ``moving`` [m, d] (``terms.rows``' new values), up to a constant:
    sum over the terms that read a moving row of (1/K) [gamma + psi(z) - psi(z'_j)]_+ + (l2 / 2) ||moving||^2
    (METHODS §2-3), the hinge terms that read no moving row left out (constant). -> scalar.

    A term with one moving row x under squared L2 is read as ||c||^2 + 2 s (delta . c) + ||delta||^2 (c its residual
    at the row's start x0, s its sign, delta = x - x0: :data:`EXPANDED_DISTANCES`): one product with the rows' moves
    instead of a residual built and squared. Such terms are most of a large edit's (Actor's top 16%: 135,000 of
    144,000), and an evaluation with its gradient there fell from 1.10 s to 0.22 s on one CPU thread (2026-11-28).
    On the CPU, delta . c is a product per moving row over its run of terms (:class:`_RowDots`), not a gather of
    [c, d]. Under L2 (since 2026-12-07) psi is the square root of the same
    square (:data:`L2_SQUARE_FLOOR`): a read-rows refit on FB15k-237's L2 model took 10.7 s, 16 s of a refined
    prediction, through the residuals."""
    padded = torch.cat([moving, moving.new_zeros(1, moving.shape[1])])  # row m: a frozen endpoint adds nothing
    moved = torch.cat([moving - terms.start, moving.new_zeros(1, moving.shape[1])])  # delta, and row m's 0
    square = moved.pow(2).sum(1)

    def psi(block: TermBlock) -> FloatTensor:
        if not block.single:  # both rows move: r + x_head - x_tail
            x = padded.index_select(0, block.first)
            return residual_distance(block.offset + block.sign.unsqueeze(1) * x
                                     - padded.index_select(0, block.second), distance=distance)
        if distance in EXPANDED_DISTANCES:
            dots = (_RowDots.apply(moved, block.offset, block.segments) if block.segments
                    else torch.linalg.vecdot(moved.index_select(0, block.first).to(block.offset.dtype),
                                             block.offset).to(moved.dtype))
            squared = block.offset_square + 2 * block.sign * dots + square.index_select(0, block.first)
            return squared if distance == "squared_l2" else squared.clamp_min(L2_SQUARE_FLOOR).sqrt()
        return residual_distance(block.offset.to(moved.dtype)
                                 + block.sign.unsqueeze(1) * moved.index_select(0, block.first), distance=distance)

    def place(constant: FloatTensor, blocks: tuple[TermBlock, TermBlock]) -> FloatTensor:
        return constant.index_put((torch.cat([b.slots for b in blocks]),), torch.cat([psi(b) for b in blocks]))

    positive = place(terms.positive_distance, terms.positive_blocks)
    negative = place(terms.negative_distance, terms.negative_blocks)
    hinge = torch.relu(margin + positive.index_select(0, terms.pair_positive) - negative)  # margin_loss, term-wise
    return hinge.sum() / terms.k + l2 / 2 * moving.pow(2).sum()


def refit_rows(*, entities: FloatTensor, relations: FloatTensor, triples: LongTensor, negatives: LongTensor,
               removed: LongTensor, margin: float, l2: float, distance: str = "squared_l2",
               iterations: int = REFIT_ITERATIONS, max_degree: int = MAX_DEGREE, min_share: float = MIN_SHARE,
               rows: LongTensor | None = None) -> FloatTensor:
    """``entities`` with ``rows`` (default: the rows the removal touches, :func:`touched_rows`) at their local
    optimum of J_{-S}, every other row (and every relation) frozen (module docstring). ``removed`` may be empty
    (the rows refitted on J itself: the pair's other half, :func:`paired_refit`). Under L2 the refit optimises in
    float64 (its root's gradient near a small residual), the single terms' residuals held in ``entities``' dtype
    (:data:`EXPANDED_DISTANCES`). -> [E, d], a new tensor of ``entities``' dtype."""
    removed = removed.to(triples.device)
    if rows is None:
        rows = touched_rows(triples, removed, max_degree=max_degree, min_share=min_share)
    result = entities.detach().clone()
    if rows.numel() == 0:
        return result
    work = torch.float64 if distance == "l2" else entities.dtype
    frozen, relations = entities.detach().to(work), relations.detach().to(work)
    terms = refit_terms(entities=frozen, relations=relations, triples=triples, negatives=negatives,
                        removed=removed, rows=rows, distance=distance, single_dtype=entities.dtype)
    moving = torch.nn.Parameter(frozen[rows].clone())
    optimizer = torch.optim.LBFGS([moving], lr=1.0, max_iter=iterations, history_size=20,
                                  line_search_fn="strong_wolfe", tolerance_grad=1e-7, tolerance_change=1e-10)

    def closure() -> FloatTensor:
        optimizer.zero_grad()
        loss = refit_objective(moving, terms, margin=margin, l2=l2, distance=distance)
        loss.backward()
        return loss

    optimizer.step(closure)
    result[rows] = moving.detach().to(result.dtype)
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


#: Persons of each gender a read-rows refit (:func:`read_refit_change`) re-optimises at most. Actor (1,874 persons),
#: the largest of FB15k-237's 8 occupations above 300, cost 34-51 s on one CPU thread with every person refitted;
#: with 256 a gender its pair took 5.5-10 s, and the four largest landed within 0.96-1.045 of the full refit's change
#: on 24 draws (experiments/whatif_accuracy/read_sampling.py, 2026-11-29).
READ_PERSONS = 256


@dataclass(frozen=True)
class ReadRefit:
    """The read-rows refit's prediction of Delta B_gr (:func:`read_refit_change`): ``change``; ``rows`` refitted;
    ``persons``: persons of the occupation, ``sampled``: of them refitted (fewer where a gender has more than
    :data:`READ_PERSONS`)."""

    change: float
    rows: int
    persons: int
    sampled: int


def _sampled(ids: LongTensor, cap: int | None, generator: torch.Generator) -> LongTensor:
    """Positions 0..len(ids)-1 of at most ``cap`` of ``ids``, drawn without replacement (all of them, in order,
    where they are no more)."""
    if cap is None or ids.numel() <= cap:
        return torch.arange(ids.numel(), device=ids.device)
    return torch.randperm(ids.numel(), generator=generator)[:cap].sort().values.to(ids.device)


def _read_sample(groups: OccupationGroups, occupation_index: int, max_persons: int | None,
                 seed: int) -> tuple[list[tuple[LongTensor, LongTensor]], LongTensor, LongTensor]:
    """(men, women) as (ids, positions of the sample), the sampled persons, the occupation's row [1]."""
    generator = torch.Generator().manual_seed(seed)
    genders = [(ids, _sampled(ids, max_persons, generator)) for ids in read_persons(groups, occupation_index)]
    sample = torch.cat([ids[chosen] for ids, chosen in genders])
    return genders, sample, groups.occupations[occupation_index:occupation_index + 1]


def unedited_read_refit(*, entities: FloatTensor, relations: FloatTensor, triples: LongTensor,
                        negatives: LongTensor, groups: OccupationGroups, occupation_index: int, margin: float,
                        l2: float, distance: str = "squared_l2", max_persons: int | None = READ_PERSONS,
                        seed: int = 0, iterations: int = REFIT_ITERATIONS) -> tuple[LongTensor, FloatTensor]:
    """The unedited half of :func:`read_refit_change` without the touched rows: the read rows (the sample of
    ``max_persons`` a gender, ``seed``) refitted on J at the trained rows. It does not depend on the edit, so the
    predictions of one occupation share it (:class:`~kgbias_core.analysis.ModelAnalysis` memoises it): only the
    refitted rows are kept, not a copy of every row. -> (rows [m], their refitted values [m, d])."""
    _, sample, occupation = _read_sample(groups, occupation_index, max_persons, seed)
    rows = torch.unique(torch.cat([sample.to(triples.device), occupation.to(triples.device)]))
    refitted = refit_rows(entities=entities, relations=relations, triples=triples, negatives=negatives,
                          removed=triples.new_zeros(0), margin=margin, l2=l2, distance=distance,
                          iterations=iterations, rows=rows)
    return rows, refitted[rows]


def read_refit_change(*, entities: FloatTensor, relations: FloatTensor, step: tuple[FloatTensor, FloatTensor],
                      triples: LongTensor, negatives: LongTensor, removed: LongTensor, groups: OccupationGroups,
                      occupation_index: int, margin: float, l2: float, distance: str = "squared_l2",
                      max_persons: int | None = READ_PERSONS, seed: int = 0, touched: bool = False,
                      iterations: int = REFIT_ITERATIONS, max_degree: int = MAX_DEGREE,
                      min_share: float = MIN_SHARE,
                      unedited: tuple[LongTensor, FloatTensor] | None = None) -> ReadRefit:
    """Delta B_gr of one occupation after the Newton step ``step`` (Delta theta of the removal ``removed``), with
    the rows B_gr reads (:func:`read_rows`), and with ``touched`` the rows the removal touches
    (:func:`touched_rows`), refitted in a pair (:func:`paired_refit`). Without the touched rows the prediction moved
    by at most 0.5% on FB15k-237's sets (Actor's top 16%: 1.877 against 1.880) at half the cost there.

    B_gr(o) = mean_{F_o} psi(s, r_p, o) - mean_{M_o} psi(s, r_p, o) (Du §3.1, METHODS §1), so its change is
    mean_{F_o} d(s) - mean_{M_o} d(s), d(s) the change of psi(s, r_p, o). Where a gender has more than
    ``max_persons`` persons, only a sample of them (``seed``) is refitted, and its mean is read as a control
    variate on the Newton step's d_step, known for every person:

        mean_{g} d  ~  mean_{s in g} d_step(s) + mean_{s in sample} (d_refit(s) - d_step(s))

    unbiased over the draw for the refit of the sample (the occupation row is refitted with it), and equal to the
    full refit's mean where the sample is the whole gender. d_refit is read between the pair's halves, d_step
    between theta + Delta theta and theta. ``unedited``: the pair's unedited half where the caller holds it
    (:func:`unedited_read_refit` of the same occupation, cap and seed; not with ``touched``, whose rows depend on
    the edit). -> :class:`ReadRefit`."""
    if touched and unedited is not None:
        raise ValueError("the unedited half of a refit with the touched rows depends on the edit: not shared")
    removed = removed.to(triples.device)
    genders, sample, occupation = _read_sample(groups, occupation_index, max_persons, seed)
    edited_rows = (touched_rows(triples, removed, max_degree=max_degree, min_share=min_share) if touched
                   else removed.new_zeros(0))
    rows = torch.unique(torch.cat([edited_rows, sample.to(triples.device), occupation.to(triples.device)]))
    start = (entities + step[0], relations + step[1])
    common = dict(triples=triples, negatives=negatives, margin=margin, l2=l2, distance=distance,
                  iterations=iterations, rows=rows)
    if unedited is None:
        unedited, edited = paired_refit(entities=entities, relations=relations, start=start, removed=removed,
                                        **common)
    else:
        if not torch.equal(unedited[0], rows):
            raise ValueError("the unedited half holds other rows than this refit's (another cap or seed?)")
        edited = refit_rows(entities=start[0], relations=start[1], removed=removed, **common)
        unedited = entities.detach().index_put((rows,), unedited[1])
    r_p = groups.occupation_relation

    def psi(e: FloatTensor, r: FloatTensor, ids: LongTensor) -> FloatTensor:
        return residual_distance(e[ids] + r[r_p] - e[occupation], distance=distance)

    means = []
    for ids, chosen in genders:
        d_step = psi(*start, ids) - psi(entities, relations, ids)
        d_refit = psi(edited, start[1], ids[chosen]) - psi(unedited, relations, ids[chosen])
        means.append(float(d_step.double().mean() + (d_refit - d_step[chosen]).double().mean()))
    return ReadRefit(change=means[1] - means[0], rows=int(rows.numel()),
                     persons=sum(int(ids.numel()) for ids, _ in genders), sampled=int(sample.numel()))
