"""Fisher et al.'s bias score b_p for any scoring model and any sensitive attribute (METHODS §6).

Fisher, Mittal, Palfrey & Christodoulopoulos (2020), "Measuring social bias in knowledge graph
embeddings", §3.2, Eq. (1) and the two equations after it. One gradient step moves each person's
embedding towards attribute value a (away from b); b_p is the mean change of the score of
"person has profession p" over all persons. Works through autograd on the model's own interaction,
so TransE, DistMult, ComplEx and RotatE (complex embeddings) all take the same path.
"""

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
import torch
from pykeen.models import ERModel

from kgbias_core.errors import (
    FISHER_BAD_SIDE,
    FISHER_BAD_STEP,
    FISHER_EMPTY_IDS,
    FISHER_NO_OTHER_VALUE,
    FISHER_NOT_SINGLE_REPRESENTATION,
    FISHER_SAME_VALUE,
    FISHER_VALUE_IS_OTHER,
    FISHER_VALUE_NOT_HELD,
    UNKNOWN_ENTITY,
    UNKNOWN_RELATION,
    MeasureError,
)
from kgbias_core.types import FloatTensor, LongTensor

__all__ = [
    "associated_sides",
    "attribute_margin",
    "fisher_bias",
    "fisher_gradient",
    "fisher_person_changes",
    "fisher_profession_table",
    "most_moved",
    "profession_counts",
    "top_associated",
]


def _check_single_representation(model: ERModel) -> None:
    # The perturbation e'_j needs one tensor per entity; models with several entity or relation
    # representations (e.g. TransD's projections) have no single "e_j" to move.
    n_entity = len(model.entity_representations)
    n_relation = len(model.relation_representations)
    if n_entity != 1 or n_relation != 1:
        raise MeasureError(
            FISHER_NOT_SINGLE_REPRESENTATION.format(
                model=type(model).__name__, n_entity=n_entity, n_relation=n_relation
            )
        )


def _check_ids(model: ERModel, *, entities: Sequence[int], relations: Sequence[int]) -> None:
    for entity in entities:
        if not 0 <= int(entity) < model.num_entities:
            raise MeasureError(UNKNOWN_ENTITY.format(entity=int(entity)))
    for relation in relations:
        if not 0 <= int(relation) < model.num_relations:
            raise MeasureError(UNKNOWN_RELATION.format(relation=int(relation)))


def _as_ids(ids: LongTensor | Sequence[int] | np.ndarray, *, device: torch.device) -> LongTensor:
    if isinstance(ids, torch.Tensor):
        return ids.to(device=device, dtype=torch.long).reshape(-1)
    return torch.as_tensor(np.asarray(ids, dtype=np.int64), device=device).reshape(-1)


def _id_list(ids: LongTensor | Sequence[int] | np.ndarray | None) -> list[int]:
    if ids is None:
        return []
    return _as_ids(ids, device=torch.device("cpu")).tolist()


#: The most elements ([persons, values or professions, d]) one chunk may materialise (4 MiB of
#: float32). Measured on FB15k-237 (2 threads, a busy 2-core CPU): Keidar's TLB of one nationality
#: value (one-vs-rest over 99 others, 4,123 persons) took 2.8 s with 2^18 and 0.29 s with 2^20; the
#: gender b_p of 149 professions 2.8 s with 2^18 and 2.1 s with 2^20. Fewer, larger autograd calls win.
CHUNK_ELEMENTS = 1 << 20


