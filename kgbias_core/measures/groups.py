"""Who holds each occupation, by gender, in the training triples (M_o and F_o of METHODS §1).

Everything downstream is vectorised over *pairs* (person, occupation): one row per training
triple (s, r_p, o) whose person has a binary gender. Persons whose gender value is neither the
schema's male nor female value, or who have several values, are kept out of the binary measures but counted
per occupation (``n_other``), never silently dropped; persons without a gender fact are counted
as ``n_unknown``.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field, replace

import torch

from kgbias_core.data.graph import Gender, display_name, gender_of, relation_facts
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import AMBIGUOUS_OCCUPATION, NOT_AN_OCCUPATION, UNKNOWN_ENTITY, MeasureError
from kgbias_core.types import BoolTensor, LongTensor


@dataclass(frozen=True)
class OccupationGroups:
    """Occupations and their (person, occupation) pairs with binary gender."""

    occupations: LongTensor  # [O] entity ids of occupations, sorted
    pair_person: LongTensor  # [P] entity id of the person
    pair_occupation: LongTensor  # [P] index into ``occupations``
    pair_female: BoolTensor  # [P] True for female, False for male
    n_male: LongTensor  # [O] |M_o|
    n_female: LongTensor  # [O] |F_o|
    n_other: LongTensor  # [O] persons with a non-binary or conflicting gender value
    n_unknown: LongTensor  # [O] persons without any gender fact
    degree: LongTensor  # [E] N_e: training triples in which e is head or tail
    gender: LongTensor  # [E] Gender code of every entity, from the one reader gender_of()
    occupation_relation: int  # r_p
    gender_relation: int  # r_g
    male: int  # entity id m
    female: int  # entity id f
    labels: tuple[str, ...]  # [O] entity label of each occupation, the key every page and command uses
    names: tuple[str, ...]  # [O] readable name of each occupation: users may type it instead of the label
    occupation_relation_label: str  # r_p's label, to name it in messages
    # The model's entity labels (shared, not copied): tell an unknown label from a non-occupation. Only the
    # error path looks, so a scan of the tuple beats building a label -> id map (3 s at 20M triples).
    entity_labels: Container[str] = field(repr=False, compare=False)

    @property
    def n_occupations(self) -> int:
        return int(self.occupations.shape[0])

    def index(self, label: str) -> int:
        """Position in ``occupations`` of an occupation given by label or name: the one label -> index.

        The entity label (a Freebase MID, a Wikidata Q-id, a slug) wins; otherwise a readable name
        matches case-insensitively (``actor`` finds Q33999 through the names file). A name shared
        by several occupations is refused with the candidates, never resolved at random.
        """
        if label in self.labels:
            return self.labels.index(label)
        wanted = label.strip().casefold()
        hits = [i for i, name in enumerate(self.names) if name.casefold() == wanted]
        if len(hits) == 1:
            return hits[0]
        if hits:
            candidates = ", ".join(f"{self.labels[i]} ({self.names[i]})" for i in hits)
            raise MeasureError(AMBIGUOUS_OCCUPATION.format(name=label, count=len(hits), candidates=candidates))
        if label not in self.entity_labels:
            raise MeasureError(UNKNOWN_ENTITY.format(entity=label))
        raise MeasureError(NOT_AN_OCCUPATION.format(entity=label, relation=self.occupation_relation_label))

    def without(self, dropped: BoolTensor) -> OccupationGroups:
        """The same groups without the persons marked in ``dropped`` [E] (e.g. Add's dummies, to
        measure B_gr over the original persons of a what-if). Only the binary pairs and their counts
        change; ``n_other``, ``n_unknown`` and the degrees are the full graph's."""
        keep = ~dropped[self.pair_person]
        occupation, female = self.pair_occupation[keep], self.pair_female[keep]
        n = self.n_occupations
        return replace(self, pair_person=self.pair_person[keep], pair_occupation=occupation, pair_female=female,
                       n_male=torch.bincount(occupation[~female], minlength=n),
                       n_female=torch.bincount(occupation[female], minlength=n))

    def members(self, occupation_index: int) -> tuple[LongTensor, LongTensor]:
        """(M_o, F_o) as entity-id tensors for the occupation at ``occupation_index``."""
        mine = self.pair_occupation == occupation_index
        return self.pair_person[mine & ~self.pair_female], self.pair_person[mine & self.pair_female]


def entity_degree(triples: LongTensor, n_entities: int) -> LongTensor:
    """N_e = number of triples with e as head plus number with e as tail. Shape [E]."""
    ones = torch.ones(triples.shape[0], dtype=torch.long, device=triples.device)
    degree = torch.zeros(n_entities, dtype=torch.long, device=triples.device)
    degree.index_add_(0, triples[:, 0], ones)
    degree.index_add_(0, triples[:, 2], ones)
    return degree


def occupation_groups(model: StoredModel) -> OccupationGroups:
    """Build the groups from the triples the model was trained on (METHODS §1 notation)."""
    triples = model.triples
    schema = model.schema
    r_p = model.relation_id(schema.occupation_relation)
    r_g = model.relation_id(schema.gender_relation)
    male, female = model.entity_id(schema.male), model.entity_id(schema.female)
    n = model.n_entities

    gender = gender_of(triples, gender_relation=r_g, male=male, female=female, n_entities=n)
    is_male, is_female = gender == Gender.MALE, gender == Gender.FEMALE
    has_any = gender != Gender.UNKNOWN

    facts = relation_facts(triples, r_p, n_entities=n)  # [k, 2] (person, occupation)
    occupations, occ_index = torch.unique(facts[:, 1], return_inverse=True)
    persons = facts[:, 0]
    binary = is_male[persons] | is_female[persons]
    n_occ = occupations.shape[0]

    def count(mask: BoolTensor) -> LongTensor:
        return torch.bincount(occ_index[mask], minlength=n_occ)

    return OccupationGroups(
        occupations=occupations,
        pair_person=persons[binary],
        pair_occupation=occ_index[binary],
        pair_female=is_female[persons[binary]],
        n_male=count(is_male[persons]),
        n_female=count(is_female[persons]),
        n_other=count(has_any[persons] & ~binary),
        n_unknown=count(~has_any[persons]),
        degree=entity_degree(triples, n),
        gender=gender,
        occupation_relation=r_p,
        gender_relation=r_g,
        male=male,
        female=female,
        labels=tuple(model.entity_labels[o] for o in occupations.tolist()),
        names=tuple(display_name(model.entity_names[o]) for o in occupations.tolist()),
        occupation_relation_label=schema.occupation_relation,
        entity_labels=model.entity_labels,
    )
