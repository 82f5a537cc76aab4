"""Readable tables over one stored model: every measure per occupation, per person, per triple.

:class:`ModelAnalysis` computes each tensor once per model (groups, influence context, per-pair
biases, per-occupation influence) and turns them into DataFrames with labels and names. It is the
object the CLI and the dashboard share; it holds no UI state.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from functools import cached_property
from typing import TypeVar

import pandas as pd
import torch

from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.errors import EMPTY_GROUP, NOT_AN_OCCUPATION, MeasureError
from kgbias_core.influence.closed_form import (
    InfluenceContext,
    hessian_diagonal,
    influence_context,
    predicted_change,
    triple_influence,
)
from kgbias_core.measures.fisher import fisher_bias, fisher_profession_table
from kgbias_core.measures.group_bias import group_bias, group_bias_interval, projection_bias
from kgbias_core.measures.groups import OccupationGroups, occupation_groups
from kgbias_core.measures.individual_bias import aggregate_individual, fisher_individual_bias, individual_bias
from kgbias_core.types import FloatTensor, LongTensor

T = TypeVar("T")

#: Below this many persons of either gender an occupation's figures carry a warning.
MIN_GROUP_SIZE = 5

MEASURE_COLUMNS = (
    "occupation", "name", "n_male", "n_female", "group_bias", "group_bias_low", "group_bias_high",
    "projection_bias", "individual_bias_vanilla", "individual_bias_weighted",
    "fisher_individual_vanilla", "fisher_individual_weighted", "fisher_bp",
)


class ModelAnalysis:
    """Lazily computed, memoised measures of one TransE model (thread-safe)."""

    def __init__(self, model: StoredModel, *, damping: float | None = None, n_resamples: int = 1000) -> None:
        self.model = model
        self.damping = model.damping if damping is None else damping
        self.n_resamples = n_resamples
        self._lock = threading.RLock()
        self._influence: dict[int, FloatTensor] = {}

    def _once(self, name: str, compute: Callable[[], T]) -> T:
        """Compute a cached property once even when threads race for it (a warm-up thread, a page)."""
        with self._lock:
            if name not in self.__dict__:
                self.__dict__[name] = compute()
            return self.__dict__[name]

    def warm_up(self) -> threading.Thread | None:
        """Precompute the influence context in a background thread, so the first influence query is fast."""
        if self.model.negatives is None:
            return None
        thread = threading.Thread(target=lambda: self.context, name="kgbias-warm-up", daemon=True)
        thread.start()
        return thread

    # --- shared tensors -------------------------------------------------------------------
    @cached_property
    def groups(self) -> OccupationGroups:
        return self._once("groups", lambda: occupation_groups(self.model))

    @cached_property
    def alpha(self) -> FloatTensor:
        return hessian_diagonal(
            degree=self.groups.degree, n_triples=self.model.triples.shape[0], damping=self.damping
        )

    @cached_property
    def context(self) -> InfluenceContext:
        return self._once("context", lambda: influence_context(self.model, damping=self.damping))

    @cached_property
    def pair_biases(self) -> tuple[FloatTensor, FloatTensor]:
        """(B_in, B'_in) per (person, occupation) pair, [P] each."""
        e, r = self.model.entity_embeddings, self.model.relation_embeddings
        return (
            individual_bias(entity_embeddings=e, relation_embeddings=r, groups=self.groups, alpha=self.alpha),
            fisher_individual_bias(entity_embeddings=e, relation_embeddings=r, groups=self.groups),
        )

    def occupation_index(self, label: str) -> int:
        """Index of the occupation with entity label ``label`` (error if it is none)."""
        entity = self.model.entity_id(label)
        hits = (self.groups.occupations == entity).nonzero()
        if hits.numel() == 0:
            raise MeasureError(
                NOT_AN_OCCUPATION.format(entity=label, relation=self.model.schema.occupation_relation)
            )
        return int(hits[0, 0])

    def name(self, entity: int) -> str:
        return self.model.entity_names[entity] or self.model.entity_labels[entity]

    # --- per occupation ---------------------------------------------------------------------
    @cached_property
    def measures(self) -> pd.DataFrame:
        """Every measure per occupation (columns :data:`MEASURE_COLUMNS` plus ``note``)."""
        return self._once("measures", self._measures)

    def _measures(self) -> pd.DataFrame:
        e, r, groups = self.model.entity_embeddings, self.model.relation_embeddings, self.groups
        b_gr = group_bias(entity_embeddings=e, relation_embeddings=r, groups=groups)
        low, high = group_bias_interval(
            entity_embeddings=e, relation_embeddings=r, groups=groups, n_resamples=self.n_resamples
        )
        b_in, b_fisher = self.pair_biases
        in_vanilla, in_weighted = aggregate_individual(b_in, groups)
        fi_vanilla, fi_weighted = aggregate_individual(b_fisher, groups)
        occupations = groups.occupations.tolist()
        frame = pd.DataFrame(
            {
                "occupation": [self.model.entity_labels[o] for o in occupations],
                "name": [self.name(o) for o in occupations],
                "n_male": groups.n_male.tolist(),
                "n_female": groups.n_female.tolist(),
                "group_bias": b_gr.tolist(),
                "group_bias_low": low.tolist(),
                "group_bias_high": high.tolist(),
                "projection_bias": projection_bias(entity_embeddings=e, groups=groups).tolist(),
                "individual_bias_vanilla": in_vanilla.tolist(),
                "individual_bias_weighted": in_weighted.tolist(),
                "fisher_individual_vanilla": fi_vanilla.tolist(),
                "fisher_individual_weighted": fi_weighted.tolist(),
                "fisher_bp": self.fisher_gender_bias().tolist(),
            }
        )
        frame["n_other_gender"] = groups.n_other.tolist()
        frame["n_unknown_gender"] = groups.n_unknown.tolist()
        frame["note"] = [
            _group_note(m, f) for m, f in zip(frame["n_male"], frame["n_female"], strict=True)
        ]
        return frame

    def fisher_gender_bias(self) -> FloatTensor:
        """Fisher's b_p (METHODS §6) with a = male, b = female, over all persons with binary gender. [O]."""
        groups = self.groups
        persons = torch.unique(self._binary_persons())
        return fisher_bias(
            pykeen_model(self.model),
            persons=persons,
            attribute_relation=groups.gender_relation,
            value_a=groups.male,
            value_b=groups.female,
            occupation_relation=groups.occupation_relation,
            professions=groups.occupations,
        ).cpu()

    def _binary_persons(self) -> LongTensor:
        triples, groups = self.model.triples, self.groups
        facts = triples[(triples[:, 1] == groups.gender_relation)]
        return facts[(facts[:, 2] == groups.male) | (facts[:, 2] == groups.female), 0]

    # --- per person ---------------------------------------------------------------------------
    def individuals(self, occupation: str) -> pd.DataFrame:
        """Persons of one occupation with B_in and B'_in (METHODS §5)."""
        index = self.occupation_index(occupation)
        groups = self.groups
        mine = (groups.pair_occupation == index).nonzero().squeeze(-1)
        persons = groups.pair_person[mine]
        b_in, b_fisher = self.pair_biases
        return pd.DataFrame(
            {
                "person": [self.model.entity_labels[p] for p in persons.tolist()],
                "name": [self.name(p) for p in persons.tolist()],
                "gender": ["female" if f else "male" for f in groups.pair_female[mine].tolist()],
                "degree": groups.degree[persons].tolist(),
                "individual_bias": b_in[mine].tolist(),
                "fisher_individual": b_fisher[mine].tolist(),
            }
        )

    # --- per training triple ------------------------------------------------------------------
    def influence(self, occupation: str) -> FloatTensor:
        """delta_z B_gr of every training triple for one occupation (METHODS §4). [|G|]."""
        index = self.occupation_index(occupation)
        with self._lock:
            if index not in self._influence:
                self._check_both_genders(index, occupation)
                self._influence[index] = triple_influence(self.context, index)
            return self._influence[index]

    def _check_both_genders(self, index: int, occupation: str) -> None:
        n_male, n_female = int(self.groups.n_male[index]), int(self.groups.n_female[index])
        if n_male == 0 or n_female == 0:
            raise MeasureError(
                EMPTY_GROUP.format(occupation=occupation, n_male=n_male, n_female=n_female, measure="B_gr")
            )

    def triples_frame(self, indices: LongTensor) -> pd.DataFrame:
        """Readable rows for training triples by index: labels, names, relation, person's gender/degree."""
        triples = self.model.triples[indices]
        labels, relations = self.model.entity_labels, self.model.relation_labels
        heads, rels, tails = (triples[:, i].tolist() for i in range(3))
        gender = self._gender_of()
        return pd.DataFrame(
            {
                "triple": indices.tolist(),
                "head": [labels[h] for h in heads],
                "relation": [relations[r] for r in rels],
                "tail": [labels[t] for t in tails],
                "head_name": [self.name(h) for h in heads],
                "tail_name": [self.name(t) for t in tails],
                "person_gender": [gender.get(h, gender.get(t, "")) for h, t in zip(heads, tails, strict=True)],
                "person_degree": [
                    int(self.groups.degree[h if h in gender else t]) for h, t in zip(heads, tails, strict=True)
                ],
            }
        )

    def _gender_of(self) -> dict[int, str]:
        with self._lock:
            if not hasattr(self, "_gender_cache"):
                triples, groups = self.model.triples, self.groups
                facts = triples[triples[:, 1] == groups.gender_relation]
                self._gender_cache = {
                    h: ("male" if t == groups.male else "female" if t == groups.female else "other")
                    for h, t in zip(facts[:, 0].tolist(), facts[:, 2].tolist(), strict=True)
                }
            return self._gender_cache

    def influence_table(self, occupation: str, *, top: int = 20, direction: str = "both") -> pd.DataFrame:
        """The ``top`` training triples by delta_z B_gr with names (METHODS §4).

        ``direction``: "both" ranks by |delta_z|; "raises" takes the most positive (removing them
        makes the embedding more male-leaning), "lowers" the most negative.
        """
        influence = self.influence(occupation)
        signed = {"both": influence.abs(), "raises": influence, "lowers": -influence}[direction]
        k = min(top, int((signed > 0).sum()))
        indices = torch.topk(signed, k).indices
        frame = self.triples_frame(indices)
        frame["influence"] = influence[indices].tolist()
        return frame

    def predicted_removal(self, occupation: str, removed: LongTensor) -> float:
        """Predicted change of B_gr when ``removed`` (triple indices) are dropped, scaled if calibrated."""
        scale = self.model.influence_scale or 1.0
        return predicted_change(self.influence(occupation), removed, scale=scale)

    # --- Fisher for any attribute ----------------------------------------------------------
    def fisher_table(
        self, *, relation: str, value_a: str, value_b: str | None = None, min_count: int = 0
    ) -> pd.DataFrame:
        """Fisher's b_p per profession for attribute ``relation`` with values a vs b (or vs rest)."""
        model, groups = self.model, self.groups
        attribute = model.schema.attribute(relation)
        r_s = model.relation_id(attribute.relation)
        a = model.entity_id(value_a)
        b = None if value_b is None else model.entity_id(value_b)
        triples = model.triples
        facts = triples[triples[:, 1] == r_s]
        person_col, value_col = (0, 2) if attribute.person_is_head else (2, 0)
        values = torch.unique(facts[:, value_col])
        other = values[(values != a)] if b is None else None
        persons = torch.unique(facts[:, person_col])
        occ_facts = triples[triples[:, 1] == groups.occupation_relation]
        table = fisher_profession_table(
            pykeen_model(model),
            persons=persons,
            attribute_relation=r_s,
            value_a=a,
            value_b=b,
            other_values=other,
            occupation_relation=groups.occupation_relation,
            professions=groups.occupations,
            person_professions=occ_facts[:, [0, 2]].cpu().numpy(),
            person_values=facts[:, [person_col, value_col]].cpu().numpy(),
            min_count=min_count,
            attribute_person_is_head=attribute.person_is_head,
        )
        table.insert(1, "label", [model.entity_labels[p] for p in table["profession"]])
        table.insert(2, "name", [self.name(p) for p in table["profession"]])
        return table

    # --- helpers for the dashboard -------------------------------------------------------------
    def summary(self) -> dict[str, int]:
        """The graph at a glance: triples, entities, relations, persons by gender, occupations."""
        triples, groups = self.model.triples, self.groups
        genders = pd.Series(self._gender_of(), dtype=object).value_counts()
        occupation_facts = triples[triples[:, 1] == groups.occupation_relation]
        return {
            "n_triples": int(triples.shape[0]),
            "n_entities": self.model.n_entities,
            "n_relations": self.model.n_relations,
            "n_persons": int(genders.sum()),
            "n_male": int(genders.get("male", 0)),
            "n_female": int(genders.get("female", 0)),
            "n_other_gender": int(genders.get("other", 0)),
            "n_occupations": groups.n_occupations,
            "n_persons_with_occupation": int(torch.unique(occupation_facts[:, 0]).numel()),
        }

    def attribute_values(self, relation: str) -> pd.DataFrame:
        """Values of an attribute relation (schema name or relation label) with their person counts.

        Columns: ``label``, ``name``, ``n_persons`` (distinct persons holding the value), most common first.
        """
        attribute = self.model.schema.attribute(relation)
        r_s = self.model.relation_id(attribute.relation)
        facts = self.model.triples[self.model.triples[:, 1] == r_s]
        person_col, value_col = (0, 2) if attribute.person_is_head else (2, 0)
        pairs = torch.unique(facts[:, [person_col, value_col]], dim=0)  # [k, 2] distinct (person, value)
        values, counts = torch.unique(pairs[:, 1], return_counts=True)
        frame = pd.DataFrame(
            {
                "label": [self.model.entity_labels[v] for v in values.tolist()],
                "name": [self.name(v) for v in values.tolist()],
                "n_persons": counts.tolist(),
            }
        )
        return frame.sort_values(["n_persons", "label"], ascending=[False, True]).reset_index(drop=True)

    def influence_extremes(self, occupation: str, *, k: int = 20) -> pd.DataFrame:
        """The ``k`` triples with the largest positive and the ``k`` with the most negative delta_z B_gr.

        Column ``direction``: "raises" (removing the triple would raise B_gr, i.e. make the
        occupation more male-leaning) or "lowers"; zero influences are never listed.
        """
        influence = self.influence(occupation)
        parts = []
        for direction, signed in (("raises", influence), ("lowers", -influence)):
            top = torch.topk(signed, min(k, int((signed > 0).sum()))).indices
            frame = self.triples_frame(top)
            frame["influence"] = influence[top].tolist()
            frame.insert(0, "direction", direction)
            parts.append(frame)
        return pd.concat(parts, ignore_index=True)

    def occupation_relation_share(self, occupation: str, *, fraction: float = 0.01) -> dict[str, object]:
        """Share of occupation-like relations among the top ``fraction`` of triples by |delta_z B_gr|.

        Du et al. report ~74% of occupation and inverse-occupation triples in the top 1%. Counted
        here: the schema's occupation relation and every relation whose label has the word
        "profession" or "occupation". Keys: ``share``, ``n_top``, ``n_occupation``, ``relations``.
        """
        influence = self.influence(occupation)
        n_top = min(max(1, math.ceil(fraction * influence.shape[0])), int((influence != 0).sum()))
        top = torch.topk(influence.abs(), n_top).indices
        labels = self.model.relation_labels
        occupation_like = [  # whole words only: "professional_sports_team" is no occupation relation
            i for i, label in enumerate(labels)
            if label == self.model.schema.occupation_relation
            or {"profession", "occupation"} & set(re.split(r"[^a-z]+", label.lower()))
        ]
        hits = int(torch.isin(self.model.triples[top, 1], torch.tensor(occupation_like)).sum())
        return {
            "share": hits / n_top if n_top else math.nan,
            "n_top": n_top,
            "n_occupation": hits,
            "relations": tuple(str(labels[i]) for i in occupation_like),
        }


def _group_note(n_male: int, n_female: int) -> str:
    if n_male == 0 and n_female == 0:
        return "no persons with binary gender: no bias measure defined"
    if n_female == 0:
        return "no women: B_gr and weighted measures undefined"
    if n_male == 0:
        return "no men: B_gr and weighted measures undefined"
    if min(n_male, n_female) < MIN_GROUP_SIZE:
        return f"small group (fewer than {MIN_GROUP_SIZE} of one gender): figures are noisy"
    return ""