def _chunk(n_per_person: int, dim: int, chunk_elements: int) -> int:
    """Persons per chunk when each person brings ``n_per_person`` vectors of size ``dim``."""
    return max(1, chunk_elements // max(1, n_per_person * dim))


def _entities(model: ERModel, ids: LongTensor) -> torch.Tensor:
    """Entity representations, shape [n, d] (complex for ComplEx / RotatE)."""
    return model.entity_representations[0](indices=ids)


def _relation(model: ERModel, relation: int) -> torch.Tensor:
    """One relation representation, shape [1, d]."""
    ids = torch.tensor([relation], dtype=torch.long, device=model.device)
    return model.relation_representations[0](indices=ids)


def attribute_margin(
    model: ERModel,
    *,
    person_embeddings: torch.Tensor,
    attribute_relation: int,
    value_a: int,
    value_b: int | None,
    other_values: LongTensor | None,
    attribute_person_is_head: bool = True,
) -> FloatTensor:
    """Margin mm(e_j) of attribute value a over b for every person (Fisher §3.2, Eq. 1).

    mm(e_j) = g(e_j, r_s, e_a) - g(e_j, r_s, e_b), or one-vs-rest
    mm(e_j) = g(e_j, r_s, e_a) - mean_{v in other_values} g(e_j, r_s, e_v).
    With ``attribute_person_is_head=False`` (relations stored value -> person, e.g.
    /people/ethnicity/people) the person is the tail: g(e_a, r_s, e_j).

    Shapes: person_embeddings [J, d] (real or complex); returns [J]. Positive = the model finds
    value a more plausible than b for that person. Differentiable w.r.t. person_embeddings.
    """
    device = person_embeddings.device
    relation = _relation(model, attribute_relation)  # [1, d]
    if value_b is not None:
        rest = _entities(model, _as_ids([value_b], device=device))  # [1, d]
    else:
        rest = _entities(model, _as_ids(other_values, device=device))  # [V, d]
    value = _entities(model, _as_ids([value_a], device=device))  # [1, d]
    persons = person_embeddings.unsqueeze(1)  # [J, 1, d]
    if attribute_person_is_head:
        score_a = model.interaction(h=persons, r=relation.unsqueeze(0), t=value.unsqueeze(0))
        score_rest = model.interaction(h=persons, r=relation.unsqueeze(0), t=rest.unsqueeze(0))
    else:
        score_a = model.interaction(h=value.unsqueeze(0), r=relation.unsqueeze(0), t=persons)
        score_rest = model.interaction(h=rest.unsqueeze(0), r=relation.unsqueeze(0), t=persons)
    # score_a: [J, 1]; score_rest: [J, V] (V = 1 for a pair a/b)
    return score_a[:, 0] - score_rest.mean(dim=1)


def _validate(
    model: ERModel,
    *,
    persons: LongTensor,
    attribute_relation: int,
    value_a: int,
    value_b: int | None,
    other_values: LongTensor | None,
    occupation_relation: int | None,
    professions: LongTensor | None,
    step: float,
) -> None:
    _check_single_representation(model)
    if not step > 0:
        raise MeasureError(FISHER_BAD_STEP.format(step=step))
    if persons.numel() == 0:
        raise MeasureError(FISHER_EMPTY_IDS.format(what="persons"))
    if professions is not None and professions.numel() == 0:
        raise MeasureError(FISHER_EMPTY_IDS.format(what="professions"))
    others = _id_list(other_values)
    if value_b is None and not others:
        raise MeasureError(FISHER_NO_OTHER_VALUE.format(value=value_a, relation=attribute_relation))
    if value_b is None and int(value_a) in others:
        raise MeasureError(FISHER_VALUE_IS_OTHER.format(value=value_a, relation=attribute_relation))
    entities = [int(value_a)] + ([int(value_b)] if value_b is not None else []) + others
    entities += [int(persons.min()), int(persons.max())]
    if professions is not None:
        entities += [int(professions.min()), int(professions.max())]
    relations = [attribute_relation] + ([occupation_relation] if occupation_relation is not None else [])
    _check_ids(model, entities=entities, relations=relations)


def fisher_gradient(
    model: ERModel,
    *,
    persons: LongTensor,
    attribute_relation: int,
    value_a: int,
    value_b: int | None = None,
    other_values: LongTensor | None = None,
    attribute_person_is_head: bool = True,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each person's embedding e_j and the gradient d mm / d e_j (Fisher §3.2, METHODS §6).

    One autograd call per chunk of persons (not one per person): persons are independent, so the
    gradient of sum_j mm(e_j) w.r.t. e_j is the gradient of mm(e_j) alone. Chunks bound the
    one-vs-rest intermediate [b, V, d] to ``chunk_elements``. For complex embeddings the
    gradient is PyTorch's, which equals the gradient w.r.t. the real view (Re, Im) — i.e. the
    step a real optimiser would take on the stored parameters.

    Shapes: persons [J]; returns (e_j [J, d], grad [J, d]), both detached, complex for
    ComplEx / RotatE. Moving along +grad makes a person "more a" (less b).
    """
    persons = _as_ids(persons, device=model.device)
    _validate(
        model,
        persons=persons,
        attribute_relation=attribute_relation,
        value_a=value_a,
        value_b=value_b,
        other_values=other_values,
        occupation_relation=None,
        professions=None,
        step=1.0,
    )
    with torch.no_grad():
        embeddings = _entities(model, persons).detach()  # [J, d]
    n_values = 1 if value_b is not None else len(_id_list(other_values))
    size = _chunk(n_values, embeddings.shape[-1], chunk_elements)
    gradients = []
    for start in range(0, persons.numel(), size):
        with torch.enable_grad():
            # Detached leaf: the model's parameters get no .grad and are never changed.
            chunk = embeddings[start : start + size].clone().requires_grad_(True)  # [b, d]
            margin = attribute_margin(
                model,
                person_embeddings=chunk,
                attribute_relation=attribute_relation,
                value_a=value_a,
                value_b=value_b,
                other_values=other_values,
                attribute_person_is_head=attribute_person_is_head,
            )  # [b]
            (gradient,) = torch.autograd.grad(margin.sum(), chunk)
        gradients.append(gradient.detach())
    return embeddings, torch.cat(gradients, dim=0)


def fisher_person_changes(
    model: ERModel,
    *,
    persons: LongTensor,
    attribute_relation: int,
    value_a: int,
    value_b: int | None,
    other_values: LongTensor | None = None,
    occupation_relation: int,
    professions: LongTensor,
    step: float = 0.01,
    attribute_person_is_head: bool = True,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> FloatTensor:
    """nabla_p(j) of :func:`fisher_bias`: each person's change of each profession's score. [J, P], float64.

    b_p is the mean of a column; the bootstrap interval of b_p resamples the rows
    (:func:`~kgbias_core.measures.bootstrap.mean_interval`).
    """
    persons = _as_ids(persons, device=model.device)
    professions = _as_ids(professions, device=model.device)
    _validate(
        model,
        persons=persons,
        attribute_relation=attribute_relation,
        value_a=value_a,
        value_b=value_b,
        other_values=other_values,
        occupation_relation=occupation_relation,
        professions=professions,
        step=step,
    )
    embeddings, gradient = fisher_gradient(
        model,
        persons=persons,
        attribute_relation=attribute_relation,
        value_a=value_a,
        value_b=value_b,
        other_values=other_values,
        attribute_person_is_head=attribute_person_is_head,
        chunk_elements=chunk_elements,
    )
    moved = embeddings + step * gradient  # [J, d]
    size = _chunk(professions.numel(), embeddings.shape[-1], chunk_elements)
    changes = []
    with torch.no_grad():
        relation = _relation(model, occupation_relation).unsqueeze(0)  # [1, 1, d]
        targets = _entities(model, professions).unsqueeze(0)  # [1, P, d]
        for start in range(0, persons.numel(), size):
            chunk = slice(start, start + size)
            before = model.interaction(h=embeddings[chunk].unsqueeze(1), r=relation, t=targets)
            after = model.interaction(h=moved[chunk].unsqueeze(1), r=relation, t=targets)
            # float64: nabla_p is a small difference of large scores, summed over many persons
            changes.append((after - before).to(torch.float64))  # [b, P]
    return torch.cat(changes, dim=0)


def fisher_bias(
    model: ERModel,
    *,
    persons: LongTensor,
    attribute_relation: int,
    value_a: int,
    value_b: int | None,
    other_values: LongTensor | None = None,
    occupation_relation: int,
    professions: LongTensor,
    step: float = 0.01,
    attribute_person_is_head: bool = True,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> FloatTensor:
    """Fisher et al.'s bias score b_p of every profession (Fisher §3.2; METHODS §6).

    mm(e_j)     = g(e_j, r_s, e_a) - g(e_j, r_s, e_b)
                  (one-vs-rest, value_b=None: minus the mean of g(e_j, r_s, e_v) over other_values)
    e'_j        = e_j + step * d mm / d e_j
    nabla_p(j)  = g(e'_j, r_p, e_p) - g(e_j, r_p, e_p)
    b_p         = (1 / J) * sum_j nabla_p(j)        (mean over ALL persons given, not only
                                                      those having p or a value)

    Shapes: persons [J], professions [P], other_values [V]; returns [P] (float, on the model's
    device). Sign: positive = making persons "more a" raises the plausibility of profession p,
    i.e. p is a-associated; with a = male this is the kgbias convention (positive = male-leaning).
    ``attribute_person_is_head=False`` for relations stored as value -> person. The person is
    always the head of ``occupation_relation``. Scores are computed in chunks of persons whose
    broadcast [b, P, d] holds at most ``chunk_elements`` (:data:`CHUNK_ELEMENTS`: why that size).
    """
    changes = fisher_person_changes(
        model, persons=persons, attribute_relation=attribute_relation, value_a=value_a, value_b=value_b,
        other_values=other_values, occupation_relation=occupation_relation, professions=professions, step=step,
        attribute_person_is_head=attribute_person_is_head, chunk_elements=chunk_elements,
    )
    return changes.mean(dim=0).to(torch.float32)  # [P]


def profession_counts(
    *,
    professions: LongTensor | np.ndarray,
    person_professions: np.ndarray,
    person_values: np.ndarray,
    value_a: int,
    value_b: int | None,
    other_values: np.ndarray | None = None,
) -> pd.DataFrame:
    """Number of distinct a-persons and b-persons having each profession.

    person_professions: [n, 2] (person, profession) pairs; person_values: [m, 2] (person, value)
    pairs of the attribute relation. A b-person has value_b, or (one-vs-rest, value_b=None) any
    value in other_values. A person with both a and b counts on both sides.
    Returns columns ``profession``, ``n_a``, ``n_b`` in the order of ``professions``.
    """
    professions = np.asarray(professions, dtype=np.int64).reshape(-1)
    person_professions = np.asarray(person_professions, dtype=np.int64).reshape(-1, 2)
    person_values = np.asarray(person_values, dtype=np.int64).reshape(-1, 2)
    b_values = (
        np.asarray([value_b], dtype=np.int64)
        if value_b is not None
        else np.asarray(other_values if other_values is not None else [], dtype=np.int64)
    )
    a_persons = np.unique(person_values[person_values[:, 1] == value_a, 0])
    b_persons = np.unique(person_values[np.isin(person_values[:, 1], b_values), 0])
    pairs = np.unique(person_professions, axis=0)  # a person with p twice counts once

    def count(group: np.ndarray) -> np.ndarray:
        held = pairs[np.isin(pairs[:, 0], group), 1]
        ids, counts = np.unique(held, return_counts=True)
        lookup = dict(zip(ids.tolist(), counts.tolist(), strict=True))
        return np.asarray([lookup.get(int(p), 0) for p in professions], dtype=np.int64)

    return pd.DataFrame({"profession": professions, "n_a": count(a_persons), "n_b": count(b_persons)})


def fisher_profession_table(
    model: ERModel,
    *,
    persons: LongTensor,
    attribute_relation: int,
    value_a: int,
    value_b: int | None,
    other_values: LongTensor | None = None,
    occupation_relation: int,
    professions: LongTensor,
    person_professions: np.ndarray,
    person_values: np.ndarray,
    min_count: int = 20,
    step: float = 0.01,
    attribute_person_is_head: bool = True,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> pd.DataFrame:
    """Fisher's b_p for every profession with a- and b-person counts, ranked (METHODS §6).

    b_p as in :func:`fisher_bias` (mean over ALL persons); n_a, n_b as in
    :func:`profession_counts`. Professions with n_a + n_b < ``min_count`` are DROPPED from the
    table (Fisher §3.1 fn. 4 uses 20: b_p of rare professions is noise); b_p of the kept ones is
    unaffected by the filter. Columns: ``profession`` (id), ``bias`` (b_p), ``n_a``, ``n_b``;
    sorted by ``bias`` descending (most a-associated first; positive = a-leaning).
    A value a or b that no person holds, or b equal to a, is a :class:`MeasureError`: the step
    would still move every score (or none), and b_p would read as a bias that is not there.
    """
    if value_b is not None and int(value_b) == int(value_a):
        raise MeasureError(FISHER_SAME_VALUE.format(value=int(value_a)))
    held = set(np.asarray(person_values, dtype=np.int64).reshape(-1, 2)[:, 1].tolist())
    for side, value in (("a", value_a), ("b", value_b)):
        if value is not None and int(value) not in held:
            raise MeasureError(FISHER_VALUE_NOT_HELD.format(side=side))
    bias = fisher_bias(
        model,
        persons=persons,
        attribute_relation=attribute_relation,
        value_a=value_a,
        value_b=value_b,
        other_values=other_values,
        occupation_relation=occupation_relation,
        professions=professions,
        step=step,
        attribute_person_is_head=attribute_person_is_head,
        chunk_elements=chunk_elements,
    )
    table = profession_counts(
        professions=_as_ids(professions, device=torch.device("cpu")).numpy(),
        person_professions=person_professions,
        person_values=person_values,
        value_a=value_a,
        value_b=value_b,
        other_values=np.asarray(_id_list(other_values), dtype=np.int64),
    )
    table.insert(1, "bias", bias.detach().cpu().numpy().astype(np.float64))
    table = table[table["n_a"] + table["n_b"] >= min_count]
    return table.sort_values(["bias", "profession"], ascending=[False, True]).reset_index(drop=True)


def top_associated(table: pd.DataFrame, *, k: int, toward: Literal["a", "b"]) -> pd.DataFrame:
    """The k professions of a :func:`fisher_profession_table` most associated with a or with b.

    "a": the k largest positive b_p, largest first; "b": the k most negative b_p, most negative
    first. Professions with b_p on the other side of 0 are never listed, so fewer than k rows may
    come back.
    """
    if toward == "a":
        side = table[table["bias"] > 0].sort_values("bias", ascending=False)
    elif toward == "b":
        side = table[table["bias"] < 0].sort_values("bias", ascending=True)
    else:
        raise MeasureError(FISHER_BAD_SIDE.format(toward=toward))
    return side.head(k).reset_index(drop=True)


def associated_sides(table: pd.DataFrame, *, k: int) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """The k most a- and the k most b-associated professions of a :func:`fisher_profession_table`
    (Fisher's Tables 1-4), and which side, "a" or "b", is a fallback (None: neither).

    When no profession has b_p < 0 (a shared offset: moving towards a raises every profession), the
    b side is the k least a-associated professions not already on the a side, least first, and the
    fallback is "b"; symmetrically "a" when no b_p is > 0. The two sides never share a profession,
    so a chart of both draws exactly their rows.
    """
    top_a, top_b = top_associated(table, k=k, toward="a"), top_associated(table, k=k, toward="b")
    if table.empty or not (top_a.empty or top_b.empty):
        return top_a, top_b, None
    if top_b.empty:
        rest = table[~table["profession"].isin(top_a["profession"])]
        return top_a, rest.sort_values("bias").head(k).reset_index(drop=True), "b"
    rest = table[~table["profession"].isin(top_b["profession"])]
    return rest.sort_values("bias", ascending=False).head(k).reset_index(drop=True), top_b, "a"


def most_moved(table: pd.DataFrame, *, k: int) -> pd.DataFrame:
    """The k professions of a :func:`fisher_profession_table` with the largest |b_p|, largest first
    (the most biased professions of one attribute value, Keidar et al. Table 3)."""
    return table.reindex(table["bias"].abs().sort_values(ascending=False).index).head(k).reset_index(drop=True)
