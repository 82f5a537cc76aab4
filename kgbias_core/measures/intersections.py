"""B_gr, the B_in aggregates and Fisher's b_p within the subpopulations of a second attribute (intersectional).

Du et al.'s and Fisher et al.'s measures (METHODS §1, §5, §6) restricted to the persons who hold one
value of an attribute relation of the schema (nationality, ethnicity, religion): e.g. Actor's B_gr
among US persons against among UK persons. A person's value is the attribute's tail entity (its head
for relations stored value -> person, ``person_is_head=False``).

- A person with several values of the attribute belongs to EACH of their subpopulations (two
  nationalities: counted in both), so the subpopulations overlap and their sizes may add up to
  more than the occupation's persons. Persons without any value form one "no value" group, kept
  and counted like a value, never dropped.
- Disaggregate once, as :class:`~kgbias_core.measures.groups.OccupationGroups` does:
  :func:`attribute_cells` builds an ``OccupationGroups`` whose "occupations" are the occupation's
  subpopulations, so that ``group_bias``, ``group_bias_interval`` and ``aggregate_individual``
  apply unchanged, vectorised over (person, subpopulation) pairs with no loop over persons.
- The small-group guard is explicit (:func:`defined_cells`, :func:`guarded`): a subpopulation with
  fewer than ``min_count`` men or ``min_count`` women gets NaN, never a number.
- The difference of B_gr between two subpopulations is tested by permuting the value labels within
  gender (:func:`group_bias_difference_test`).

**Positive bias = male-leaning**, as everywhere in kgbias.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from kgbias_core.measures.group_bias import summed_by
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.types import BoolTensor, FloatTensor, LongTensor


def attribute_pairs(triples: LongTensor, *, relation: int, person_is_head: bool = True) -> LongTensor:
    """Distinct (person, value) pairs of an attribute relation, whichever way it is stored. [n, 3] -> [k, 2].

    ``person_is_head=False`` for relations stored value -> person (FB15k-237's /people/ethnicity/people).
    """
    facts = triples[triples[:, 1] == relation]
    return torch.unique(facts[:, [0, 2] if person_is_head else [2, 0]], dim=0)


@dataclass(frozen=True)
class AttributeCells:
    """One occupation's persons disaggregated by gender × the values of one attribute."""

    occupation_index: int  # position of the occupation in the full groups' ``occupations``
    values: LongTensor  # [V] entity ids of the values held by at least one of its persons, sorted
    # The occupation's pairs once per value their person holds: subpopulation c < V holds values[c],
    # c = V is the "no value" group. Its "occupations" are the V + 1 subpopulations (each one the same
    # occupation entity), so the measures of group_bias and individual_bias apply as they are.
    cells: OccupationGroups
    pair_index: LongTensor  # [Q] each cell pair's index into the full groups' pairs: picks per-pair values (B_in)

    @property
    def n_values(self) -> int:
        return int(self.values.shape[0])

    @property
    def no_value(self) -> int:
        """Index of the "no value" subpopulation: the last one."""
        return self.n_values

    def value_index(self, value: int) -> int | None:
        """Subpopulation of the value with entity id ``value``; None if no person of the occupation holds it."""
        hits = (self.values == value).nonzero()
        return int(hits[0, 0]) if hits.numel() else None

    def membership(self, a: int, b: int) -> tuple[LongTensor, BoolTensor, BoolTensor]:
        """The occupation's persons in subpopulation ``a`` or ``b`` (indices of subpopulations), once each.

        -> (their pairs' indices into the full groups' pairs [n], in a [n], in b [n]); a person
        holding both values is True in both.
        """
        cell = self.cells.pair_occupation
        either = (cell == a) | (cell == b)
        pairs, person = torch.unique(self.pair_index[either], return_inverse=True)  # [n], [m] -> 0..n-1
        in_a = torch.zeros(pairs.shape[0], dtype=torch.bool, device=pairs.device)
        in_b = torch.zeros_like(in_a)
        in_a[person[cell[either] == a]] = True
        in_b[person[cell[either] == b]] = True
        return pairs, in_a, in_b


def attribute_cells(groups: OccupationGroups, *, person_values: LongTensor, occupation_index: int) -> AttributeCells:
    """The persons of occupation ``occupation_index`` split by the values they hold (module docstring).

    ``person_values`` [k, 2]: distinct (person, value) entity-id pairs of the attribute
    (:func:`attribute_pairs`). A person with several values is a pair of each value's subpopulation;
    one with none is a pair of the "no value" subpopulation (index V). Vectorised: a join of the
    occupation's pairs [n] with ``person_values`` by an [E] lookup, no loop over persons.
    """
    mine = (groups.pair_occupation == occupation_index).nonzero().squeeze(-1)  # [n] the occupation's pairs
    # A person holds an occupation once (the facts are distinct), so slot[person] is its pair among ``mine``.
    slot = torch.full_like(groups.gender, -1)  # [E]
    slot[groups.pair_person[mine]] = torch.arange(mine.shape[0], device=mine.device)
    held = slot[person_values[:, 0]]  # [k] slot of each (person, value) pair's person, -1 if not in the occupation
    kept = held >= 0
    values, value_of = torch.unique(person_values[kept, 1], return_inverse=True)  # [V], [k'] index into values
    has_value = torch.zeros(mine.shape[0], dtype=torch.bool, device=mine.device)
    has_value[held[kept]] = True
    without = (~has_value).nonzero().squeeze(-1)  # slots of the persons with no value
    n_cells = values.shape[0] + 1
    pair_index = mine[torch.cat([held[kept], without])]  # [Q]
    cell = torch.cat([value_of, torch.full_like(without, n_cells - 1)])  # [Q] subpopulation of each pair
    female = groups.pair_female[pair_index]
    occupation = groups.occupations[occupation_index]
    zeros = torch.zeros(n_cells, dtype=torch.long, device=mine.device)
    cells = replace(
        groups,
        occupations=occupation.repeat(n_cells),  # every subpopulation is of the same occupation
        pair_person=groups.pair_person[pair_index],
        pair_occupation=cell,
        pair_female=female,
        n_male=torch.bincount(cell[~female], minlength=n_cells),
        n_female=torch.bincount(cell[female], minlength=n_cells),
        # Persons of another or no gender value are not split by value: the occupation's counts are in ``groups``.
        n_other=zeros,
        n_unknown=zeros,
        labels=(groups.labels[occupation_index],) * n_cells,
        names=(groups.names[occupation_index],) * n_cells,
    )
    return AttributeCells(occupation_index=occupation_index, values=values, cells=cells, pair_index=pair_index)


def defined_cells(cells: OccupationGroups, *, min_count: int) -> BoolTensor:
    """[C] True where a subpopulation has at least ``min_count`` men and ``min_count`` women.

    Below that a mean over persons is noise (and undefined with none of a gender): its figures are NaN.
    """
    return (cells.n_male >= min_count) & (cells.n_female >= min_count)


def guarded(values: FloatTensor, defined: BoolTensor) -> FloatTensor:
    """``values`` [C] with NaN where ``defined`` [C] is False: a too-small subpopulation never gets a number."""
    return torch.where(defined, values, torch.full_like(values, float("nan")))


def subpopulation_means(
    values: FloatTensor, *, persons: LongTensor, person_values: LongTensor, subpopulations: LongTensor
) -> FloatTensor:
    """Mean of a per-person value over the persons holding each value, and over those holding none.

    Fisher's b_p within a subpopulation (METHODS §6): b_p^v = mean_{j in J_v} nabla_p(j), J_v the
    persons of ``persons`` holding value v, i.e. Fisher's mean over ALL persons, taken over the
    persons of the subpopulation (every occupation's, not only those with p).
    Shapes: values [J] (e.g. nabla_p(j) of one profession), persons [J] entity ids, person_values
    [k, 2], subpopulations [V] value ids -> [V + 1], the last one over the persons with no
    value; NaN where nobody is in the subpopulation. A person with several values counts in each.
    """
    # Row of each person in ``values`` and index of each value among ``subpopulations``, by [max id + 1] lookups.
    size = 1 + int(torch.cat([persons, person_values.reshape(-1), subpopulations, persons.new_zeros(1)]).max())
    row_of = torch.full((size,), -1, dtype=torch.long, device=persons.device)
    row_of[persons] = torch.arange(persons.shape[0], device=persons.device)
    cell_of = torch.full_like(row_of, -1)
    cell_of[subpopulations] = torch.arange(subpopulations.shape[0], device=persons.device)
    row, cell = row_of[person_values[:, 0]], cell_of[person_values[:, 1]]  # [k] each, -1: not among them
    counted = (row >= 0) & (cell >= 0)
    n_cells = subpopulations.shape[0] + 1
    sums = summed_by(values[row[counted]], cell[counted], n_cells)
    counts = torch.bincount(cell[counted], minlength=n_cells).to(values.dtype)
    has_value = torch.zeros(values.shape[0], dtype=torch.bool, device=values.device)
    has_value[row[row >= 0]] = True  # any value of the attribute, listed among ``subpopulations`` or not
    sums[-1], counts[-1] = values[~has_value].sum(), (~has_value).sum()
    return sums / counts  # 0/0 = NaN: an empty subpopulation


def _bias_difference(values: FloatTensor, female: BoolTensor, in_a: BoolTensor, in_b: BoolTensor) -> FloatTensor:
    """B_gr(a) - B_gr(b) from per-person values [n] and masks [..., n] -> [...]."""

    def mean(mask: BoolTensor) -> FloatTensor:
        weights = mask.to(values.dtype)
        return (weights @ values) / weights.sum(-1)

    def bias(member: BoolTensor) -> FloatTensor:
        return mean(member & female) - mean(member & ~female)

    return bias(in_a) - bias(in_b)


def group_bias_difference_test(
    values: FloatTensor,
    *,
    female: BoolTensor,
    in_a: BoolTensor,
    in_b: BoolTensor,
    n_permutations: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """B_gr(a) - B_gr(b) within one occupation, and its two-sided permutation p-value.

    T = (mean_{F∩a} psi - mean_{M∩a} psi) - (mean_{F∩b} psi - mean_{M∩b} psi)   (METHODS §1 per subpopulation)
    p = (1 + #{permutations with |T*| >= |T|}) / (1 + n_permutations)

    Shapes: values [n] psi(s, r_p, o) of each person of the occupation in a or b (once, however many
    values the person holds), female, in_a, in_b [n] (a person with both values is True in both).
    Null hypothesis: given gender, the value says nothing about psi. Each permutation therefore
    shuffles the persons' label sets (in_a, in_b) among persons of the SAME gender: gender is what
    B_gr compares, and every cell keeps its size, so no permutation leaves a cell empty. The +1
    counts the observed labelling as one of the permutations (Phipson & Smyth 2010): p is never 0.
    A permutation as extreme as T up to rounding counts as extreme (identical subpopulations: p = 1).
    The permutations come from a CPU generator seeded with ``seed``: the same input, the same p.
    Positive T: the embedding leans more male within a than within b. NaN (and p NaN) where a
    cell is empty.
    """
    x = values.to(torch.float64).cpu()
    female, in_a, in_b = female.cpu(), in_a.cpu(), in_b.cpu()
    observed = float(_bias_difference(x, female, in_a, in_b))
    if observed != observed:  # NaN: a cell is empty, nothing to test
        return observed, float("nan")
    n = x.shape[0]
    generator = torch.Generator(device="cpu").manual_seed(seed)
    u = torch.rand(n_permutations, n, generator=generator, dtype=torch.float64)  # [B, n]
    # Sort each row by (gender, u), exactly: stably by u, then stably by gender -> men first, each
    # gender in random order. ``base`` is the same order without shuffling (men, then women).
    by_u = torch.argsort(u, dim=1, stable=True)  # [B, n]
    order = torch.gather(by_u, 1, torch.argsort(female[by_u].long(), dim=1, stable=True))  # [B, n]
    base = torch.argsort(female.long(), stable=True)  # [n]
    # The person at base[i] takes the labels of person order[:, i], of the same gender.
    shuffled_a = torch.empty(n_permutations, n, dtype=torch.bool)
    shuffled_b = torch.empty_like(shuffled_a)
    shuffled_a[:, base], shuffled_b[:, base] = in_a[order], in_b[order]
    permuted = _bias_difference(x, female, shuffled_a, shuffled_b)  # [B]
    extreme = int((permuted.abs() >= abs(observed) * (1 - 1e-9)).sum())
    return observed, (1 + extreme) / (1 + n_permutations)
